"""Claims: predicates over records, written in a page next to the sentence they support.

    :::{claim} median(burn-drop@gpu:drop.dropped_per_eval) < 0.1 * median(burn-drop@gpu:drop.kept.median)
    丢掉的结果几乎不花时间。
    :::

A claim is checked on every captured platform that holds all the fragments it refers to.
The docs build warns (an error under -W) where one fails; `python -m capture status`
lists the failing ones without building the docs (this module has no Sphinx in it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from capture.book import Book
from capture.paths import Layout
from capture.query import MissingData, QueryError, parse_refs

CLAIM_LINE = re.compile(r"^\s*(?:`{3,}|:{3,})\{claim\}\s+(.+?)\s*$")


@dataclass(frozen=True)
class Verdict:
    platform: str
    holds: bool | None  # None: could not be evaluated there
    why: str = ""


def judge(book: Book, expr: str, platforms: list[str] | None = None) -> list[Verdict]:
    """Evaluate a claim on each platform that has its data (or on the given platforms)."""
    plats = platforms if platforms is not None else book.platforms_with(expr)
    out = []
    for p in plats:
        try:
            v = book.evaluate(expr, p)
        except MissingData as e:
            out.append(Verdict(p, None, str(e)))
            continue
        except QueryError as e:
            out.append(Verdict(p, None, str(e)))
            continue
        val = getattr(v, "v", v)
        if not isinstance(val, bool):
            out.append(Verdict(p, None, f"the expression gives {val!r}, not true/false"))
        else:
            out.append(Verdict(p, val, "" if val else "false with the captured data"))
    return out


def find_claims(docs: Path) -> list[tuple[Path, int, str, list[str] | None]]:
    """Every claim directive in the pages: (file, line, expression, its :platforms: or None)."""
    out = []
    for page in sorted(docs.rglob("*.md")):
        if any(part.startswith("_") for part in page.relative_to(docs).parts):
            continue
        lines = page.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines, 1):
            m = CLAIM_LINE.match(line)
            if m:
                opt = re.match(r"\s*:platforms:\s*(.+)", lines[n]) if n < len(lines) else None
                plats = [p.strip() for p in opt.group(1).split(",")] if opt else None
                out.append((page, n, m.group(1), plats))
    return out


def failing_claims(layout: Layout, store=None) -> list[dict]:
    book = Book(layout.root, [])
    out = []
    for page, line, expr, plats in find_claims(layout.root / "docs"):
        where = f"{layout.rel(page)}:{line}"
        try:
            verdicts = judge(book, expr, plats)
        except QueryError as e:
            out.append({"platform": "-", "where": where, "text": expr, "why": str(e)})
            continue
        if not verdicts:
            refs = parse_refs(expr)[1]
            if refs and all(book.expected_absent(r.exp, r.role) for r in refs):
                continue  # pending: no captured platform could have produced its data yet
            out.append({"platform": "-", "where": where, "text": expr, "why": "no captured platform has its data"})
        for v in verdicts:
            if v.holds is not True:
                out.append({"platform": v.platform, "where": where, "text": expr, "why": v.why})
    return out
