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
import statistics
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

    def earlier(self, left: Side | tuple[Side, ...], right: Side | tuple[Side, ...]) -> list[Paired] | None:
        """The earlier captures of two figures taken in one run (one sitting), before the ones compared now:
        each side's spread and value there, aggregated and scaled as now. A side may be a sum of figures (a tuple:
        each part taken from that run too). None when the history cannot speak for them: a side that is not whole
        figures, or the figures compared now come from different runs (a split pair: `status` names it)."""
        lparts = left if isinstance(left, tuple) else (left,)
        rparts = right if isinstance(right, tuple) else (right,)
        parts = (*lparts, *rparts)
        if not parts or not all(p.figure and p.scale and p.key for p in parts):
            return None
        now = {self.runs.get(p.key) for p in parts}
        if len(now) != 1 or None in now:
            return None
        figs = self._figures()
        # each part's captures before the one compared now, by run
        caps = [{run: (started, vs) for started, run, vs in figs.get(p.figure, [])
                 if started < self.starts.get(p.key, "")} for p in parts]
        common = set.intersection(*(set(c) for c in caps))

        def side(ps: tuple[Side, ...], cs: list[dict], r) -> tuple[tuple[float, float], float]:
            spreads = [p.spread_of(c[r][1]) for p, c in zip(ps, cs)]
            return (sum(lo for lo, _ in spreads), sum(hi for _, hi in spreads)), \
                sum(p.center_of(c[r][1]) for p, c in zip(ps, cs))

        out = []
        for r in sorted(common, key=lambda r: max(c[r][0] for c in caps)):
            (ls, lc), (rs, rc) = side(lparts, caps[:len(lparts)], r), side(rparts, caps[len(lparts):], r)
            out.append(Paired(max(c[r][0] for c in caps), ls, rs, (lc, rc)))
        return out

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

# Two figures compared from one sitting decide their order from history where the drift cannot: from this many
# captures in one run each (the one compared now among them), by the ratio of the two in each (`with_history`).
HISTORY_MIN = 3

# t quantiles (0.975, two-sided 95 %) by degrees of freedom, for the prediction interval of the next sitting's
# ratio (`ratio_interval`); beyond the table, the nearest smaller entry (a wider interval).
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
         12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042, 60: 2.000}


def t975(df: int) -> float:
    return _T975[max(k for k in _T975 if k <= df)]


def ratio_interval(centers: list[tuple[float, float]]) -> tuple[float, float] | None:
    """Where the next sitting's ln(left / right) will lie, from the ratios of the sittings seen (one per capture in
    one run): mean ± t(n-1) · sd · sqrt(1 + 1/n), the 95 % prediction interval of a normal sample. The sittings
    are the level where the variance is (Kalibera and Jones 2013): the two sides of one sitting share its machine
    state, so their ratio moves less than either side, and the spread of that ratio over sittings is measured, not
    assumed. None with fewer than HISTORY_MIN sittings or a non-positive value."""
    if len(centers) < HISTORY_MIN or min(min(c) for c in centers) <= 0:
        return None
    xs = [math.log(a / b) for a, b in centers]
    n = len(xs)
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t975(n - 1) * sd * math.sqrt(1 + 1 / n)
    return mean - half, mean + half


@dataclass(frozen=True)
class Side:
    """What the history needs of one side of a comparison: the figure it reads (drift.figure_label), its fragment,
    how its repeats were aggregated ("" for a figure of one record) and the constant it was scaled by."""
    figure: str
    key: str
    agg: str
    scale: float

    def center_of(self, repeats: list[float]) -> float:
        """The value this side had in another capture whose figure had these repeats (as query._aggregate takes it:
        a median or mean as the median, a min or max as itself)."""
        v = min(repeats) if self.agg == "min" else max(repeats) if self.agg == "max" else statistics.median(repeats)
        return v * self.scale

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
    centers: tuple[float, float] | None = None  # the two values compared (median, min...), for their ratio


@dataclass(frozen=True)
class Judged:
    """A comparison's answer with its history: how many captures of the two in one sitting agreed, the smallest
    gap they showed (a factor), and the capture that disagreed, if one did."""
    value: bool | None
    captures: int = 0  # captures in one run, this one included, that ordered them the way `value` says
    gap: float | None = None  # the smallest factor between the two sides over those captures (their values' ratio)
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
                 earlier: list[Paired] | None, centers: tuple[float, float] | None = None) -> Judged:
    """The drift rule's answer `res` for `left op right`, checked against the earlier captures of the same two
    figures in one sitting each (`centers`: the two values compared now):

    - decided by the drift, it stands unless an earlier capture's repeats ordered them the other way (then cannot
      tell, naming that capture);
    - undecided by the drift, it is decided by the sittings' ratios where at least HISTORY_MIN captures (this one
      included) are paired and none ordered them the other way: yes or no where the prediction interval of the next
      sitting's ratio (`ratio_interval`) lies on one side of 1; about the same where it lies within a factor of
      SAME_WITHIN (or every capture's spreads did); else cannot tell.

    So no answer ever contradicts a capture of the history, and a later capture that disagrees turns a yes into
    cannot tell, never into a no."""
    if earlier is None:
        return Judged(res)
    captures = [*earlier, Paired("", left, right, centers)]
    ratios = [c.centers for c in captures if c.centers]
    interval = ratio_interval(ratios) if len(ratios) == len(captures) else None
    bounds = [_within([(c.left, c.right) for c in captures]) if len(captures) >= HISTORY_MIN else None]
    by_ratio = None
    if interval is not None:
        lo, hi = interval
        bounds.append(next((k for k in SAME_WITHIN if max(-lo, hi) < math.log(k)), None))
        if hi < 0 or lo > 0:  # the next sitting's left / right stays on one side of 1
            by_ratio = (hi < 0) == (op in ("lt", "le"))
    same = min((k for k in bounds if k), default=None)
    # a drift-decided answer is checked against the captures' repeats; one the ratios decide, also their values
    orders = [by_repeats(op, c.left, c.right) if res is not None else _order(op, c) for c in captures]
    want = res if res is not None else by_ratio if by_ratio is not None else orders[-1]
    if want is None:
        return Judged(res, same=same)
    against = [c.started or "now" for c, o in zip(captures, orders) if o is (not want)]
    if against:
        return Judged(CANNOT_TELL, disagreed=against[0], same=same)
    agree = [c for c, o in zip(captures, orders) if o is want]
    way = op if want else _FLIP[op]  # a no: how far apart they lie the other way
    closest = min((_ratio_gap(way, c) for c in agree), default=None)
    if res is None and by_ratio is None:
        return Judged(CANNOT_TELL, len(agree), closest, same=same)
    return Judged(want, len(agree), closest, by_history=res is None)


def _order(op: str, c: Paired) -> bool | None:
    """How one capture ordered the two: by its repeats where they do not overlap, else by its two values (a capture
    whose repeats overlap but whose values lie the other way disagrees too); None where neither is known."""
    by_reps = by_repeats(op, c.left, c.right)
    if by_reps is not None or not c.centers:
        return by_reps
    a, b = c.centers
    return a < b if op in ("lt", "le") else a > b


def _ratio_gap(op: str, c: Paired) -> float:
    """How far apart one capture put the two the way `op` says: the ratio of its two values, or of its spreads'
    near ends where the values are not known."""
    if c.centers and min(c.centers) > 0:
        a, b = c.centers
        return b / a if op in ("lt", "le") else a / b
    return gap(op, c.left, c.right)


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
