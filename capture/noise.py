"""The noise test: verdicts that do not flip when every timing is off by up to a factor of two.

Every yes/no the pages draw from timings (claims, verdict-matrix rows, chart branches) is evaluated
on each captured platform, then again after every timing record of that platform was multiplied by
a random factor in [1/NOISE, NOISE] (one factor per record: per repeat, per round, per process;
a stats triple X.min / X.median / X.max is re-sorted, as repeats that were off would sort). A
verdict may become "cannot tell"; it may never go from yes to no or back. capture/verdict.py makes
that hold by construction; this checks it on the book's real expressions and data.

    python -m capture noise [--seeds 10]      prints the figures (per platform: verdicts, flips, undecided)
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from capture import verdict
from capture.book import Book
from capture.claims import find_claims
from capture.keys import FragmentKey
from capture.query import is_measured

_ROWS = re.compile(r"^\s*:rows:\s*(.*)$")
_CHART_CALL = re.compile(r"""\b(?:holds|fails)\(\s*(['"])(.*?)\1\s*\)""")


def verdict_expressions(docs: Path) -> list[tuple[str, str]]:
    """(where, expression) for every claim, verdict-matrix row (each role) and chart branch in the pages."""
    out = [(f"{s.page.name}:{s.line}", s.expr) for s in find_claims(docs)]
    for page in sorted(docs.rglob("*.md")):
        if any(part.startswith("_") for part in page.relative_to(docs).parts):
            continue
        lines = page.read_text(encoding="utf-8").splitlines()
        in_matrix = False
        for n, line in enumerate(lines, 1):
            if "{verdict-matrix}" in line:
                in_matrix = True
            m = _ROWS.match(line)
            if m and in_matrix:
                for part in m.group(1).split(";"):
                    label, _, expr = part.partition("=")
                    for role in ("cpu", "gpu"):
                        out.append((f"{page.name}:{n} {label.strip()[:24]} ({role})", expr.strip().replace("{role}", role)))
                in_matrix = False
            for cm in _CHART_CALL.finditer(line):
                out.append((f"{page.name}:{n} chart", cm.group(2)))
    return out


def perturb(records: list[dict], rng: random.Random, noise: float = verdict.NOISE) -> list[dict]:
    """Records with every timing multiplied by its own factor in [1/noise, noise]; stats triples re-sorted."""
    out = [dict(r) for r in records]
    for r in out:
        if is_measured(r.get("unit", "")) and isinstance(r["value"], (int, float)) and not isinstance(r["value"], bool):
            r["value"] = r["value"] * rng.uniform(1 / noise, noise)
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


@dataclass
class PlatformReport:
    platform: str
    verdicts: int = 0  # expressions that evaluate to yes / no / cannot tell there
    yes_no: int = 0
    undecided: list[tuple[str, str]] = field(default_factory=list)  # (where, why) on the captured data
    flips: list[tuple[int, str, bool, bool]] = field(default_factory=list)  # (seed, where, before, after)
    became_undecided: int = 0  # (expression, seed) pairs that went from yes/no to cannot tell


def _evaluate(book: Book, exprs, platform: str) -> dict[str, tuple[object, str]]:
    out = {}
    for where, expr in exprs:
        ans = book.answer(expr, platform)
        if ans.error or not ans.ok:
            continue
        v = getattr(ans.value, "v", ans.value)
        if isinstance(v, bool) or v is None:
            out[where] = (v, getattr(ans.value, "why", ""))
    return out


def run(root: Path, seeds: int = 10) -> list[PlatformReport]:
    exprs = verdict_expressions(root / "docs")
    base_book = Book(root)
    reports = []
    for plat in base_book.platforms():
        rep = PlatformReport(plat)
        before = _evaluate(base_book, exprs, plat)
        rep.verdicts = len(before)
        rep.yes_no = sum(1 for v, _ in before.values() if v is not None)
        rep.undecided = [(w, why) for w, (v, why) in before.items() if v is None]
        for seed in range(seeds):
            rng = random.Random(seed)
            book = Book(root)
            for k in book.store.keys(plat):
                key = FragmentKey.parse(k)
                frag = book.fragment(plat, key)
                if frag is not None and not frag.corrupt:
                    meta = {**frag.meta, "records": perturb(frag.records, rng)}
                    book._frags[(plat, key)] = replace(frag, meta=meta)
            after = _evaluate(book, exprs, plat)
            for where, (v, _) in before.items():
                w = after.get(where, (None, ""))[0]
                if v is not None and w is not None and w != v:
                    rep.flips.append((seed, where, v, w))
                elif v is not None and w is None:
                    rep.became_undecided += 1
        reports.append(rep)
    return reports


def render(reports: list[PlatformReport], seeds: int) -> str:
    lines = [f"noise test: every timing x U[1/{verdict.NOISE:g}, {verdict.NOISE:g}] per record, {seeds} seeds"]
    for r in reports:
        lines.append(f"{r.platform}: {r.verdicts} verdicts, {r.yes_no} yes/no and {len(r.undecided)} cannot tell on the "
                     f"captured data; {len(r.flips)} flips, {r.became_undecided} became cannot tell over {seeds} seeds")
        for where, why in r.undecided:
            lines.append(f"  cannot tell  {where}: {why}")
        for seed, where, a, b in r.flips:
            lines.append(f"  FLIP seed {seed} {where}: {verdict.word(a)} -> {verdict.word(b)}")
    return "\n".join(lines)
