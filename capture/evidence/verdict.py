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
from pathlib import Path

from capture.evidence import driftfile
from capture.evidence.drift import DEFAULT, figure_label, kind, pair_factor, pair_label

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

    def of_platform(self, platform: str | None, runs: dict[str, str] | None = None) -> PlatformDrift:
        """`runs`: fragment key -> the run it was captured in (capture/evidence/runs.py), for the run drift."""
        return PlatformDrift(self, platform, runs)

    def of_record(self, platform: str | None):
        """drift(name, tags) -> ln factor, for the records of one platform."""
        return self.of_platform(platform).record


class PlatformDrift:
    """One platform's drifts, as the query language asks for them."""

    def __init__(self, drifts: Drifts, platform: str | None, runs: dict[str, str] | None = None):
        self.drifts, self.platform, self.runs = drifts, platform, runs or {}

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

    def shared(self, kind_: str, left: str = "", right: str = "") -> float | None:
        """ln of how far the ratio of two figures of this kind from one process may move: the kind's level, where
        the history shows that is less than the two drifts together (None elsewhere), or for the pair of figures
        `left` and `right` (figure labels) its own largest move where it moved more (drift.json's `pairs`)."""
        s = self.drifts._row(self.platform, kind_).get("shared")
        if not s:
            return None
        own = ((self.drifts.table.get("pairs") or {}).get(self.platform or "") or {}).get(pair_label(left, right))
        return math.log(max(float(s), float(own or 0)))

    def run_shared(self, kind_: str, sources: tuple[str, ...], left: str = "", right: str = "") -> float | None:
        """ln of how far the ratio of two figures of this kind captured in one run may move, when every fragment in
        `sources` comes from one run; None elsewhere. The kind's level (drift.json's `run`, measured without the
        figures that keep their own drift), raised to what the history shows for these two figures (labels
        `left`, `right`): a figure that keeps its own drift, its largest move against the other figures of its
        runs (`run_figures`; None if it has none), and a pair that moved more, its own (`run_pairs`)."""
        s = self.drifts._row(self.platform, kind_).get("run")
        runs = {self.runs.get(src) for src in sources}
        if not s or len(runs) != 1 or None in runs:
            return None
        table = self.drifts.table
        factor = float(s)
        for fig in (left, right):
            if self.drifts.own(self.platform, fig):
                own = ((table.get("run_figures") or {}).get(self.platform or "") or {}).get(fig)
                if not own:
                    return None
                factor = max(factor, float(own))
        pair = pair_factor((table.get("run_pairs") or {}).get(self.platform or "") or {}, left, right)
        return math.log(max(factor, float(pair or 0)))


DEFAULT_DRIFTS = Drifts()


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
