"""Formatting recorded values for a reader: one precision rule, units that switch, numbers that stay with their unit.

The rule (docs/dev/authoring.md, "数字"): a measured value is scaled to the unit that puts it in
1–999 (ns/µs/ms/s, B/KiB/MiB/GiB) and shown with 3 significant digits; a ratio with 2 significant
digits under 10 and 3 from 10 on, large ones in 万/亿 (112707 -> 11.3 万倍); a percentage with 2;
an integer count without a unit exactly; a tiny unitless value (an error) as 1.2e-07. Digits are
rounded, never cut, and never more than the rule allows: «103055 倍» next to «9 ms» claims a
precision the measurement does not have. A number and its unit are joined by a no-break space
(NBSP), so a line never ends between them.
"""

from __future__ import annotations

import math
from decimal import Decimal

from capture.evidence.controls import visible
from capture.evidence.query import Range, Value

_TIME = [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")]
_BYTES = [(2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "B")]
_DECIMAL_BYTES = [(1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "B")]  # style "decimal": as a program printed it
_LARGE = [(1e8, "亿"), (1e4, "万")]  # how Chinese names large counts: 11.3 万倍, not 113000 倍
NBSP = "\u00a0"


def with_unit(number: str, unit: str) -> str:
    """`number unit`, never broken across lines (no-break space); the number alone without a unit."""
    return f"{number}{NBSP}{unit}" if unit else number


EXPONENT_FROM = 15  # magnitudes from 1e15 on, and below 1e-15, are written 1.23e+18: no run of zeros claims digits


def sig(x: float, digits: int = 3) -> str:
    """`digits` significant figures, no exponent for everyday magnitudes, no trailing zeros lost; never "-0"."""
    if x == 0:
        return "0"  # -0.0 too: a sign on nothing
    if not math.isfinite(x):
        return f"{x:g}"
    mag = math.floor(math.log10(abs(x)))
    if abs(mag) >= EXPONENT_FROM:  # 5e-324 s is not a 330-digit number; an exact int's float would be wrong digits
        return f"{Decimal(x):.{max(digits - 1, 0)}e}".replace("e-0", "e-").replace("e+0", "e+")
    decimals = digits - 1 - mag
    if decimals <= 0:  # 103055 with 3 digits is 103000: the digits beyond were never measured
        return str(int(round(x, decimals)))
    text = f"{x:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _scale(x: float, unit: str, decimal: bool = False):
    table = _TIME if unit == "s" else (_DECIMAL_BYTES if decimal else _BYTES) if unit == "B" else None
    if table is None:
        return 1.0, unit
    for factor, name in table:
        if abs(x) >= factor:
            return factor, name
    return table[-1]


def fmt_value(v, digits: int = 3, style: str = "") -> str:
    """Format a Value/Range/plain value; style "ratio" gives "2.1 倍", "percent" gives "12%", "decimal" writes
    bytes in powers of 1000 (9.7 MB), the way a program's output printed them, where a sentence quotes it."""
    if isinstance(v, Range):
        factor, unit = _scale(float(sig(max(abs(v.lo), abs(v.hi)), digits)), v.unit)
        lo, hi = sig(v.lo / factor, digits), sig(v.hi / factor, digits)
        body = lo if lo == hi else f"{lo}–{hi}"
        return with_unit(body, unit)
    x = v.v if isinstance(v, Value) else v
    unit = v.unit if isinstance(v, Value) else ""
    if isinstance(x, bool):
        return "是" if x else "否"
    if isinstance(x, str):
        return visible(x)  # a recorded text, shown as text: control characters as symbols
    if x is None:
        return "—"
    if style == "ratio":
        return _ratio(x)
    if style == "percent":
        return f"{sig(x * 100, 2)}%"
    if not unit and (isinstance(x, int) or (float(x).is_integer() and abs(x) < 2**53)):
        return str(int(x))  # a count or a size: exact (a float past 2**53 has no exact digits to show)
    if not unit and x != 0 and abs(x) < 1e-3:
        return f"{x:.{max(digits - 1, 0)}e}"  # errors like 1.2e-07 read better than 0.00000012
    factor, unit = _scale(float(sig(x, digits)), unit, style == "decimal")  # rounded first: 0.99996 s is 1 s, not 1000 ms
    if isinstance(x, int) and factor == 1:
        return with_unit(sig(x, digits), unit)  # exact: x / 1 would round an int past a double's digits first
    return with_unit(sig(x / factor, digits), unit)


def _ratio(x: float) -> str:
    digits = 2 if abs(x) < 10 else 3
    for factor, word in _LARGE:
        if abs(x) >= factor:
            return with_unit(sig(x / factor, 3), word + "倍")
    return with_unit(sig(x, digits), "倍")
