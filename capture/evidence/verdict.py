"""How a yes/no is decided from measurements: three values, from the spreads and the measured drift.

One rule for every comparison the book draws from records (claims, verdict matrices, chart
branches, the noise test), in one place:

- A value read from records carries its spread: the lowest and highest of the repeats behind it
  (an aggregate over runs, rounds or processes spans all of them; one record alone is a point).
  Exact values (counts, sizes, words) have none.
- A measured value also carries its *drift*: how far it may move from one capture to the next on its
  machine, beyond what its repeats showed, as ln of a factor. A timing record's drift is the one
  measured for its kind of figure on its platform (capture/evidence/drift.py: a cold first call, a device
  time, a fastest, typical or slowest repeat, a per-step figure...; `docs/drift.json`, recomputed by
  `python -m capture drift`). A product or ratio of measurements adds their drifts (the factors
  multiply); a sum or an aggregate keeps the largest. Exact values have 0.
- A comparison of two measurements the rule cannot order may still bound them: where their ratio, both spreads
  widened the same way, stays within a small factor (SAME_WITHIN, at most 2), the answer is **about the same**,
  stated with that factor (`about_same`); where it does not, it is cannot tell: the data bound neither the order
  nor the gap. So a comparison has four answers: A smaller, B smaller, about the same (within k), cannot tell.
- A comparison of exact values is plain true/false. A comparison that involves a measurement widens
  each side's spread by its drift (lo / f, hi * f) and is **yes** when the widened spreads do not
  overlap the way the comparison says, **no** when they do not overlap the other way, and
  **cannot tell** when they overlap.

So `a < b` with two timings says yes only when a's slowest repeat, raised by a's drift, stays below
b's fastest repeat, lowered by b's drift: every capture the history shows would have ordered them the
same way. Two figures of one kind from the same process (the same fragment and process, both sides
aggregated the same way over the same processes) move together: where the history shows their ratio
moves less than their two drifts together (the 95th percentile of such ratios' moves; a pair of figures
whose ratio moved more keeps its own largest move), each side is widened by half of that instead (`shared`). Two
figures of one kind captured in one run (capture/evidence/runs.py: one sitting on one machine) share that
machine's state too: where the history shows their ratio moves less than their two drifts together, each
side is widened by half of that (`run`; a figure that keeps its own drift, by half of its own largest move
against the other figures of its runs, and a pair whose ratio moved more, by half of its own). A kind of figure a platform has no history for (and every kind of a platform not in the
table) takes DEFAULT, the old fixed rule: a factor 2 between two timings, sqrt(2) on each side. A claim
that means "much less" says so with a factor (`a < 0.25 * b`) and gets its band around that factor.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from pathlib import Path

from capture.evidence import driftfile
from capture.evidence.drift import DEFAULT, figure_label, kind

CANNOT_TELL = None  # the third value

SYMBOLS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_EXACT = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq, "ne": operator.ne}
MIN_DRIFT = math.log(1.001)  # a measured value always carries some drift (0 means exact)


class Drifts:
    """The measured drift table (docs/drift.json): per platform and kind, the factor a timing may move by."""

    def __init__(self, table: dict | None = None):
        self.table = table or {}

    @classmethod
    def load(cls, root: Path) -> Drifts:
        """The committed table; none (a throwaway book) means DEFAULT for every kind. A bad one (not a regular file,
        not JSON, a drift that is not a finite factor >= 1, a newer format...) is a driftfile.DataFileError: one
        line with the path, the line and the command that rebuilds it (capture/evidence/driftfile.py)."""
        return cls(driftfile.read(root))

    def _row(self, platform: str | None, kind_: str) -> dict:
        return (self.table.get("platforms") or {}).get(platform or "", {}).get(kind_) or {}

    def factor(self, platform: str | None, kind_: str) -> float:
        return float(self._row(platform, kind_).get("drift") or DEFAULT)

    def own(self, platform: str | None, label: str) -> float | None:
        """The factor of a figure that moved more than its kind's drift (drift.json's `figures`), else None."""
        f = ((self.table.get("figures") or {}).get(platform or "") or {}).get(label)
        return float(f) if f else None

    def of_platform(self, platform: str | None, runs: dict[str, str] | None = None,
                    starts: dict[str, str] | None = None) -> PlatformDrift:
        """`runs`: fragment key -> the run it was captured in (capture/evidence/runs.py), for the run drift;
        `starts`: fragment key -> its capture's `started`, for the history of earlier captures."""
        return PlatformDrift(self, platform, runs, starts)

    def of_record(self, platform: str | None):
        """drift(name, tags) -> ln factor, for the records of one platform."""
        return self.of_platform(platform).record


class PlatformDrift:
    """One platform's drifts, as the query language asks for them."""

    def __init__(self, drifts: Drifts, platform: str | None, runs: dict[str, str] | None = None,
                 starts: dict[str, str] | None = None):
        self.drifts, self.platform, self.runs, self.starts = drifts, platform, runs or {}, starts or {}
        self._history: dict[str, list[tuple[str, int, list[float]]]] | None = None

    def _figures(self) -> dict[str, list[tuple[str, int, list[float]]]]:
        """figure label -> its captures in the history table: (started, run number, repeats)."""
        if self._history is None:
            table = ((self.drifts.table.get("history") or {}).get(self.platform or "") or {})
            caps = table.get("captures") or []
            self._history = {label: [(caps[i][1], caps[i][2]) + (vs,) for i, vs in entries if 0 <= i < len(caps)]
                             for label, entries in (table.get("figures") or {}).items()}
        return self._history

    def earlier(self, left: Side, right: Side) -> list[Paired] | None:
        """The earlier captures of two figures taken in one run (one sitting), before the ones compared now:
        each side's spread there, aggregated and scaled as now. None when the history cannot speak for them: a side
        that is not one whole figure, or the two compared now come from different runs (a split pair: `status`
        names it)."""
        if not (left.figure and right.figure and left.scale and right.scale and left.key and right.key):
            return None
        now = {self.runs.get(left.key), self.runs.get(right.key)}
        if len(now) != 1 or None in now:
            return None
        figs = self._figures()
        cut = (self.starts.get(left.key, ""), self.starts.get(right.key, ""))
        lcaps = {run: (started, vs) for started, run, vs in figs.get(left.figure, []) if started < cut[0]}
        rcaps = {run: (started, vs) for started, run, vs in figs.get(right.figure, []) if started < cut[1]}
        return [Paired(max(lcaps[r][0], rcaps[r][0]), left.spread_of(lcaps[r][1]), right.spread_of(rcaps[r][1]))
                for r in sorted(lcaps.keys() & rcaps.keys(), key=lambda r: lcaps[r][0])]

    def kind(self, name: str, tags: dict) -> str:
        return kind(name, tags)

    def level(self, kind_: str) -> float:
        """ln of a kind's drift on this platform: what every figure of it moves by at most but those that moved more."""
        return max(MIN_DRIFT, math.log(self.drifts.factor(self.platform, kind_)))

    def record(self, name: str, tags: dict, key: str | None = None) -> float:
        """A timing record's drift: ln of its kind's factor on this platform, or of its figure's own where that
        figure (of fragment `key`) moved more in the history."""
        d = self.level(kind(name, tags))
        own = self.drifts.own(self.platform, figure_label(key, name, tags)) if key else None
        return max(d, math.log(own)) if own else d

    def shared(self, kind_: str) -> float | None:
        """ln of how far the ratio of two figures of this kind from one process may move: the kind's level, where
        the history shows that is less than the two drifts together; None elsewhere. (A pair whose ratio moved
        more is caught by the history check of `with_history`: two figures of one process are always paired.)"""
        s = self.drifts._row(self.platform, kind_).get("shared")
        return math.log(float(s)) if s else None

    def run_shared(self, kind_: str, sources: tuple[str, ...], left: str = "", right: str = "") -> float | None:
        """ln of how far the ratio of two figures of this kind captured in one run may move, when every fragment in
        `sources` comes from one run and neither figure (`left`, `right`: labels) keeps its own drift; None
        elsewhere. The kind's level (drift.json's `run`, measured without the figures that keep their own drift).
        A pair that moved more is caught by `with_history`, which checks the pair's earlier captures in one run."""
        s = self.drifts._row(self.platform, kind_).get("run")
        runs = {self.runs.get(src) for src in sources}
        if not s or len(runs) != 1 or None in runs:
            return None
        if any(self.drifts.own(self.platform, fig) for fig in (left, right)):
            return None
        return math.log(float(s))


DEFAULT_DRIFTS = Drifts()

# The factors "about the same" is stated with (「差不多，相差不到 1.3 倍」): the smallest that bounds the ratio of two
# measurements the rule cannot order. A bound wider than the last is no answer: that stays cannot tell.
SAME_WITHIN = (1.1, 1.2, 1.3, 1.5, 2.0)

# Two figures compared from one sitting decide their order from history where the drift cannot: when this many
# captures in one run each (the one compared now among them) every one put them in the same order by their
# repeats alone (`with_history`).
HISTORY_MIN = 3
# ... and where every one of them kept the two at least this factor apart: two figures a few per cent apart in
# every capture are about the same to a reader, and the next capture may well order them the other way.
HISTORY_GAP = SAME_WITHIN[0]


@dataclass(frozen=True)
class Side:
    """What the history needs of one side of a comparison: the figure it reads (drift.figure_label), its fragment,
    how its repeats were aggregated ("" for a figure of one record) and the constant it was scaled by."""
    figure: str
    key: str
    agg: str
    scale: float

    def spread_of(self, repeats: list[float]) -> tuple[float, float]:
        """The spread this side had in another capture whose figure had these repeats (as query._aggregate spans
        them: a median or mean spans all repeats, a min or max is its own)."""
        lo, hi = min(repeats), max(repeats)
        if self.agg == "min":
            hi = lo
        elif self.agg == "max":
            lo = hi
        return lo * self.scale, hi * self.scale


@dataclass(frozen=True)
class Paired:
    started: str  # the later of the two captures' start
    left: tuple[float, float]
    right: tuple[float, float]


@dataclass(frozen=True)
class Judged:
    """A comparison's answer with its history: how many captures of the two in one sitting agreed, the smallest
    gap they showed (a factor), and the capture that disagreed, if one did."""
    value: bool | None
    captures: int = 0  # captures in one run, this one included, that ordered them the way `value` says
    gap: float | None = None  # the smallest factor between the two sides' repeats over those captures
    disagreed: str = ""  # `started` of a capture whose repeats ordered them the other way
    by_history: bool = False  # the drift alone could not tell; the history decided
    same: float | None = None  # undecided, but every capture (HISTORY_MIN or more) kept their ratio within this


def gap(op: str, left: tuple[float, float], right: tuple[float, float]) -> float:
    """How far apart two spreads lie the way `op` says, as a factor (below 1: they overlap, or lie the other way)."""
    (llo, lhi), (rlo, rhi) = left, right
    if min(llo, rlo) <= 0:
        return 0.0
    return rlo / lhi if op in ("lt", "le") else llo / rhi


def with_history(op: str, res: bool | None, left: tuple[float, float], right: tuple[float, float],
                 earlier: list[Paired] | None) -> Judged:
    """The drift rule's answer `res` for `left op right`, checked against the earlier captures of the same two
    figures in one sitting each:

    - decided by the drift, it stands unless an earlier capture's repeats ordered them the other way (then cannot
      tell, naming that capture);
    - undecided by the drift, it is decided where at least HISTORY_MIN captures (this one included) each ordered
      them the same way by their repeats alone, and none the other way.

    So no answer ever contradicts a capture of the history, and a later capture that disagrees turns a yes into
    cannot tell, never into a no."""
    if earlier is None:
        return Judged(res)
    captures = [*earlier, Paired("", left, right)]
    # undecided: the gap may still be bounded, capture by capture, as the history saw it (Kalibera and Jones:
    # the variation between sittings is measured where it happens, not assumed)
    same = _within([(c.left, c.right) for c in captures]) if len(captures) >= HISTORY_MIN else None
    orders = [by_repeats(op, c.left, c.right) for c in captures]
    want = res if res is not None else orders[-1]
    if want is None:
        return Judged(res, same=same)
    against = [c.started or "now" for c, o in zip(captures, orders) if o is (not want)]
    if against:
        return Judged(CANNOT_TELL, disagreed=against[0], same=same)
    agree = [c for c, o in zip(captures, orders) if o is want]
    way = op if want else _FLIP[op]  # a no: how far apart they lie the other way
    closest = min(gap(way, c.left, c.right) for c in agree)
    if res is None and (len(agree) < HISTORY_MIN or len(agree) < len(captures) or closest < HISTORY_GAP):
        return Judged(CANNOT_TELL, len(agree), closest, same=same)
    return Judged(want, len(agree), closest, by_history=res is None)


_FLIP = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}


def pair_drifts(left_drift: float, right_drift: float, shared: float | None) -> tuple[float, float]:
    """The drifts a comparison widens its two sides by: their own, or for two figures of one kind from the
    same process (query.Value.proc), half the measured drift of their ratio each where that is smaller."""
    if shared is not None and shared < left_drift + right_drift:
        return shared / 2, shared / 2
    return left_drift, right_drift


def widened(spread: tuple[float, float], drift: float) -> tuple[float, float]:
    """A spread widened by a drift (ln factor): positive bounds scale, others shift by the same share."""
    lo, hi = spread
    f = math.exp(drift)
    if lo > 0:
        return lo / f, hi * f
    slack = (f - 1) * max(abs(lo), abs(hi))
    return lo - slack, hi + slack


def decide(op: str, left: tuple[float, float], right: tuple[float, float],
           left_drift: float, right_drift: float) -> bool | None:
    """`left op right` for spreads (lo, hi), each widened by its drift (ln factor; 0 for exact values).

    op is one of lt, le, gt, ge (eq/ne of measurements are refused by the caller).
    """
    if left_drift == 0 and right_drift == 0:
        return _EXACT[op](left[0], right[0])
    return by_repeats(op, widened(left, left_drift), widened(right, right_drift))




def _within(pairs: list[tuple[tuple[float, float], tuple[float, float]]]) -> float | None:
    """The smallest factor of SAME_WITHIN that bounds the ratio of every (left, right) pair of spreads."""
    if not pairs or min(min(lo for lo, _ in pr) for pr in pairs) <= 0:
        return None
    gap = max(max(lhi / rlo, rhi / llo) for (llo, lhi), (rlo, rhi) in pairs)
    return next((k for k in SAME_WITHIN if gap < k), None)


def about_same(left: tuple[float, float], right: tuple[float, float],
               left_drift: float, right_drift: float) -> float | None:
    """For two positive measurements whose order the rule cannot tell: the smallest factor k of SAME_WITHIN such that
    the ratio left / right, both spreads widened by their drift (the same widening that `decide` uses), stays within
    1/k .. k; None where even 2 does not bound it (then the data bound neither the order nor the gap).

    It holds for every capture the drift allows, exactly as a yes does: each side moves at most by its drift, so
    the ratio stays inside the widened quotient."""
    return _within([(widened(left, left_drift), widened(right, right_drift))])


def by_repeats(op: str, left: tuple[float, float], right: tuple[float, float]) -> bool | None:
    """What one capture's repeats alone say of `left op right`, before any drift: yes or no where every repeat
    of one side lies on one side of every repeat of the other, None where the spreads overlap. For a comparison
    the rule cannot tell, this says why: the repeats themselves overlap (steadier repeats may decide it), or
    they agree and only the drift between captures keeps it open (capture/sphinxext/comparisons.py,
    capture/evidence/share.py)."""
    (llo, lhi), (rlo, rhi) = left, right
    below, above = lhi < rlo, llo > rhi
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
