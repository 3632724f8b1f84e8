"""Whether a program's printed durations agree with the records it wrote, to the digits it prints.

A page shows a fragment's output text and quotes its records in prose (`{num}`): the two must not disagree. A
printed duration agrees when some timing record of the same fragment rounds to it at the printed digits; it
disagrees when none does but one lies within one unit of its last whole digit: the same figure printed wrongly
(cut to whole nanoseconds and shown with a false 「.0」, say), not another figure. A printed duration with no
record near it (a total, a figure the program does not record) says nothing either way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from capture.evidence.fmt import _TIME

UNITS = {unit: scale for scale, unit in _TIME} | {"us": 1e-6}  # the units the book prints, and ASCII µ
_DURATION = re.compile(r"(?<![\w.])(\d+(?:\.(\d+))?)\s?(ns|µs|us|ms|s)(?![\w])")


@dataclass(frozen=True)
class Disagreement:
    line: int  # 1-based line of the output text
    printed: str  # as printed, e.g. "18.0ns"
    record: float  # the nearest timing record, in seconds

    def __str__(self) -> str:
        return f"line {self.line}: prints {self.printed}, the record nearest it is {self.record:.6g} s"


def disagreements(text: str, records: list[dict]) -> list[Disagreement]:
    """Printed durations in `text` that no timing record (unit "s") of `records` rounds to, though one is near."""
    values = [float(r["value"]) for r in records
              if r.get("unit") == "s" and isinstance(r.get("value"), (int, float)) and not isinstance(r["value"], bool)]
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in _DURATION.finditer(line):
            shown, decimals, unit = float(m.group(1)), len(m.group(2) or ""), m.group(3)
            scale = UNITS[unit]
            in_unit = [v / scale for v in values]
            half = 0.5 * 10 ** -decimals * (1 + 1e-9)  # what rounding to the printed digits may hide
            if any(abs(v - shown) <= half for v in in_unit):
                continue
            near = [v for v in in_unit if abs(v - shown) < 1.0]
            if near:
                best = min(near, key=lambda v: abs(v - shown))
                out.append(Disagreement(n, m.group(0), best * scale))
    return out
