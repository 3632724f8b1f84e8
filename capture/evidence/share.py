"""The verdicts the pages draw from timings, and how many of them the data decide.

Every claim, verdict-matrix row (for each role), chart branch and {cmp} comparison in words (which one is
faster, or 说不清) is a yes/no expression; a comparison `A vs B` counts as `(A) < (B)`, which the rule decides
exactly when the words name a side. On each
platform the ones that compare measurements are *timing verdicts*; this counts how many say yes,
no and cannot tell there, and names the cannot-tell ones with both sides' spreads widened by their
drift (capture/evidence/verdict.py), so an author sees which experiments need more repeats or processes.
`python -m capture status` prints it; the strict build prints it at the end (capture/sphinxext).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from capture.evidence.book import Book
from capture.evidence.claims import find_claims
from capture.evidence.query import REPEATS_SAY

_ROWS = re.compile(r"^\s*:rows:\s*(.*)$")
_CHART_CALL = re.compile(r"""\b(?:holds|fails)\(\s*(['"])(.*?)\1\s*\)""")
_CMP = re.compile(r"\{cmp\}`([^`]+)`")


def verdict_expressions(docs: Path) -> list[tuple[str, str]]:
    """(where, expression) for every claim, verdict-matrix row (each role), chart branch and {cmp} in the pages."""
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


def evaluate(book: Book, exprs: list[tuple[str, str]], platform: str) -> dict[str, Outcome]:
    """where -> outcome, for the expressions that give a yes/no/cannot tell on the platform."""
    out = {}
    for where, expr in exprs:
        ans = book.answer(expr, platform)
        if ans.error or not ans.ok:
            continue
        v = getattr(ans.value, "v", ans.value)
        if isinstance(v, bool) or v is None:
            out[where] = Outcome(v, getattr(ans.value, "why", ""), bool(getattr(ans.value, "timed", False)))
    return out


@dataclass
class Share:
    platform: str
    yes: int = 0
    no: int = 0
    undecided: list[tuple[str, str]] = field(default_factory=list)  # (where, why) of timing verdicts

    @property
    def total(self) -> int:
        return self.yes + self.no + len(self.undecided)

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
    for where, o in evaluate(book, exprs, platform).items():
        if not o.timed:
            continue
        if o.v is True:
            s.yes += 1
        elif o.v is False:
            s.no += 1
        else:
            s.undecided.append((where, o.why))
    return s


def shares(book: Book, docs: Path) -> list[Share]:
    exprs = verdict_expressions(docs)
    return [share(book, exprs, p) for p in book.platforms()]


def render(items: list[Share], details: bool = True) -> str:
    lines = []
    for s in items:
        held = f", {s.held_by_drift} of them only by the drift" if s.undecided else ""
        lines.append(f"{s.platform}: timing verdicts {s.yes} yes, {s.no} no, {len(s.undecided)} cannot tell{held} "
                     f"({100 * s.fraction:.0f} % of {s.total}; drift per kind: docs/drift.json, python -m capture drift)")
        if details:
            for where, why in s.undecided:
                lines.append(f"  cannot tell  {where}: {why}")
    return "\n".join(lines)
