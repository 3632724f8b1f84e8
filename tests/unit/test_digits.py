"""A printed duration against the records of the same fragment (capture/evidence/digits.py)."""

from capture.evidence.digits import disagreements


def rec(value, unit="s"):
    return {"name": "x", "value": value, "unit": unit, "tags": {}}


def test_a_duration_cut_to_whole_nanoseconds_and_printed_with_a_false_decimal_disagrees():
    got = disagreements("candle cpu 4x4: clone 18.0ns/op  t() 143.4ns/op", [rec(1.7863e-08), rec(1.43383e-07)])
    assert [(d.line, d.printed) for d in got] == [(1, "18.0ns")]


def test_durations_that_round_to_a_record_at_their_digits_agree_in_any_unit():
    text = "first 3.210ms\nlater 812.400µs median\nwhole 1.94 s\n77.5ns/op"
    assert disagreements(text, [rec(3.2104e-3), rec(812.4003e-6), rec(1.9449), rec(77.46e-9)]) == []


def test_a_duration_with_no_record_near_it_says_nothing_and_other_units_are_not_timings():
    # a total the program does not record; a size record in bytes whose number happens to be close
    assert disagreements("total 41.0ms, 12 s budget", [rec(3.0e-3), rec(41.2, "B")]) == []
