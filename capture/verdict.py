"""How a yes/no is decided from measurements: three values, from the spread of the repeats.

One rule for every comparison the book draws from records (claims, verdict matrices, chart
branches, the noise test), in one place:

- A value read from records carries its spread: the lowest and highest of the repeats behind it
  (an aggregate over runs, rounds or processes spans all of them; one record alone is a point).
  Exact values (counts, sizes, words) have none.
- A measured value also carries its *noise degree*: how many timings multiply into it (1 for a
  timing or a rate, 2 for a ratio of two timings, 0 for a constant or a count).
- A comparison of exact values is plain true/false. A comparison that involves a measurement is
  **yes** only when the two spreads are apart by more than the noise both sides may still carry,
  **no** only when they are apart the other way by as much, and **cannot tell** in between.
  The margin is NOISE ** (degree of both sides / 2): a timing may be off by a factor NOISE either
  way beyond what its repeats showed (a loaded machine, a slower round), so a comparison of two
  timings needs a gap of more than NOISE² between them before it may flip from yes to no — which it
  then cannot, whatever per-repeat factor in [1/NOISE, NOISE] the measurements were off by.

So `a < b` with two timings says yes when every repeat of a is more than 2x below every repeat of
b, no when every repeat of a is more than 2x above every repeat of b. (The spread is that of the
values compared: the medians of three processes span their three medians; a run's min and max are
records of their own, used where a page compares them, e.g. the fastest kept evaluation.) A claim that means "much
less" says so with a factor (`a < 0.25 * b`) and gets its band around that factor.
"""

from __future__ import annotations

import operator

NOISE = 2.0  # the factor a timing may be off by beyond its recorded spread, either way
CANNOT_TELL = None  # the third value

SYMBOLS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_EXACT = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq, "ne": operator.ne}


def margin(noise_left: int, noise_right: int) -> float:
    return NOISE ** ((noise_left + noise_right) / 2)


def decide(op: str, left: tuple[float, float], right: tuple[float, float], noise: int) -> bool | None:
    """`left op right` for spreads (lo, hi) with `noise` timings in the two sides together.

    op is one of lt, le, gt, ge (eq/ne of measurements are refused by the caller).
    """
    if noise == 0:
        return _EXACT[op](left[0], right[0])
    m = NOISE ** (noise / 2)
    (llo, lhi), (rlo, rhi) = left, right
    if min(llo, rlo) > 0:  # ratios: apart by more than the margin
        below = lhi * m < rlo
        above = llo > rhi * m
    else:  # a difference around zero: only disjoint spreads decide, shifted by the margin's share
        slack = (m - 1) * max(abs(lhi), abs(rhi), abs(llo), abs(rlo))
        below = lhi + slack < rlo
        above = llo > rhi + slack
    if op in ("lt", "le"):
        return True if below else False if above else CANNOT_TELL
    return True if above else False if below else CANNOT_TELL


def kleene_and(values: list[bool | None]) -> bool | None:
    if any(v is False for v in values):
        return False
    return CANNOT_TELL if any(v is CANNOT_TELL for v in values) else True


def kleene_or(values: list[bool | None]) -> bool | None:
    if any(v is True for v in values):
        return True
    return CANNOT_TELL if any(v is CANNOT_TELL for v in values) else False


def kleene_not(v: bool | None) -> bool | None:
    return CANNOT_TELL if v is CANNOT_TELL else not v


def word(v: bool | None) -> str:
    """English, for logs and status."""
    return "yes" if v is True else "no" if v is False else "cannot tell"
