"""The pages' verdicts against reality (capture/evidence/noise.py): on every committed state of each platform's own
fragments no verdict flips between yes and no; moved within the measured drift (docs/drift.json) none
flips either; under extreme noise the expressions still evaluate and no yes turns into a no without a
step of cannot tell. And the drift table is the one the fragments' history gives."""

import json
import math
import random
import re
import subprocess
from pathlib import Path

import pytest

from capture.evidence import drift, verdict
from capture.evidence.book import Book
from capture.evidence.noise import extreme, history, perturb, run, verdict_expressions, within_drift
from capture.evidence.share import shares

REPO = Path(__file__).resolve().parents[2]


def test_no_verdict_flips_across_the_captures_in_the_history():
    reports = history(REPO)
    if max(r.states for r in reports) < 2:
        pytest.skip("a shallow clone: the fragments' history is not here (git fetch --unshallow)")
    for r in reports:
        assert r.flips == [], f"{r.platform}: {r.flips}"
        assert r.yes_no > 0  # not vacuous: verdicts are decided


def test_the_pages_verdicts_do_not_flip_within_the_measured_drift():
    reports = run(REPO, seeds=10)
    assert reports, "no captured platform"
    for r in reports:
        assert r.flips == [], f"{r.platform}: {r.flips}"
        assert r.yes_no > 0


def test_extreme_noise_never_crashes_and_never_skips_cannot_tell():
    reports = extreme(REPO, seeds=1, steps=12)
    for r in reports:
        assert r.flips == [], f"{r.platform}: {r.flips}"
    assert sum(r.became_undecided for r in reports) > 0  # the noise was large enough to matter


def test_the_committed_drift_table_is_what_the_history_gives():
    if subprocess.run(["git", "-C", str(REPO), "rev-parse", "--is-shallow-repository"], capture_output=True,
                      text=True).stdout.strip() == "true":
        pytest.skip("a shallow clone: the fragments' history is not here")
    committed = json.loads((REPO / drift.DATA).read_text(encoding="utf-8"))
    assert committed == json.loads(json.dumps(drift.table(REPO))), \
        f"{drift.DATA} is out of date: python -m capture drift"
    for plat, rows in committed["platforms"].items():
        for k, row in rows.items():
            assert row["drift"] >= 1.0 and (row["source"] == "default" or row["records"] >= drift.MIN_PAIRS), (plat, k)


def test_the_expressions_cover_claims_matrices_and_charts():
    wheres = [w for w, _ in verdict_expressions(REPO / "docs")]
    assert any("chart" in w for w in wheres) and any("(gpu)" in w for w in wheres)
    assert any(w.startswith("design.md:") and " " not in w for w in wheres)  # claims


def test_the_share_counts_timing_verdicts_and_names_the_undecided_ones():
    items = shares(Book(REPO), REPO / "docs")
    assert {s.platform for s in items} >= {"linux-x86_64-nvidia-h200", "linux-x86_64-cpu"}
    for s in items:
        assert s.total > 10 and s.yes > 0
        for where, why in s.undecided:
            assert "widened by their drift overlap" in why or "ordered them the other way" in why, (where, why)


def test_a_cannot_tell_is_never_left_where_every_capture_agrees_and_the_ranges_are_far_apart():
    """Issue 41's bar: where every capture of the two sides in one sitting ordered them the same way and this
    capture's ranges are at least 1.5x apart, the book says which is faster."""
    from capture.evidence.query import HISTORY_AGAINST, REPEATS_SAY

    book = Book(REPO)
    for s in shares(book, REPO / "docs"):
        for where, why in s.undecided:
            if HISTORY_AGAINST in why or REPEATS_SAY not in why:
                continue  # a capture disagreed, or this capture's repeats overlap
            spreads = [tuple(float(x) for x in m) for m in re.findall(r" s \[([-0-9.e+]+)–([-0-9.e+]+)\]", why)[:2]]
            if len(spreads) == 2:
                (llo, lhi), (rlo, rhi) = spreads
                assert max(rlo / lhi, llo / rhi) < 1.5, (s.platform, where, why)


def test_perturb_moves_within_the_drift_keeps_stats_triples_ordered_and_words_untouched():
    recs = [{"name": f"x.{s}", "value": v, "unit": "s", "tags": {}} for s, v in (("min", 1.0), ("median", 1.1), ("max", 1.2))]
    recs.append({"name": "w", "value": "call", "unit": "", "tags": {}})
    table = {"platforms": {"p": {k: {"drift": 1.5} for k in drift.KINDS}}}
    for seed in range(50):
        factor = within_drift(random.Random(seed), verdict.Drifts(table).of_platform("p"))
        out = perturb(recs, lambda r: factor("x@cpu", r))
        lo, mid, hi = (r["value"] for r in out[:3])
        assert lo <= mid <= hi and 1.0 / 1.5 <= lo and hi <= 1.2 * 1.5 and out[3]["value"] == "call"


def test_within_a_run_a_figure_that_keeps_its_own_drift_moves_no_further_from_the_others_than_the_rule_allows():
    """The rule widens two figures of one run by the run drift; a figure that keeps its own drift gets no run drift
    (its own drift, the larger, applies, and the history of earlier pairs in one run checks it). The drift test
    moves it apart from the others of its run by at most the kind's run drift: within what the rule assumes, or
    its flips would be its own."""
    own, other = "t@cpu x.median", "u@cpu y.median"
    table = {"platforms": {"p": {"median": {"drift": 1.5, "run": 1.2}}}, "figures": {"p": {own: 3.0}}}
    pd = verdict.Drifts(table).of_platform("p", {"t@cpu": "r1", "u@cpu": "r1"})
    assert pd.run_shared("median", ("t@cpu", "u@cpu"), own, other) is None  # the rule: its own x3.0 each side
    bound = pd.run_shared("median", ("t@cpu", "u@cpu"))
    assert bound == pytest.approx(math.log(1.2))
    x = {"name": "x.median", "value": 1.0, "unit": "s", "tags": {}}
    y = {"name": "y.median", "value": 1.0, "unit": "s", "tags": {}}
    widest = 0.0
    for seed in range(200):
        factor = within_drift(random.Random(seed), pd)
        widest = max(widest, abs(math.log(factor("t@cpu", x) / factor("u@cpu", y))))
    assert 0 < widest <= bound + 1e-12
