"""Yes, no or cannot tell: the verdict rule (capture/evidence/verdict.py) and the query language that applies it."""

import itertools
import math
import random

import pytest

from capture.evidence import alike, drift, verdict
from capture.machines import fingerprint
from capture.evidence.query import Evaluator, MissingData, QueryError, parse_refs


def ev(records):
    def lookup(ref):
        recs = [r for r in records if r["name"] == ref.name and all(r["tags"].get(k) == v for k, v in ref.tags)]
        if not recs:
            raise MissingData(ref.text, "none")
        return recs

    return Evaluator(lookup)


def rec(name, value, unit="s", **tags):
    return {"name": name, "value": value, "unit": unit, "tags": {k: str(v) for k, v in tags.items()}}


SQRT2 = math.log(math.sqrt(2))  # the default drift: a factor 2 between two timings, as the old fixed rule


@pytest.mark.parametrize("left, right, want", [
    ((1.0, 1.1), (3.0, 3.5), True),     # apart by more than sqrt(2) * sqrt(2): yes
    ((1.0, 1.6), (3.0, 3.5), None),     # 1.6 * 2 > 3.0: the widened spreads overlap
    ((7.5, 8.0), (3.0, 3.5), False),    # 7.5 > 2 * 3.5: clearly not below
    ((5.0, 6.0), (3.0, 3.5), None),
])
def test_two_timings_need_their_widened_spreads_apart(left, right, want):
    assert verdict.decide("lt", left, right, SQRT2, SQRT2) is want
    flipped = {True: False, False: True, None: None}[want]
    assert verdict.decide("gt", left, right, SQRT2, SQRT2) is flipped


def test_each_side_is_widened_by_its_own_drift():
    steady, noisy = math.log(1.1), math.log(2.0)
    assert verdict.decide("lt", (1.0, 1.0), (1.3, 1.3), steady, steady) is True  # 1.1 < 1.3 / 1.1
    assert verdict.decide("lt", (1.0, 1.0), (1.3, 1.3), steady, noisy) is None  # 1.1 > 1.3 / 2
    assert verdict.widened((2.0, 3.0), noisy) == (1.0, 6.0)


def test_exact_values_compare_plainly():
    assert verdict.decide("lt", (3, 3), (4, 4), 0, 0) is True
    assert verdict.decide("ge", (3, 3), (4, 4), 0, 0) is False


def test_a_decided_order_holds_for_every_move_within_the_drift():
    """The rule's promise, checked on many random cases: when every repeat of each side moves by a factor
    within that side's drift, the order a yes or no stated still holds between the moved repeats."""
    rng = random.Random(7)
    decided = 0
    for _ in range(20000):
        a = sorted(rng.uniform(0.1, 10) for _ in range(rng.randint(1, 4)))
        b = sorted(rng.uniform(0.1, 10) for _ in range(rng.randint(1, 4)))
        da, db = rng.uniform(0.01, 0.8), rng.uniform(0.01, 0.8)
        before = verdict.decide("lt", (a[0], a[-1]), (b[0], b[-1]), da, db)
        if before is None:
            continue
        decided += 1
        na = sorted(x * math.exp(rng.uniform(-da, da)) for x in a)
        nb = sorted(x * math.exp(rng.uniform(-db, db)) for x in b)
        assert (na[-1] < nb[0]) if before else (na[0] > nb[-1]), (a, b, na, nb)
        after = verdict.decide("lt", (na[0], na[-1]), (nb[0], nb[-1]), da, db)
        assert after is None or after is before, (a, b, na, nb)
    assert decided > 1000


def test_an_aggregate_spans_the_repeats_behind_it():
    e = ev([rec("x.median", v, process=p) for p, v in enumerate([1.0, 1.2, 1.9], 1)] + [rec("y", 3.5)])
    v = e.eval("median(t@cpu:x.median)")
    assert (v.v, v.lo, v.hi) == (1.2, 1.0, 1.9) and v.drift == pytest.approx(SQRT2)
    assert e.eval("median(t@cpu:x.median) < t@cpu:y").v is None  # 1.9 * 2 > 3.5: the slowest process is too close
    assert e.eval("median(t@cpu:x.median) < 2 * t@cpu:y").v is True
    assert e.eval("min(t@cpu:x.median) < t@cpu:y").v is True  # the fastest process alone: 1.0 * 2 < 3.5


def test_lists_compare_record_by_record_and_all_names_the_deciding_one():
    recs = [rec("d", v, round=r) for r, v in enumerate([0.9, 0.01, 0.95])]
    recs += [rec("k.min", 1.0, round=r) for r in range(3)]
    e = ev(recs)
    out = e.eval("all(t@cpu:d > 0.25 * t@cpu:k.min)")
    assert out.v is False and "{round=1}" in out.why and "0.01" in out.why
    assert e.eval("any(t@cpu:d > 0.25 * t@cpu:k.min)").v is True
    assert e.eval("not any(t@cpu:d{round=1} > 0.25 * t@cpu:k.min{round=1})").v is True


def test_kleene_logic_keeps_cannot_tell():
    e = ev([rec("a", 1.0), rec("b", 1.5), rec("c", 10.0)])
    assert e.eval("t@cpu:a < t@cpu:b").v is None
    assert e.eval("t@cpu:a < t@cpu:b and t@cpu:a < t@cpu:c").v is None
    assert e.eval("t@cpu:a < t@cpu:b or t@cpu:a < t@cpu:c").v is True
    assert e.eval("t@cpu:a < t@cpu:b and t@cpu:c < t@cpu:a").v is False
    assert e.eval("not t@cpu:a < t@cpu:b").v is None


@pytest.mark.parametrize("expr, message", [
    ("t@cpu:a - t@cpu:b < 1", "difference of two measurements"),
    ("t@cpu:a < t@cpu:w", "compares a number with 'text'"),
    ("t@cpu:a == t@cpu:b", "never exactly equal"),
    ("t@cpu:big * t@cpu:big > 1", "too large"),
    ("median(t@cpu:w) > 1", "takes numbers"),
])
def test_mistakes_are_messages_not_tracebacks(expr, message):
    e = ev([rec("a", 1.0), rec("b", 2.0), rec("w", "text", unit=""), rec("big", 1e300, unit="")])
    with pytest.raises(QueryError, match=message):
        e.eval(expr)


def test_conditions_that_differ_are_named_unless_pinned_or_declared():
    refs = parse_refs("a@cpu:x{size=4} < b@cpu:x{size=8}")[1]
    conds = [{"size": {"4"}, "caches": {"cold"}}, {"size": {"8"}, "caches": {"warm"}}]
    out = alike.mismatches(list(zip(refs, conds)))
    assert out == ["a@cpu:x{size=4} and b@cpu:x{size=8} differ in caches: cold vs warm"]
    assert alike.mismatches(list(zip(refs, conds)), differs=("caches",)) == []
    unpinned = parse_refs("a@cpu:x < b@cpu:x")[1]
    assert any("size" in m for m in alike.mismatches(list(zip(unpinned, conds)), differs=("caches",)))


def test_and_separates_statements_about_different_things():
    assert alike.groups("a@cpu:x < b@cpu:y and c@gpu:z > 2 * d@gpu:w") == [[0, 1], [2, 3]]
    assert alike.groups("all(a@cpu:x > 0.25 * b@cpu:y)") == [[0, 1]]


@pytest.mark.parametrize("gib, klass", [(23.5, 32), (125.8, 128), (64.0, 64), (15.6, 16), (None, None)])
def test_memory_class(gib, klass):
    assert fingerprint.memory_class(gib) == klass


def test_fingerprint_of_a_machine_record_and_its_differences():
    intel = {"arch": "x86_64", "cpu": "Intel(R) Xeon(R) Processor", "cores": 2, "memory_gib": 23.5,
             "gpu": None, "os_pretty": "Debian GNU/Linux 12 (bookworm)"}
    amd = {**intel, "cpu": "AMD EPYC", "memory_gib": 23.4}
    a, b = fingerprint.of_machine(intel), fingerprint.of_machine(amd)
    assert (a["os"], a["os_major"], a["gpu_count"]) == ("Debian GNU/Linux", "12", 0)
    assert fingerprint.differences(a, b) == ["cpu: 'Intel(R) Xeon(R) Processor' vs 'AMD EPYC'"]
    assert fingerprint.same(a, fingerprint.of_machine({**intel, "os_pretty": "Debian GNU/Linux 12.5"}))
    h200 = fingerprint.of_machine({"arch": "x86_64", "cpu": "Intel(R) Xeon(R) Processor", "cores": 16,
                                   "memory_gib": 125.8, "gpu": "NVIDIA H200", "os_pretty": "Ubuntu 24.04.3 LTS"})
    assert (h200["gpu_count"], h200["os"], h200["os_major"]) == (1, "Ubuntu", "24")


def test_every_pair_of_spreads_either_decides_or_abstains_symmetrically():
    for (a, b), (c, d) in itertools.product(itertools.combinations([0.5, 1, 2, 4, 8], 2), repeat=2):
        lt, gt = verdict.decide("lt", (a, b), (c, d), SQRT2, SQRT2), verdict.decide("gt", (a, b), (c, d), SQRT2, SQRT2)
        assert (lt is None) == (gt is None) and (lt is None or lt != gt)


@pytest.mark.parametrize("name, tags, want", [
    ("matmul.first", {"device": "cuda", "process": "1"}, "first"),
    ("chain8.first_call", {"device": "cpu"}, "first"),
    ("mlp.first_step", {"device": "cuda"}, "first"),
    ("firstuse.again", {"device": "cuda", "what": "cast"}, "first"),
    ("matmul.device_init", {"device": "cuda"}, "first"),
    ("chain8.device.median", {"device": "cuda", "timing": "device"}, "device"),
    ("chaindims.device.min", {"device": "flex", "timing": "device"}, "min"),  # a CPU backend: its statistic
    ("matmul.later.median", {"device": "cuda"}, "gpu"),
    ("matmul.later.median", {"device": "cpu"}, "median"),
    ("matmul.later.max", {"device": "cuda"}, "max"),
    ("mlp.read.step.median", {"device": "cuda"}, "step"),
    ("smallop.per_op", {"device": "flex"}, "step"),
    ("ret.returned", {"device": "cpu", "run": "1"}, "mean"),
    ("matmul.gflops", {"device": "cpu"}, "mean"),
])
def test_one_classifier_names_the_kind_of_each_figure(name, tags, want):
    assert drift.kind(name, tags) == want


TABLE = {"platforms": {"box": {"median": {"drift": 1.5, "shared": 1.1}, "mean": {"drift": 1.2}}}}


def test_the_drift_comes_from_the_table_per_platform_and_kind_with_a_stated_default():
    d = verdict.Drifts(TABLE)
    assert d.factor("box", "median") == 1.5 and d.factor("box", "first") == drift.DEFAULT
    assert d.factor("elsewhere", "median") == drift.DEFAULT  # a machine with no history yet
    e = Evaluator(ev([rec("x.median", 1.0), rec("y", 1.0)]).lookup, d.of_platform("box"))
    assert e.eval("t@cpu:x.median").drift == pytest.approx(math.log(1.5))
    assert e.eval("t@cpu:x.median / t@cpu:y").drift == pytest.approx(math.log(1.5 * 1.2))  # factors multiply
    assert e.eval("t@cpu:x.median + t@cpu:y").drift == pytest.approx(math.log(1.5))  # a sum: the largest


def test_two_figures_of_one_process_use_their_shared_drift_and_no_others_do():
    recs = [rec("a.median", 1.0, process=1), rec("b.median", 1.3, process=1), rec("c.median", 1.3, process=2)]
    e = Evaluator(ev(recs).lookup, verdict.Drifts(TABLE).of_platform("box"))
    assert e.eval("t@cpu:a.median < t@cpu:b.median").v is True  # same process: 1.0 * 1.1 < 1.3
    assert e.eval("t@cpu:a.median < t@cpu:c.median").v is None  # another process: 1.0 * 1.5 * 1.5 > 1.3
    assert e.eval("t@cpu:a.median < u@cpu:b.median").v is None  # another fragment
    assert e.eval("0.5 * t@cpu:b.median < t@cpu:a.median").v is True  # a constant factor keeps the process


def test_the_shared_drift_compares_figures_of_one_process_not_one_repeat_with_another():
    """torch's return on the 2-core box: returned and synced were the same in every repeat, while the repeats
    themselves went from 22-217 ms in one capture to 137-141 ms in the next. Their ratio did not move."""
    old = [rec("ret.returned", v, run=i) for i, v in enumerate((217e-3, 22e-3, 43e-3, 44e-3, 40e-3))] + \
          [rec("ret.synced", v * 1.0001, run=i) for i, v in enumerate((217e-3, 22e-3, 43e-3, 44e-3, 40e-3))]
    new = [rec("ret.returned", v, run=i) for i, v in enumerate((140e-3, 138e-3, 138e-3, 137e-3, 136e-3))] + \
          [rec("ret.synced", v * 1.0001, run=i) for i, v in enumerate((140e-3, 138e-3, 138e-3, 137e-3, 136e-3))]
    figs_old, figs_new = drift.per_process(old)[""], drift.per_process(new)[""]
    a, b = ("ret.returned", ()), ("ret.synced", ())
    assert sorted(figs_old) == [a, b] and len(figs_old[a]) == 5
    assert drift.ratio_move(figs_old[a], figs_old[b], figs_new[a], figs_new[b]) == pytest.approx(0.0, abs=1e-9)
    # two processes of one capture are kept apart
    procs = drift.per_process([rec("x", 1.0, process=1), rec("x", 2.0, process=2)])
    assert sorted(procs) == ["1", "2"] and procs["2"] == {("x", ()): [2.0]}


def test_the_issue_example_is_decided_by_a_drift_under_1_2_and_not_by_one_over_it():
    """candle vs burn, later matmul on the H200's GPU: 71.3 us [70.0-71.8] against 106 us [104-107]."""
    candle, burn = (70.0e-6, 71.8e-6), (104.0e-6, 107.0e-6)
    assert verdict.decide("lt", candle, burn, math.log(1.2), math.log(1.2)) is True
    assert verdict.decide("lt", candle, burn, math.log(1.21), math.log(1.21)) is None


# -- the drift of a figure: its move beyond what its repeats showed (capture/evidence/drift.py) ---------------

def test_one_slow_repeat_widens_its_own_spread_and_is_not_drift():
    """burn's synced return on the H200: one run went 0.20 -> 0.86 ms while the others stayed put."""
    old, new = [0.20, 0.21, 0.20, 0.22, 0.20], [0.20, 0.86, 0.21, 0.20, 0.21]
    assert drift.move(old, new) == pytest.approx(abs(math.log(0.20 / 0.20)), abs=1e-12)


def test_a_centre_that_leaves_the_other_captures_spread_is_drift_by_how_far_it_left():
    old, new = [100.0, 104.0, 107.0], [139.0, 150.0, 159.0]  # the whole figure moved
    # new median 150 lies ln(150/107) above old's slowest; old median 104 lies ln(139/104) below new's fastest
    want = max(math.log(150 / 107), math.log(139 / 104), math.log(139 / 100))
    assert drift.move(old, new) == pytest.approx(want)
    assert drift.move(new, old) == pytest.approx(want)  # symmetric


def test_the_fastest_repeat_moving_is_drift_even_inside_the_spread():
    """min() of repeats is a point on a page; its move counts in full."""
    assert drift.move([1.0, 2.0, 3.0], [1.5, 2.0, 3.0]) == pytest.approx(math.log(1.5))


def test_a_figure_without_repeats_moves_by_its_ratio():
    assert drift.move([2.0], [3.0]) == pytest.approx(math.log(1.5))


def test_figures_group_repeats_and_keep_the_other_tags_apart():
    recs = [rec("x.median", v, process=p, size=s) for p, (v, s) in enumerate([(1, 8), (2, 8), (5, 16)])]
    recs.append(rec("x.count", 3, unit=""))  # not a timing
    figs = drift.figures(recs)
    assert sorted(figs.values()) == [[1.0, 2.0], [5.0]]


def test_a_yes_holds_in_the_next_capture_when_each_figure_moved_within_the_drift():
    """The rule's promise, checked on random captures: figures whose move (drift.move) is at most the drift
    never turn a yes into a no when each capture's verdict is taken from its own repeats."""
    rnd = random.Random(3)
    f = 1.3
    checked = 0
    for _ in range(3000):
        a = [rnd.uniform(1, 1.2) * rnd.choice([1, 1, 1, 3]) for _ in range(3)]
        b = [rnd.uniform(1, 1.2) * rnd.uniform(1.5, 3) for _ in range(3)]
        a2 = [x * rnd.uniform(0.8, 1.25) for x in a]
        b2 = [x * rnd.uniform(0.8, 1.25) for x in b]
        if max(drift.move(a, a2), drift.move(b, b2)) > math.log(f):
            continue
        before = verdict.decide("lt", (min(a), max(a)), (min(b), max(b)), math.log(f), math.log(f))
        after = verdict.decide("lt", (min(a2), max(a2)), (min(b2), max(b2)), math.log(f), math.log(f))
        assert {before, after} != {True, False}, (a, b, a2, b2)
        checked += 1 if before is not None else 0
    assert checked > 100


# -- figures captured in one run move together (capture/evidence/runs.py) ------------------------------------

def test_runs_are_recorded_ids_or_else_inferred_from_pauses_and_never_mix():
    from capture.evidence import runs
    metas = {
        "a@cpu": {"started": "2026-12-01T10:00:00+00:00", "wall_s": 600},
        "b@cpu": {"started": "2026-12-01T10:35:00+00:00", "wall_s": 5},  # 25 min after a ended: same run
        "c@cpu": {"started": "2026-12-01T11:10:00+00:00", "wall_s": 5},  # 35 min after b: another run
        "d@cpu": {"started": "2026-12-01T10:36:00+00:00", "run": "x1"},  # recorded: its own, whatever the time
        "e@cpu": {"started": "2026-12-02T10:36:00+00:00", "run": "x1"},
        "f@cpu": {"started": "not a time"},
    }
    got = runs.label(metas)
    assert got["a@cpu"] == got["b@cpu"] != got["c@cpu"]
    assert got["d@cpu"] == got["e@cpu"] and got["d@cpu"] not in (got["a@cpu"], got["c@cpu"])
    assert "f@cpu" not in got


RUN_TABLE = {"platforms": {"box": {"median": {"drift": 1.5, "run": 1.2}}}}


def test_two_figures_of_one_run_use_the_run_drift_and_others_their_own():
    recs = [rec("a.median", 1.0), rec("b.median", 1.25)]
    pd = verdict.Drifts(RUN_TABLE).of_platform("box", {"t@cpu": "r1", "u@cpu": "r1", "v@cpu": "r2"})
    e = Evaluator(ev(recs).lookup, pd)
    assert e.eval("t@cpu:a.median < u@cpu:b.median").v is True  # one run: 1.0 * sqrt(1.2) < 1.25 / sqrt(1.2)
    assert e.eval("t@cpu:a.median < v@cpu:b.median").v is None  # two runs: 1.0 * 1.5 > 1.25 / 1.5
    assert e.eval("t@cpu:a.median < w@cpu:b.median").v is None  # a fragment with no run


def test_the_run_drift_is_how_far_a_ratio_moved_beyond_the_ratios_of_the_repeats():
    # both figures twice as slow in the later run: their ratio did not move
    assert drift.ratio_move([1.0, 1.1], [2.0, 2.1], [2.0, 2.2], [4.0, 4.2]) == pytest.approx(0.0, abs=1e-12)
    # one of them moved by 1.5 beyond what the repeats showed
    got = drift.ratio_move([1.0], [2.0], [1.5], [2.0])
    assert got == pytest.approx(math.log(1.5))


def test_a_figure_that_moved_more_than_its_kind_keeps_its_own_drift_and_no_run_drift():
    table = {"platforms": {"box": {"median": {"drift": 1.2, "run": 1.1}}},
             "figures": {"box": {"t@cpu x.median{size=8}": 3.0}}}
    pd = verdict.Drifts(table).of_platform("box", {"t@cpu": "r1", "u@cpu": "r1"})
    assert pd.record("x.median", {"size": "8", "process": "2"}, "t@cpu") == pytest.approx(math.log(3.0))
    assert pd.record("x.median", {"size": "16"}, "t@cpu") == pytest.approx(math.log(1.2))  # another figure
    assert pd.record("x.median", {"size": "8"}, "u@cpu") == pytest.approx(math.log(1.2))  # another fragment
    recs = [rec("x.median", 1.0, size=8), rec("y.median", 1.3, size=8)]
    e = Evaluator(ev(recs).lookup, pd)
    assert e.eval("u@cpu:x.median < u@cpu:y.median").v is True  # one run: sqrt(1.1) each side
    assert e.eval("t@cpu:x.median < u@cpu:y.median").v is None  # x keeps its own x3: no run drift for it


def test_figure_labels_leave_the_repeat_tags_out_and_sort_the_rest():
    assert drift.figure_label("t@cpu", "x", {"size": "8", "process": "1", "device": "cpu"}) == "t@cpu x{device=cpu,size=8}"
    assert drift.figure_label("t@cpu", "x", {"run": "2"}) == "t@cpu x"


@pytest.mark.parametrize("left, right, want", [
    ((1.0, 1.1), (1.3, 1.5), True),    # every repeat of the left below every repeat of the right
    ((1.6, 1.8), (1.3, 1.5), False),
    ((1.0, 1.4), (1.3, 1.5), None),    # the repeats themselves overlap
])
def test_the_repeats_alone_say_what_one_capture_shows_before_any_drift(left, right, want):
    assert verdict.by_repeats("lt", left, right) is want
    assert verdict.by_repeats("gt", left, right) is {True: False, False: True, None: None}[want]
    # with no drift to widen by, the rule itself says the same
    assert verdict.decide("lt", left, right, verdict.MIN_DRIFT, verdict.MIN_DRIFT) is want


def test_a_cannot_tell_says_whether_the_repeats_or_only_the_drift_keep_it_open():
    from capture.evidence.query import REPEATS_SAY

    records = [rec("x", v, process=i) for i, v in enumerate((1.0, 1.1, 1.05))] + \
              [rec("y", v, process=i) for i, v in enumerate((1.5, 1.6, 1.55))] + \
              [rec("z", v, process=i) for i, v in enumerate((1.08, 1.2, 1.3))]
    apart = ev(records).eval("median(t@cpu:x) < median(t@cpu:y)")  # 1.1 vs 1.5 apart; x1.96 between them after widening
    assert apart.v is None and apart.repeats is True and f"{REPEATS_SAY} yes, but" in apart.why
    assert ev(records).eval("median(t@cpu:y) < median(t@cpu:x)").repeats is False
    overlap = ev(records).eval("median(t@cpu:x) < median(t@cpu:z)")
    assert overlap.v is None and overlap.repeats is None and "repeats themselves overlap" in overlap.why
    decided = ev(records).eval("median(t@cpu:x) < 0.5 * median(t@cpu:y) or median(t@cpu:x) < median(t@cpu:y) / 10")
    assert decided.repeats is None  # only a single comparison the rule cannot tell carries it


# -- four answers, and the history of earlier captures in one sitting (capture/evidence/verdict.py) -------------

def test_about_the_same_is_the_smallest_stated_factor_that_bounds_the_widened_ratio():
    # 1.0 vs 1.05, each widened x1.05: the ratio stays within 1.0/1.1025 .. 1.05*1.05 -> under 1.2, not under 1.1
    assert verdict.about_same((1.0, 1.0), (1.05, 1.05), math.log(1.05), math.log(1.05)) == 1.2
    assert verdict.about_same((1.0, 1.0), (1.05, 1.05), math.log(1.02), math.log(1.02)) == 1.1
    # apart by 1.9 before any drift: no bound of 2 or less holds, so the data bound neither order nor gap
    assert verdict.about_same((1.0, 1.0), (1.9, 1.9), math.log(1.2), math.log(1.2)) is None
    assert verdict.SAME_WITHIN[-1] == 2.0  # "about the same" is never stated with more than 2x


def test_a_comparison_has_four_answers_and_only_an_unscaled_one_can_be_about_the_same():
    table = {"platforms": {"box": {"median": {"drift": 1.1}}}}
    recs = [rec("a.median", 1.0), rec("b.median", 1.05), rec("c.median", 2.0), rec("d.median", 1.6)]
    e = Evaluator(ev(recs).lookup, verdict.Drifts(table).of_platform("box"))
    assert e.eval("t@cpu:a.median < t@cpu:c.median").v is True
    assert e.eval("t@cpu:c.median < t@cpu:a.median").v is False
    near = e.eval("t@cpu:a.median < t@cpu:b.median")
    assert near.v is None and near.same == 1.3  # 1.0 vs 1.05, x1.1 each side: within 1.05 * 1.21 < 1.3
    wide = Evaluator(ev(recs).lookup, verdict.Drifts({"platforms": {"box": {"median": {"drift": 1.5}}}}).of_platform("box"))
    far = wide.eval("t@cpu:a.median < t@cpu:d.median")  # x1.5 each side: 1.6 * 2.25 > 2, so no bound
    assert far.v is None and far.same is None
    assert e.eval("2 * t@cpu:a.median < t@cpu:c.median").same is None  # a margin is no "about the same"


def _paired(*pairs):
    return [verdict.Paired(f"2026-12-0{i + 1}T00:00:00+00:00", left, right, centers[0] if centers else None)
            for i, (left, right, *centers) in enumerate(pairs)]


def test_the_history_decides_by_the_predicted_ratio_of_the_next_sitting():
    apart = ((1.0, 1.1), (1.5, 1.6), (1.05, 1.55))
    # the drift cannot tell; three captures (this one included) all put the left about 1.48x below the right
    got = verdict.with_history("lt", None, (1.0, 1.1), (1.5, 1.6), _paired(apart, apart), (1.05, 1.55))
    assert got.value is True and got.by_history and got.captures == 3 and got.gap == pytest.approx(1.55 / 1.05)
    # the same question asked the other way round is a no, by the same ratios
    assert verdict.with_history("gt", None, (1.0, 1.1), (1.5, 1.6), _paired(apart, apart), (1.05, 1.55)).value is False
    # two captures are not enough
    assert verdict.with_history("lt", None, (1.0, 1.1), (1.5, 1.6), _paired(apart), (1.05, 1.55)).value is None
    # no values for an earlier capture: the ratio cannot be followed
    no_values = ((1.0, 1.1), (1.5, 1.6))
    assert verdict.with_history("lt", None, (1.0, 1.1), (1.5, 1.6), _paired(apart, no_values), (1.05, 1.55)).value is None
    # one earlier capture whose values lay the other way (its repeats overlapped): it disagrees
    overlap = ((1.0, 1.5), (1.1, 1.6), (1.4, 1.2))
    got = verdict.with_history("lt", None, (1.0, 1.1), (1.5, 1.6), _paired(apart, overlap, apart), (1.05, 1.55))
    assert got.value is None and got.disagreed == "2026-12-02T00:00:00+00:00"


def test_ratios_that_scatter_widely_predict_no_order_but_close_steady_ones_are_about_the_same():
    # every capture ordered them the same way, but the ratio swung from 1.02 to 3: the next sitting is unknown
    swing = [((1.0, 1.0), (1.02, 1.02), (1.0, 1.02)), ((1.0, 1.0), (3.0, 3.0), (1.0, 3.0))]
    got = verdict.with_history("lt", None, (1.0, 1.0), (1.5, 1.5), _paired(*swing), (1.0, 1.5))
    assert got.value is None and got.captures == 3 and got.same is None
    # a ratio of 1.02 +- a little, every sitting: ordered, and the prediction stays on one side of 1
    steady = [((1.0, 1.0), (1.02, 1.02), (1.0, 1.02))] * 3
    got = verdict.with_history("lt", None, (1.0, 1.0), (1.021, 1.021), _paired(*steady), (1.0, 1.021))
    assert got.value is True
    # ratios around 1 both ways within a few per cent (repeats overlapping): about the same, within 1.1
    around = [((0.9, 1.1), (0.9, 1.1), (1.0, 1.03)), ((0.9, 1.1), (0.9, 1.1), (1.03, 1.0))] * 2 + \
        [((0.9, 1.1), (0.9, 1.1), (1.0, 1.03))]
    got = verdict.with_history("lt", None, (0.9, 1.1), (0.9, 1.1), _paired(*around), (1.03, 1.0))
    assert got.value is None and got.same == 1.1
    # three such sittings bound it less tightly: the interval is wider with fewer of them
    got = verdict.with_history("lt", None, (0.9, 1.1), (0.9, 1.1), _paired(*around[:2]), (1.0, 1.01))
    assert got.value is None and got.same == 1.2


def test_the_prediction_interval_widens_with_few_sittings():
    three = verdict.ratio_interval([(1.0, 2.0), (1.0, 2.1), (1.0, 1.9)])
    six = verdict.ratio_interval([(1.0, 2.0), (1.0, 2.1), (1.0, 1.9)] * 2)
    assert three[1] < 0 and six[1] < 0 and (three[1] - three[0]) > (six[1] - six[0])
    assert verdict.ratio_interval([(1.0, 2.0), (1.0, 2.1)]) is None


def test_a_capture_that_ordered_them_the_other_way_makes_even_a_drift_decided_answer_cannot_tell():
    apart, reversed_ = ((1.0, 1.1), (1.5, 1.6)), ((1.7, 1.8), (1.5, 1.6))
    got = verdict.with_history("lt", True, (1.0, 1.1), (1.5, 1.6), _paired(apart, reversed_))
    assert got.value is None and got.disagreed == "2026-12-02T00:00:00+00:00"
    # and a drift-decided no is checked the same way
    got = verdict.with_history("gt", False, (1.0, 1.1), (1.5, 1.6), _paired(reversed_))
    assert got.value is None
    # no history (a split pair, a sum): the drift's answer as it is
    assert verdict.with_history("lt", True, (1.0, 1.1), (1.5, 1.6), None).value is True


def test_the_history_pairs_earlier_captures_by_run_and_only_when_the_two_compared_now_share_one():
    x, y = "t@cpu x.median", "u@cpu y.median"
    history = {"box": {"captures": [["t@cpu", "2026-12-01T00:00", 0], ["u@cpu", "2026-12-01T00:01", 0],
                                    ["t@cpu", "2026-12-02T00:00", 1], ["u@cpu", "2026-12-03T00:00", 2],
                                    ["t@cpu", "2026-12-04T00:00", 3], ["u@cpu", "2026-12-04T00:01", 3]],
                       "figures": {x: [[0, [1.0, 1.1]], [2, [1.0]], [4, [1.0, 1.05]]],
                                   y: [[1, [2.0]], [3, [2.1]], [5, [2.0, 2.2]]]}}}
    table = {"platforms": {"box": {"median": {"drift": 3.0}}}, "history": history}
    now = {"t@cpu": "2026-12-04T00:00", "u@cpu": "2026-12-04T00:01"}
    pd = verdict.Drifts(table).of_platform("box", {"t@cpu": "r", "u@cpu": "r"}, now)
    left, right = verdict.Side(x, "t@cpu", "median", 1.0), verdict.Side(y, "u@cpu", "median", 1.0)
    got = pd.earlier(left, right)  # runs 1 and 2 hold one side each; run 3 is the one compared now
    assert [(p.left, p.right) for p in got] == [((1.0, 1.1), (2.0, 2.0))]
    assert verdict.Side(x, "t@cpu", "min", 2.0).spread_of([1.0, 1.2]) == (2.0, 2.0)  # a min of repeats, scaled
    split = verdict.Drifts(table).of_platform("box", {"t@cpu": "r", "u@cpu": "s"}, now)
    assert split.earlier(left, right) is None  # compared now from two sittings: the history cannot speak
    recs = [rec("x.median", 1.0, process=1), rec("x.median", 1.05, process=2), rec("y.median", 2.0)]
    e = Evaluator(ev(recs).lookup, pd)
    assert e.eval("median(t@cpu:x.median) < u@cpu:y.median").v is None  # x3 drift; only two paired captures
    assert e.eval("t@cpu:x.median{process=1} < u@cpu:y.median").v is None  # one repeat picked: not the figure


def test_the_history_follows_a_sum_of_whole_figures_taken_in_one_run():
    a, b, c = "t@cpu a.median", "t@cpu b.median", "u@cpu c.median"
    history = {"box": {"captures": [["t@cpu", "2026-12-01T00:00", 0], ["u@cpu", "2026-12-01T00:01", 0],
                                    ["t@cpu", "2026-12-02T00:00", 1], ["u@cpu", "2026-12-02T00:01", 1],
                                    ["t@cpu", "2026-12-03T00:00", 2]],
                       "figures": {a: [[0, [1.0, 1.2]], [2, [1.1]], [4, [9.0]]],
                                   b: [[0, [2.0]], [2, [2.1, 2.3]], [4, [9.0]]],
                                   c: [[1, [3.0]], [3, [3.3]]]}}}
    table = {"platforms": {"box": {"median": {"drift": 3.0}}}, "history": history}
    now = {"t@cpu": "2026-12-04T00:00", "u@cpu": "2026-12-04T00:01"}
    pd = verdict.Drifts(table).of_platform("box", {"t@cpu": "r", "u@cpu": "r"}, now)
    parts = (verdict.Side(a, "t@cpu", "median", 1.0), verdict.Side(b, "t@cpu", "median", 1.0))
    got = pd.earlier(parts, verdict.Side(c, "u@cpu", "median", 1.0))
    # run 2 has no c: only runs 0 and 1 pair; each part's spread and value summed
    assert [(p.left, p.right, p.centers) for p in got] == [((3.0, 3.2), (3.0, 3.0), (3.1, 3.0)),
                                                          ((pytest.approx(3.2), 3.4), (3.3, 3.3), (pytest.approx(3.3), 3.3))]
    split = verdict.Drifts(table).of_platform("box", {"t@cpu": "r", "u@cpu": "s"}, now)
    assert split.earlier(parts, verdict.Side(c, "u@cpu", "median", 1.0)) is None
