"""The noise test on the committed fragments: no verdict of the pages flips between yes and no when every
timing record is off by a random factor in [1/2, 2] (10 seeds); verdicts may become "cannot tell"."""

from pathlib import Path

from capture.noise import perturb, run, verdict_expressions

REPO = Path(__file__).resolve().parents[2]


def test_the_pages_verdicts_do_not_flip_under_noise():
    reports = run(REPO, seeds=10)
    assert reports, "no captured platform"
    for r in reports:
        assert r.flips == [], f"{r.platform}: {r.flips}"
        assert r.yes_no > 0  # the test is not vacuous: some verdicts are decided on the captured data


def test_the_expressions_cover_claims_matrices_and_charts():
    wheres = [w for w, _ in verdict_expressions(REPO / "docs")]
    assert any("chart" in w for w in wheres) and any("(gpu)" in w for w in wheres)
    assert any(w.startswith("design.md:") and " " not in w for w in wheres)  # claims


def test_perturb_keeps_stats_triples_ordered_and_words_untouched():
    import random

    recs = [{"name": f"x.{s}", "value": v, "unit": "s", "tags": {}} for s, v in (("min", 1.0), ("median", 1.1), ("max", 1.2))]
    recs.append({"name": "w", "value": "call", "unit": "", "tags": {}})
    for seed in range(50):
        out = perturb(recs, random.Random(seed))
        lo, mid, hi = (r["value"] for r in out[:3])
        assert lo <= mid <= hi and 0.5 <= lo and hi <= 2.4 and out[3]["value"] == "call"
