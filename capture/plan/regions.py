"""Regions of real files, delimited by ANCHOR markers in comments (mdBook style, any comment syntax).

    # ANCHOR: name          // ANCHOR: name
    ...                     ...
    # ANCHOR_END: name      // ANCHOR_END: name

Marker lines of other regions inside the extracted one are dropped. A missing region is
an error (mdBook stays silent; a book that promises real files must not).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

_START = re.compile(r"ANCHOR:\s*([\w.-]+)")
_END = re.compile(r"ANCHOR_END:\s*([\w.-]+)")


class RegionError(Exception):
    pass


@dataclass(frozen=True)
class Region:
    text: str
    first_line: int  # 1-based line number of the region's first line in the file
    last_line: int


def names(source: str) -> list[str]:
    return [m.group(1) for line in source.splitlines() if (m := _START.search(line)) and not _END.search(line)]


def extract(source: str, name: str | None) -> Region:
    """The region `name` (or the whole file without marker lines when `name` is None), dedented."""
    lines = source.splitlines()
    if name is None:
        body = [(i, l) for i, l in enumerate(lines, 1) if not (_START.search(l) or _END.search(l))]
    else:
        start = end = None
        for i, l in enumerate(lines, 1):
            m = _START.search(l)
            if m and m.group(1) == name and not _END.search(l):
                if start is not None:
                    raise RegionError(f"region {name!r} starts twice (lines {start} and {i})")
                start = i
            m = _END.search(l)
            if m and m.group(1) == name and start is not None and end is None:
                end = i
        if start is None:
            known = ", ".join(names(source)) or "none"
            raise RegionError(f"no region {name!r} (regions in this file: {known})")
        if end is None:
            raise RegionError(f"region {name!r} opened at line {start} is never closed with ANCHOR_END: {name}")
        body = [(i, l) for i, l in enumerate(lines, 1) if start < i < end and not (_START.search(l) or _END.search(l))]
    if not body:
        raise RegionError(f"region {name!r} is empty")
    text = textwrap.dedent("\n".join(l for _, l in body))
    return Region(text=text, first_line=body[0][0], last_line=body[-1][0])


def select_lines(text: str, spec: str | None) -> str:
    """Keep lines by a spec like "1-3, 8-" (1-based, inclusive); gaps become a visible "..." line."""
    if not spec:
        return text
    lines = text.splitlines()
    keep: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        m = re.fullmatch(r"(-?\d*)\s*-\s*(-?\d*)|(-?\d+)", part)
        if not m:
            raise RegionError(f"bad line selection {part!r} (use e.g. '1-3, 8-')")
        if m.group(3):
            a = b = int(m.group(3))
        else:
            a = int(m.group(1)) if m.group(1) else 1
            b = int(m.group(2)) if m.group(2) else len(lines)
        a = a if a > 0 else len(lines) + a + 1
        b = b if b > 0 else len(lines) + b + 1
        if not (1 <= a <= b <= len(lines)):
            raise RegionError(f"line selection {part!r} is outside the {len(lines)} lines of the output")
        keep.extend(range(a, b + 1))
    out, prev = [], 0
    for n in sorted(set(keep)):
        if n != prev + 1:
            out.append("...")
        out.append(lines[n - 1])
        prev = n
    if prev < len(lines):
        out.append("...")
    return "\n".join(out)
