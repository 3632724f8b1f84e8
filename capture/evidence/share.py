"""The verdicts the pages draw from timings, and how many of them the data decide.

Every claim, verdict-matrix row (for each role), chart branch and {cmp} comparison in words (which one is
faster, or 说不清) is a yes/no expression; a comparison `A vs B` counts as `(A) < (B)`, which the rule decides
exactly when the words name a side. On each
platform the ones that compare measurements are *timing verdicts*; this counts how many say yes,
no, about the same (the order undecided, the gap bounded within at most 2x: capture/evidence/verdict.py
`about_same`) and cannot tell there, and names the cannot-tell ones with both sides' spreads widened by their
drift (capture/evidence/verdict.py), so an author sees which experiments need more repeats or processes.
`python -m capture status` prints it; the strict build prints it at the end (capture/sphinxext).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from capture.evidence.alike import groups
from capture.evidence.book import Book
from capture.evidence.claims import find_claims
from capture.evidence.query import REPEATS_SAY, parse_refs
from capture.storage.keys import FragmentKey

_ROWS = re.compile(r"^\s*:rows:\s*(.*)$")
_COLUMNS = re.compile(r"^\s*:columns:\s*(.*)$")
_CHART_CALL = re.compile(r"""\b(?:holds|fails)\(\s*(['"])(.*?)\1\s*\)""")
_CMP = re.compile(r"\{cmp\}`([^`]+)`")


def split_ratio(expr: str) -> tuple[str, str] | None:
    """`X / Y` -> (X, Y) where the division is the expression's outermost operation; None otherwise."""
    depth, cut = 0, []
    for i, ch in enumerate(expr):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "/" and depth == 0:
            cut.append(i)
    if len(cut) != 1:
        return None
    left, right = expr[:cut[0]].strip(), expr[cut[0] + 1:].strip()
    return (left, right) if left and right else None


def verdict_expressions(docs: Path) -> list[tuple[str, str]]:
    """(where, expression) for every claim, verdict-matrix row (each role), chart branch, {cmp} and records-table
    ratio cell that shows its verdict (`faster=`) in the pages."""
    out = [(f"{s.page.name}:{s.line}", s.expr) for s in find_claims(docs)]
    for page in sorted(docs.rglob("*.md")):
        if any(part.startswith("_") for part in page.relative_to(docs).parts):
            continue
        lines = page.read_text(encoding="utf-8").splitlines()
        in_matrix = in_table = False
        table_rows: list[str] = []
        for n, line in enumerate(lines, 1):
            if "{verdict-matrix}" in line:
                in_matrix = True
            if "{records-table}" in line:
                in_table, table_rows = True, []
            if in_table and (m := _ROWS.match(line)):
                table_rows = [key.strip() for _, _, key in (p.partition("=") for p in m.group(1).split(";"))]
            if in_table and (m := _COLUMNS.match(line)):
                # a ratio cell that shows its verdict (`| ratio, faster=A/B`, capture/sphinxext/tables.py): A < B
                for part in m.group(1).split(";"):
                    label, _, cell = part.partition("=")
                    expr, _, style = cell.partition("|")
                    if "faster=" in style and (sides := split_ratio(expr.strip())):
                        for key in table_rows:
                            out.append((f"{page.name}:{n} {label.strip()[:24]} ({key})",
                                        f"({sides[0]}) < ({sides[1]})".replace("{row}", key)))
                in_table = False
            m = _ROWS.match(line)
            if m and in_matrix:
                for part in m.group(1).split(";"):
                    label, _, expr = part.partition("=")
                    for role in ("cpu", "gpu"):
                        out.append((f"{page.name}:{n} {label.strip()[:24]} ({role})", expr.strip().replace("{role}", role)))
                in_matrix = False
            for cm in _CHART_CALL.finditer(line):
                out.append((f"{page.name}:{n} chart", cm.group(2)))
            for cm in _CMP.finditer(line):
                a, vs, b = cm.group(1).partition("|")[0].partition(" vs ")
                if vs:
                    out.append((f"{page.name}:{n} cmp", f"({a.strip()}) < ({b.strip()})"))
    return out


@dataclass(frozen=True)
class Outcome:
    v: bool | None
    why: str
    timed: bool  # a comparison of measurements went into it
    same: float | None = None  # cannot tell which is smaller, but the data bound the gap: about the same, within this


def evaluate(book: Book, exprs: list[tuple[str, str]], platform: str) -> dict[str, Outcome]:
    """where -> outcome, for the expressions that give a yes/no/cannot tell on the platform."""
    out = {}
    for where, expr in exprs:
        ans = book.answer(expr, platform)
        if ans.error or not ans.ok:
            continue
        v = getattr(ans.value, "v", ans.value)
        if isinstance(v, bool) or v is None:
            out[where] = Outcome(v, getattr(ans.value, "why", ""), bool(getattr(ans.value, "timed", False)),
                                 getattr(ans.value, "same", None))
    return out


@dataclass(frozen=True)
class Split:
    """A timing verdict whose fragments were captured in different runs (sittings) on the platform: the rule
    cannot use what one sitting shares (capture/evidence/verdict.py: the run drift, the history of earlier pairs),
    so it may say cannot tell where a paired capture would decide. `command` re-captures them together."""
    where: str
    runs: tuple[tuple[str, tuple[str, ...]], ...]  # (run, fragment keys captured in it)
    command: str


def splits(book: Book, expr: str, platform: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The runs the fragments of an expression's comparisons come from on the platform, where one comparison
    takes its sides from more than one run. `a < b and c < d` states two things: each pair may be its own sitting."""
    runs = book.runs(platform)
    refs = parse_refs(expr)[1]
    by_run: dict[str, set[str]] = {}
    for group in groups(expr):
        in_group: dict[str, set[str]] = {}
        for key in (refs[i].key for i in group):
            if key in runs:
                in_group.setdefault(runs[key], set()).add(key)
        if len(in_group) > 1:
            for r, keys in in_group.items():
                by_run.setdefault(r, set()).update(keys)
    return tuple(sorted((r, tuple(sorted(k))) for r, k in by_run.items()))


def repair_command(book: Book, platform: str, keys: list[str]) -> str:
    """The one command that captures these fragments again, together in one run, on the platform's machine."""
    parsed = [FragmentKey.parse(k) for k in keys]
    exps = sorted({k.exp for k in parsed})
    roles = sorted({k.role for k in parsed})
    if platform == book.local:
        return f"nox -s regenerate -- --only {' '.join(exps)} --device {' '.join(roles)} --force"
    return book.identity(platform).regenerate_command(exps, roles) + " --force"


@dataclass
class Share:
    platform: str
    yes: int = 0
    no: int = 0
    same: list[tuple[str, float]] = field(default_factory=list)  # (where, factor): about the same, within the factor
    undecided: list[tuple[str, str]] = field(default_factory=list)  # (where, why) of timing verdicts
    split: list[Split] = field(default_factory=list)  # timing verdicts whose sides come from different sittings

    @property
    def total(self) -> int:
        return self.yes + self.no + len(self.same) + len(self.undecided)

    @property
    def held_by_drift(self) -> int:
        """Cannot tells whose repeats already agree: only the drift between captures keeps them open, so more
        repeats will not decide them (docs/dev/drift.md)."""
        return sum(REPEATS_SAY in why for _, why in self.undecided)

    @property
    def fraction(self) -> float:
        return len(self.undecided) / self.total if self.total else 0.0


def share(book: Book, exprs: list[tuple[str, str]], platform: str) -> Share:
    s = Share(platform)
    text = dict(exprs)
    for where, o in evaluate(book, exprs, platform).items():
        if not o.timed:
            continue
        if runs := splits(book, text[where], platform):
            keys = [k for _, ks in runs for k in ks]
            s.split.append(Split(where, runs, repair_command(book, platform, keys)))
        if o.v is True:
            s.yes += 1
        elif o.v is False:
            s.no += 1
        elif o.same is not None:
            s.same.append((where, o.same))
        else:
            s.undecided.append((where, o.why))
    return s


def shares(book: Book, docs: Path) -> list[Share]:
    exprs = verdict_expressions(docs)
    return [share(book, exprs, p) for p in book.platforms()]


def where_short(where: str) -> str:
    return where


def render(items: list[Share], details: bool = True) -> str:
    lines = []
    for s in items:
        held = f", {s.held_by_drift} of them only by the drift" if s.undecided else ""
        lines.append(f"{s.platform}: timing verdicts {s.yes} yes, {s.no} no, {len(s.same)} about the same, "
                     f"{len(s.undecided)} cannot tell{held} "
                     f"({100 * s.fraction:.0f} % of {s.total}; drift per kind: docs/drift.json, python -m capture drift)")
        if details:
            for where, k in s.same:
                lines.append(f"  about the same  {where}: within x{k:g}")
            for where, why in s.undecided:
                lines.append(f"  cannot tell  {where}: {why}")
        for sp in s.split:
            sides = "; ".join(f"{', '.join(keys)} in {run}" for run, keys in sp.runs)
            lines.append(f"  split pair  {where_short(sp.where)}: its sides come from different sittings ({sides}); "
                         f"capture them together: {sp.command}")
    return "\n".join(lines)
