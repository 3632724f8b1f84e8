"""The verdicts against reality: the pages' yes/no on every past capture, and under the measured drift.

Every yes/no the pages draw (claims, verdict-matrix rows, chart branches; capture/evidence/share.py) is checked
three ways on each captured platform:

- history: evaluated on every committed state of the platform's fragments (`git log` of
  docs/_fragments/<platform>; fragments another host captured are left out, as the pages leave them
  out). No verdict may be yes in one state and no in another.
- drift: every timing record multiplied by its own factor drawn within its kind's measured drift
  on that platform (docs/drift.json), records of one run and of one process moving together within their
  run and shared drifts
  (a stats triple X.min / X.median / X.max is re-sorted, as repeats that moved would sort). A verdict
  may become cannot tell; it may never go from yes to no or back.
- extreme: the same with factors growing step by step up to EXTREME (10x) either way: the expressions
  still evaluate (no crash), and no verdict goes from yes to no, or back, without a step of cannot tell.

    python -m capture noise [--seeds 10]      prints the figures (per platform: verdicts, flips, undecided)
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from pathlib import Path

from capture.evidence import drift as driftmod
from capture.evidence import verdict
from capture.evidence.book import Book
from capture.storage.keys import FragmentKey
from capture.evidence.query import is_measured
from capture.evidence.share import Outcome, evaluate, verdict_expressions
from capture.storage.store import Fragment

__all__ = ["verdict_expressions", "perturb", "run", "history", "extreme", "render"]
EXTREME = 10.0
STEPS = 24  # per seed in the extreme run: each step moves a ratio by at most EXTREME ** (2 / STEPS)


def _timing(r: dict) -> bool:
    return is_measured(r.get("unit", "")) and isinstance(r["value"], (int, float)) and not isinstance(r["value"], bool)


def perturb(records: list[dict], factor) -> list[dict]:
    """Records with every timing multiplied by factor(record); stats triples re-sorted."""
    out = [dict(r) for r in records]
    for r in out:
        if _timing(r):
            r["value"] = r["value"] * factor(r)
    triples: dict[tuple, dict[str, dict]] = {}
    for r in out:
        for suffix in (".min", ".median", ".max"):
            if r["name"].endswith(suffix):
                key = (r["name"][: -len(suffix)], tuple(sorted((r.get("tags") or {}).items())))
                triples.setdefault(key, {})[suffix] = r
    for t in triples.values():
        if len(t) == 3 and all(isinstance(x["value"], (int, float)) for x in t.values()):
            lo, mid, hi = sorted(x["value"] for x in t.values())
            t[".min"]["value"], t[".median"]["value"], t[".max"]["value"] = lo, mid, hi
    return out


def within_drift(rng: random.Random, pd: verdict.PlatformDrift):
    """factor(fragment key, record): uniform in log within the record's kind's measured drift, nested so that
    the ratios the rule relies on stay within theirs too: records of one run (capture/evidence/runs.py) share
    a common factor and move apart by at most their run drift; records of one process, by at most their
    shared drift."""
    common: dict[tuple, float] = {}

    def factor(key, r: dict) -> float:
        key = str(key)  # a FragmentKey or its text
        tags = r.get("tags") or {}
        k, d = pd.kind(r["name"], tags), pd.record(r["name"], tags, key)
        s_proc, s_run = pd.shared(k), pd.run_shared(k, (key,))
        if s_run is not None:  # within a run a figure that keeps its own drift moves as its kind does (a stricter
            d = min(d, pd.level(k))  # move than the rule allows it, so still within what the rule assumes)
        own = min([d] + [x / 2 for x in (s_proc, s_run) if x is not None])  # apart from everything
        apart_in_run = d if s_run is None else min(d, s_run / 2)  # how far two processes of one run move apart
        in_run = max(0.0, apart_in_run - own)  # the process's share
        run_part = d - own - in_run  # the run's common share
        run = pd.runs.get(key, key)
        x = (common.setdefault(("run", run, k), rng.uniform(-1, 1)) * run_part
             + common.setdefault(("proc", key, tags.get("process", ""), k), rng.uniform(-1, 1)) * in_run
             + rng.uniform(-1, 1) * own)
        return math.exp(x)

    return factor


@dataclass
class PlatformReport:
    platform: str
    verdicts: int = 0  # expressions that evaluate to yes / no / cannot tell there
    yes_no: int = 0
    undecided: list[tuple[str, str]] = field(default_factory=list)  # (where, why) on the captured data
    flips: list[tuple[str, str, bool, bool]] = field(default_factory=list)  # (what, where, before, after)
    became_undecided: int = 0  # (expression, seed) pairs that went from yes/no to cannot tell
    states: int = 0  # history: committed states evaluated


def _with(book: Book, platform: str, records_of) -> Book:
    """A copy of the book whose platform's fragments carry records_of(fragment) instead."""
    out = Book(book.layout.root)
    for k in book.store.keys(platform):
        key = FragmentKey.parse(k)
        frag = book.fragment(platform, key)
        if frag is not None and not frag.corrupt:
            out._frags[(platform, key)] = replace(frag, meta={**frag.meta, "records": records_of(frag)})
    return out


def _flips(before: dict[str, Outcome], after: dict[str, Outcome], what: str, rep: PlatformReport) -> None:
    for where, o in before.items():
        w = after.get(where)
        if w is None:
            continue
        if o.v is not None and w.v is not None and w.v != o.v:
            rep.flips.append((what, where, o.v, w.v))
        elif o.v is not None and w.v is None:
            rep.became_undecided += 1


def _base(book: Book, exprs, plat: str) -> tuple[PlatformReport, dict[str, Outcome]]:
    rep = PlatformReport(plat)
    before = evaluate(book, exprs, plat)
    rep.verdicts = len(before)
    rep.yes_no = sum(1 for o in before.values() if o.v is not None)
    rep.undecided = [(w, o.why) for w, o in before.items() if o.v is None]
    return rep, before


def run(root: Path, seeds: int = 10) -> list[PlatformReport]:
    """The drift test: every timing moved within its measured drift, `seeds` times per platform."""
    exprs = verdict_expressions(root / "docs")
    base_book = Book(root)
    reports = []
    for plat in base_book.platforms():
        rep, before = _base(base_book, exprs, plat)
        pd = base_book.drifts.of_platform(plat)
        for seed in range(seeds):
            factor = within_drift(random.Random(seed), pd)
            book = _with(base_book, plat, lambda f: perturb(f.records, lambda r, key=f.key: factor(key, r)))
            _flips(before, evaluate(book, exprs, plat), f"seed {seed}", rep)
        reports.append(rep)
    return reports


def extreme(root: Path, seeds: int = 3, steps: int = STEPS) -> list[PlatformReport]:
    """Factors up to EXTREME either way, growing in `steps`: flips counted only where a yes turned into a no
    (or back) from one step to the next, without cannot tell between."""
    exprs = verdict_expressions(root / "docs")
    base_book = Book(root)
    reports = []
    for plat in base_book.platforms():
        rep, before = _base(base_book, exprs, plat)
        for seed in range(seeds):
            rng = random.Random(1000 + seed)
            z: dict[int, float] = {}  # one direction per record, by its position in its fragment
            prev = before
            for step in range(1, steps + 1):
                t = math.log(EXTREME) * step / steps

                def records_of(frag, t=t):
                    it = iter(range(10**9))
                    return perturb(frag.records, lambda r: math.exp(t * z.setdefault(hash((frag.key, next(it))),
                                                                                       rng.uniform(-1, 1))))

                now = evaluate(_with(base_book, plat, records_of), exprs, plat)
                _flips(prev, now, f"seed {seed} step {step}", rep)
                prev = now
        reports.append(rep)
    return reports


def history(root: Path) -> list[PlatformReport]:
    """Every committed state of each platform's own-host fragments: no verdict yes in one and no in another."""
    exprs = verdict_expressions(root / "docs")
    base_book = Book(root)
    reports = []
    for plat in base_book.platforms():
        rep, now = _base(base_book, exprs, plat)
        host = driftmod.platform_host(root, plat)
        seen: dict[str, tuple[str, bool]] = {w: ("now", o.v) for w, o in now.items() if o.v is not None}
        for snap in driftmod.snapshots(root, plat):
            # the platform's own fragments, as its host (older ones recorded only their machine)
            metas = {k: {**m, "host": host} for k, m in snap.metas.items() if driftmod.own_host(m, host)}
            book = Book(root)
            for k in base_book.store.keys(plat):
                key = FragmentKey.parse(k)
                meta = metas.get(k)
                cur = base_book.fragment(plat, key)
                if meta and cur is not None and meta.get("device") != (cur.meta or {}).get("device"):
                    meta = None  # another device then (burn's GPU role on Vulkan before CUDA): not a re-capture
                book._frags[(plat, key)] = Fragment(plat, k, "", meta) if meta else None
            rep.states += 1
            for where, o in evaluate(book, exprs, plat).items():
                if o.v is None:
                    continue
                first = seen.setdefault(where, (snap.commit[:7], o.v))
                if first[1] != o.v:
                    rep.flips.append((f"{first[0]} vs {snap.commit[:7]}", where, first[1], o.v))
        reports.append(rep)
    return reports


def render(reports: list[PlatformReport], what: str) -> str:
    lines = [what]
    for r in reports:
        lines.append(f"{r.platform}: {r.verdicts} verdicts, {r.yes_no} yes/no and {len(r.undecided)} cannot tell on the "
                     f"captured data; {len(r.flips)} flips, {r.became_undecided} became cannot tell"
                     + (f"; {r.states} committed states" if r.states else ""))
        for what_, where, a, b in r.flips:
            lines.append(f"  FLIP {what_} {where}: {verdict.word(a)} -> {verdict.word(b)}")
    return "\n".join(lines)
