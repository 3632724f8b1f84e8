"""Formatting recorded values for a reader: units switch (ns/µs/ms/s, B/KiB/MiB/GiB), sensible precision."""

from __future__ import annotations

import math

from capture.query import Range, Value

_TIME = [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")]
_BYTES = [(2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "B")]


def sig(x: float, digits: int = 3) -> str:
    """`digits` significant figures, no exponent for everyday magnitudes, no trailing zeros lost."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    mag = math.floor(math.log10(abs(x)))
    decimals = max(digits - 1 - mag, 0)
    text = f"{x:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _scale(x: float, unit: str):
    table = _TIME if unit == "s" else _BYTES if unit == "B" else None
    if table is None:
        return 1.0, unit
    for factor, name in table:
        if abs(x) >= factor:
            return factor, name
    return table[-1]


def fmt_value(v, digits: int = 3, style: str = "") -> str:
    """Format a Value/Range/plain value; style "ratio" gives "2.1 倍", "percent" gives "12%"."""
    if isinstance(v, Range):
        factor, unit = _scale(max(abs(v.lo), abs(v.hi)), v.unit)
        lo, hi = sig(v.lo / factor, digits), sig(v.hi / factor, digits)
        body = lo if lo == hi else f"{lo}–{hi}"
        return f"{body} {unit}".strip()
    x = v.v if isinstance(v, Value) else v
    unit = v.unit if isinstance(v, Value) else ""
    if isinstance(x, bool):
        return "是" if x else "否"
    if isinstance(x, str):
        return x
    if x is None:
        return "—"
    if style == "ratio":
        return f"{sig(x, 2 if x < 10 else 3)} 倍"
    if style == "percent":
        return f"{sig(x * 100, 2)}%"
    if not unit and x != 0 and abs(x) < 1e-3:
        return f"{x:.{max(digits - 1, 0)}e}"  # errors like 1.2e-07 read better than 0.00000012
    factor, unit = _scale(x, unit)
    return f"{sig(x / factor, digits)} {unit}".strip()
