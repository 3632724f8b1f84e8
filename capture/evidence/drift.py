"""How far a timing moves from one capture to the next, measured from the fragments' git history.

The verdict rule (capture/evidence/verdict.py) widens every measured spread by the drift of its kind of figure
on its platform before it compares. That drift is measured here, not assumed:

- Captures: every committed version of a platform's fragment JSON (`git log` of docs/_fragments,
  one capture per distinct `started` time), kept only when its host is the platform's own machine
  (the recorded `host` fingerprint; for fragments older than that, their `machine` record).
- Figures: the records of one name and tags but for the repeat tags (process, run, round) are one
  figure, as the pages aggregate them: its centre (the median of its repeats), its fastest repeat, and
  its spread (fastest to slowest). A record without repeats is a figure on its own.
- Pairs: the same figure in two successive captures of the same experiment and role. A pair's move is
  how far it went beyond what the other capture's repeats showed, as |ln| of a factor: the larger of
  how far each capture's median lies outside the other's spread (0 inside it), and how far the fastest
  repeat moved. That is exactly what the verdict rule widens a spread by, so a figure whose move is at
  most f keeps every yes of that capture from becoming a no in the other (a median stays within the
  other's spread widened by f; a minimum moves by at most f). One slow repeat widens its own capture's
  spread; it does not count as drift.
- Kind: what sort of figure a record is (`kind()`, the one place that decides it): a cold first call,
  a device time, a fastest repeat, a slowest repeat, a typical (median) figure, or one host-side
  average (per op, per step, one round).
- Drift of a kind on a platform: the LEVEL (95th) percentile of its pairs' moves, as a factor (e^x); every
  figure that moved more than that keeps its own largest move (`figures` in the data file), so no figure
  is widened by less than it was seen to move, and one figure's bad day (the H200's torch compiled chain8
  on CPU, 5.99 ms once and 0.47-0.55 ms in every other capture) does not widen every other figure of its
  kind elevenfold. A kind with 11 pairs or fewer takes its largest. Pairs of identical inputs
  (the same program re-run) come first; where they hold fewer than MIN_PAIRS records, pairs across a
  change of the inputs (same device, command and hash scheme) count too, which can only widen it. A
  kind with fewer records than that has no history there: it takes DEFAULT, the old fixed rule
  (a factor 2 between two timings, so sqrt(2) on each side), as does every kind of a platform not in
  the table (a new machine before its second capture).

    python -m capture drift [--json]    re-measures and writes docs/drift.json (commit it)

Run it after a new capture on a machine, or when a framework version changes. The per-process spread
inside each capture (largest/smallest of the same record over processes) is reported beside it.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from capture.evidence import driftfile  # every file and git read of the drift goes through it
from capture.evidence import runs as runsmod
from capture.machines import fingerprint as fpmod

DATA = "docs/drift.json"  # relative to the repository root; read by capture/evidence/verdict.py
KINDS = ("first", "device", "gpu", "step", "min", "median", "max", "mean")
STEP_PARTS = ("step", "loop_step", "per_op", "per_op_queued", "per_err", "per_ok")
GPU_DEVICES = ("cuda", "vulkan", "metal", "mps", "wgpu", "rocm")  # a record's device tag: the run was on a GPU
MIN_PAIRS = 8  # fewer pairs than this on a platform: the kind falls back (see module doc)
DEFAULT = math.sqrt(2)  # a kind without history: the old fixed rule's 2x between two timings, per side
REPEAT_TAGS = ("process", "run", "round")  # tags that number repeats of one figure


def kind(name: str, tags: dict | None = None) -> str:
    """The kind of a timing record, from its name and tags (the one place this is decided).

    first   a cold first call or first use in a new process, and the calls right after it (x.first,
            x.first_call, x.first_step, firstuse.first, firstuse.again, matmul.device_init)
    device  a GPU run's time measured by the device (x.device.median, or tagged timing=device)
    gpu     any other steady figure of a GPU run, timed on the host (matmul.later.median on cuda)
    step    a host-side figure per step or per op of a loop (mlp.read.step.median, smallop.per_op)
    min     the fastest repeat of a CPU run (x.min)
    max     the slowest repeat of a run (x.max)
    median  the typical repeat of a CPU run (x.median)
    mean    any other figure: one average over a loop, one round, a rate
    """
    tags = tags or {}
    parts = name.split(".")
    rest = parts[1:]
    if any(p.startswith("first") for p in rest) or parts[0] == "firstuse" or name.endswith("device_init"):
        return "first"
    if rest and rest[-1] == "max":
        return "max"
    on_gpu = tags.get("device") in GPU_DEVICES
    if on_gpu and ("device" in rest or tags.get("timing") == "device"):
        return "device"
    if any(p in STEP_PARTS for p in rest):
        return "step"
    if on_gpu:
        return "gpu"
    if rest and rest[-1] in ("min", "median"):
        return rest[-1]
    return "mean"


def _git(root: Path, *args: str) -> str:
    return driftfile.git(root, *args)  # refuses a history that is not all there (a shallow clone, no repository)


def _timing(r: dict) -> bool:
    unit, v = r.get("unit", ""), r.get("value")
    measured = unit == "s" or unit.endswith("/s")
    return measured and isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 and driftfile.in_range(r)


@dataclass
class Snapshot:
    """The platform's fragments as one commit holds them (experiment@role -> metadata with records)."""
    commit: str
    metas: dict[str, dict]


def _blobs(root: Path, ids: list[str]) -> dict[str, dict]:
    """Parsed JSON of git blobs, read in one `git cat-file --batch` (an unreadable one is left out)."""
    return driftfile.blobs(root, ids)


def snapshots(root: Path, platform: str) -> list[Snapshot]:
    """Every commit of the platform's fragment folder, oldest first, with the fragments it holds."""
    folder = f"docs/_fragments/{platform}"
    commits = _git(root, "log", "--reverse", "--format=%H", "--", folder).split()
    trees = []
    for commit in commits:
        entries = {}
        for line in _git(root, "ls-tree", "-r", commit, folder).splitlines():
            info, path = line.split("\t", 1)
            name = path.rsplit("/", 1)[-1]
            if name.endswith(".json") and "@" in name:
                entries[name[: -len(".json")]] = info.split()[2]
        trees.append((commit, entries))
    metas = _blobs(root, sorted({b for _, e in trees for b in e.values()}))
    return [Snapshot(c, {k: metas[b] for k, b in e.items() if b in metas}) for c, e in trees]


def platform_host(root: Path, platform: str) -> dict | None:
    return driftfile.fingerprint(root, platform)  # names a platform.json that is missing, not a file, or corrupt


@dataclass
class Capture:
    platform: str
    key: str  # experiment@role
    started: str
    records: list[dict]
    program: tuple = ()  # what was run: device, command, inputs-hash scheme and inputs hash
    when: dict = field(default_factory=dict)  # started, wall_s and run: which run it belongs to (runs.py)


def own_host(meta: dict, host: dict | None) -> bool:
    """Whether a fragment was captured on the platform's machine: its recorded host fingerprint; for a
    fragment older than that, the fields its machine record has (early ones lack the architecture,
    which the platform key fixes anyway)."""
    if isinstance(meta.get("host"), dict) or host is None:
        return fpmod.same(fpmod.of_fragment(meta), host)
    have = fpmod.of_fragment(meta) or {}
    return bool(have) and all(v == host.get(k) for k, v in have.items() if v not in (None, ""))


def history(root: Path, platform: str, snaps: list[Snapshot] | None = None) -> dict[str, list[Capture]]:
    """experiment@role -> its captures on the platform's own host, oldest first (one per `started`, in its
    latest committed version: `capture restamp` carries a capture to a newer inputs-hash scheme)."""
    host = platform_host(root, platform)
    out: dict[str, dict[str, Capture]] = {}
    for snap in snaps if snaps is not None else snapshots(root, platform):
        for key, meta in snap.metas.items():
            if not own_host(meta, host) or not meta.get("started"):
                continue
            inputs = meta.get("inputs") or {}
            program = (meta.get("device"), json.dumps(meta.get("command")), inputs.get("hash_version"),
                       meta.get("inputs_hash"))
            when = {k: meta[k] for k in ("started", "wall_s", "run") if k in meta}
            out.setdefault(key, {})[meta["started"]] = Capture(platform, key, meta["started"],
                                                              list(meta.get("records") or []), program, when)
    return {k: sorted(v.values(), key=lambda c: c.started) for k, v in out.items()}


def _index(recs: list[dict]) -> dict[tuple, float]:
    out = {}
    for r in recs:
        if _timing(r):
            out[(r["name"], tuple(sorted((r.get("tags") or {}).items())))] = float(r["value"])
    return out


@dataclass
class KindDrift:
    logs: list[float] = field(default_factory=list)  # each figure's move between re-runs of identical inputs
    changed_logs: list[float] = field(default_factory=list)  # ... between captures whose inputs changed
    # the figure behind each move ("experiment@role name{tags}"), in step with logs and changed_logs
    who: list[str] = field(default_factory=list)
    changed_who: list[str] = field(default_factory=list)
    records: int = 0  # how many records the re-run pairs compared (MIN_PAIRS counts these)
    changed_records: int = 0
    spread_logs: list[float] = field(default_factory=list)  # ln(max/min) over a figure's repeats in one capture
    # how far the ratio of two records of this kind from the same process moved (re-runs; changed inputs)
    shared_logs: list[float] = field(default_factory=list)
    shared_changed_logs: list[float] = field(default_factory=list)
    shared_who: list[str] = field(default_factory=list)  # the two figures behind each (pair_label), in step
    shared_changed_who: list[str] = field(default_factory=list)
    # how far the ratio of two figures of this kind captured in one run moved, beyond their spreads
    run_logs: list[float] = field(default_factory=list)
    run_changed_logs: list[float] = field(default_factory=list)
    run_who: list[tuple[str, str]] = field(default_factory=list)  # the two figures behind each run move
    run_changed_who: list[tuple[str, str]] = field(default_factory=list)

    def basis(self, shared: bool = False, run: bool = False) -> tuple[list[float], str]:
        """The pairs the drift is taken from: re-runs of identical inputs when there are enough; else those
        and the captures across a change of the inputs too (which can only widen it)."""
        if shared or run:
            logs, changed = (self.shared_logs, self.shared_changed_logs) if shared else \
                (self.run_logs, self.run_changed_logs)
            n, n_changed = len(logs), len(changed)
        else:
            logs, changed = self.logs, self.changed_logs
            n, n_changed = self.records, self.changed_records
        if n >= MIN_PAIRS:
            return logs, "re-runs"
        return (logs + changed, "re-runs and changed inputs") if n + n_changed >= MIN_PAIRS else ([], "")

    def labelled(self, shared: bool = False, run: bool = False) -> list[tuple[float, object]]:
        """The moves basis() takes, each with what moved: a figure's label, a pair_label (shared) or the two
        figures' labels (run)."""
        logs, source = self.basis(shared, run)
        mine, changed = (self.shared_who, self.shared_changed_who) if shared else \
            (self.run_who, self.run_changed_who) if run else (self.who, self.changed_who)
        return list(zip(logs, mine + changed if source.endswith("changed inputs") else mine))

    def own(self) -> dict[str, float]:
        """figure -> the largest move it made itself, over the pairs the drift is taken from."""
        return _largest(self.labelled())

    def run_basis(self, apart: set[str]) -> list[float]:
        """The run moves the run drift is taken from, leaving out pairs with a figure that keeps its own drift."""
        return [x for x, (a, b) in self.labelled(run=True) if a not in apart and b not in apart]

    def widest(self) -> str:
        """The figure whose move set the drift ("" where the drift is not measured)."""
        moves = self.labelled()
        return max(moves, key=lambda m: m[0])[1] if moves else ""


def _largest(moves: list[tuple[float, str]]) -> dict[str, float]:
    """label -> the largest of its moves."""
    out: dict[str, float] = {}
    for x, label in moves:
        out[label] = max(out.get(label, 0.0), x)
    return out


LEVEL = 0.95  # a kind's drift: this quantile of its figures' moves; a figure that moved more keeps its own


def figure_label(key: str, name: str, tags) -> str:
    """One figure's name in drift.json's `figures`: "experiment@role name{tags but the repeat tags}"."""
    items = sorted((k, v) for k, v in (tags.items() if isinstance(tags, dict) else tags) if k not in REPEAT_TAGS)
    inner = ",".join(f"{k}={v}" for k, v in items)
    return f"{key} {name}" + (f"{{{inner}}}" if inner else "")


def pair_label(a: str, b: str) -> str:
    """Two figures' labels as one key of drift.json's `pairs` (order does not matter)."""
    return " | ".join(sorted((a, b)))


def figures(records: list[dict]) -> dict[tuple, list[float]]:
    """(name, tags but the repeat tags) -> the values of its repeats: one figure as the pages aggregate it."""
    out: dict[tuple, list[float]] = {}
    for (name, tags), v in _index(records).items():
        out.setdefault((name, tuple((k, x) for k, x in tags if k not in REPEAT_TAGS)), []).append(v)
    return out


def per_process(records: list[dict]) -> dict[str, dict[tuple, list[float]]]:
    """process -> its figures (name, tags but the repeat tags) -> the values of their repeats inside that process."""
    out: dict[str, dict[tuple, list[float]]] = {}
    for (name, tags), v in _index(records).items():
        proc = dict(tags).get("process", "")
        out.setdefault(proc, {}).setdefault((name, tuple((k, x) for k, x in tags if k not in REPEAT_TAGS)), []).append(v)
    return out


def _outside(centre: float, spread: list[float]) -> float:
    """|ln| of how far a value lies outside the range of some repeats (0 inside it)."""
    return max(0.0, math.log(centre / max(spread)), math.log(min(spread) / centre))


def move(old: list[float], new: list[float]) -> float:
    """How far one figure moved between two captures beyond what their repeats showed (|ln| of a factor):
    each capture's median against the other's spread, and the fastest repeat against the fastest. (Not the
    mean: one slow repeat drags it; the pages compare medians and minimums of repeats.)"""
    beyond = [_outside(statistics.median(mine), other) for mine, other in ((old, new), (new, old))]
    return max(beyond + [abs(math.log(min(new) / min(old)))])


def ratio_move(x_old: list[float], y_old: list[float], x_new: list[float], y_new: list[float]) -> float:
    """How far the ratio of two figures moved between two captures beyond what their repeats showed: each
    capture's ratio of medians against the other's range of ratios (fastest over slowest to slowest over
    fastest), and the ratio of their fastest repeats against the other's; |ln| of a factor."""
    def outside(x, y, x2, y2):
        centre = statistics.median(x2) / statistics.median(y2)
        return _outside(centre, [min(x) / max(y), max(x) / min(y)])
    fastest = abs(math.log((min(x_new) / min(y_new)) / (min(x_old) / min(y_old))))
    return max(outside(x_old, y_old, x_new, y_new), outside(x_new, y_new, x_old, y_old), fastest)


def quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))] if s else 0.0


def measure(root: Path, platform: str) -> dict[str, KindDrift]:
    """Per kind, the moves of figures between successive captures of the same program (same device, command
    and inputs-hash scheme; identical inputs, or changed ones kept apart) and the spread inside each capture."""
    out = {k: KindDrift() for k in KINDS}
    for caps in history(root, platform).values():
        for cap in caps:
            for (name, base), vs in figures(cap.records).items():
                if len(vs) > 1:
                    out[kind(name, dict(base))].spread_logs.append(math.log(max(vs) / min(vs)))
        for old, new in itertools.combinations(caps, 2):  # every pair, not neighbours: commit order changes nothing
            if old.program[:3] != new.program[:3]:  # another device, command or hash scheme: not comparable
                continue
            same = old.program == new.program
            fa, fb = figures(old.records), figures(new.records)
            for fig in sorted(fa.keys() & fb.keys()):
                kd = out[kind(fig[0], dict(fig[1]))]
                n = min(len(fa[fig]), len(fb[fig]))
                label = figure_label(new.key, fig[0], fig[1])
                if same:
                    kd.logs.append(move(fa[fig], fb[fig]))
                    kd.who.append(label)
                    kd.records += n
                else:
                    kd.changed_logs.append(move(fa[fig], fb[fig]))
                    kd.changed_who.append(label)
                    kd.changed_records += n
            pa, pb = per_process(old.records), per_process(new.records)
            for proc in sorted(pa.keys() & pb.keys()):  # two figures of one process: how far their ratio moved
                common = sorted(pa[proc].keys() & pb[proc].keys())
                for i, x in enumerate(common):
                    for y in common[i + 1:]:
                        kx = kind(x[0], dict(x[1]))
                        if kind(y[0], dict(y[1])) != kx:
                            continue
                        kd = out[kx]
                        m = ratio_move(pa[proc][x], pa[proc][y], pb[proc][x], pb[proc][y])
                        (kd.shared_logs if same else kd.shared_changed_logs).append(m)
                        (kd.shared_who if same else kd.shared_changed_who).append(
                            pair_label(figure_label(new.key, *x), figure_label(new.key, *y)))
    _run_pairs(history(root, platform), out)
    return out


def _run_pairs(hist: dict[str, list[Capture]], out: dict[str, KindDrift]) -> None:
    """Two figures of one kind captured in one run, and again both in a later run (the next run that has
    both): how far their ratio moved (ratio_move). Identical inputs on both sides count as re-runs."""
    labels = runsmod.label({f"{c.key}\t{c.started}": c.when for caps in hist.values() for c in caps})
    by_run: dict[str, dict[str, Capture]] = {}
    for caps in hist.values():
        for c in caps:
            run = labels.get(f"{c.key}\t{c.started}")
            if run:
                by_run.setdefault(run, {})[c.key] = c
    order = sorted(by_run, key=lambda r: min(c.started for c in by_run[r].values()))
    figs = {(r, k): figures(c.records) for r in order for k, c in by_run[r].items()}
    keys = sorted({k for r in order for k in by_run[r]})
    for i, k1 in enumerate(keys):
        for k2 in keys[i:]:
            both = [r for r in order if k1 in by_run[r] and k2 in by_run[r]]
            for r_old, r_new in itertools.combinations(both, 2):
                c1, c1n, c2, c2n = by_run[r_old][k1], by_run[r_new][k1], by_run[r_old][k2], by_run[r_new][k2]
                if c1.program[:3] != c1n.program[:3] or c2.program[:3] != c2n.program[:3]:
                    continue
                same = c1.program == c1n.program and c2.program == c2n.program
                f1, f1n, f2, f2n = figs[(r_old, k1)], figs[(r_new, k1)], figs[(r_old, k2)], figs[(r_new, k2)]
                common1, common2 = sorted(f1.keys() & f1n.keys()), sorted(f2.keys() & f2n.keys())
                for a in common1:
                    ka = kind(a[0], dict(a[1]))
                    for b in common2:
                        if (k1 == k2 and a >= b) or kind(b[0], dict(b[1])) != ka:
                            continue
                        m = ratio_move(f1[a], f2[b], f1n[a], f2n[b])
                        pair = (figure_label(k1, a[0], a[1]), figure_label(k2, b[0], b[1]))
                        (out[ka].run_logs if same else out[ka].run_changed_logs).append(m)
                        (out[ka].run_who if same else out[ka].run_changed_who).append(pair)


HISTORY_DIGITS = 6  # significant digits a figure's repeats keep in the history table


def compared(root: Path) -> set[tuple[str, str]]:
    """(experiment@role, record name) of every record the pages' timing verdicts read (capture/evidence/share.py):
    the figures whose history the verdict rule can use."""
    from capture.evidence.query import parse_refs
    from capture.evidence.share import verdict_expressions

    docs = root / "docs"
    if not docs.is_dir():
        return set()
    return {(r.key, r.name) for _, expr in verdict_expressions(docs) for r in parse_refs(expr)[1]}


def history_table(root: Path, platform: str, wanted: set[tuple[str, str]] | None = None) -> dict:
    """Every capture of the platform's own host that the current program can be compared with, for the verdict
    rule's history (capture/evidence/verdict.py `History`): `captures`, a list of [experiment@role, started, run]
    (the run from capture/evidence/runs.py over the whole history), and `figures`, each figure label's captures
    as [index into captures, [its repeats]], for the records in `wanted` (all where None). A fragment's captures
    count when they ran on the same device, command and inputs-hash scheme as its latest one (changed inputs too:
    a capture that disagrees can only make the rule say cannot tell)."""
    hist = history(root, platform)
    if wanted is not None:
        hist = {k: v for k, v in hist.items() if any(k == key for key, _ in wanted)}
    labels = runsmod.label({f"{c.key}\t{c.started}": c.when for caps in hist.values() for c in caps})
    runs: dict[str, int] = {}  # run label -> a small number, in order of first appearance
    captures: list[list] = []
    figs: dict[str, list] = {}
    for key in sorted(hist):
        caps = hist[key]
        for cap in caps:
            if cap.program[:3] != caps[-1].program[:3]:
                continue
            kept = {figure_label(key, name, base): sorted(float(f"{v:.{HISTORY_DIGITS}g}") for v in vs)
                    for (name, base), vs in figures(cap.records).items() if wanted is None or (key, name) in wanted}
            if not kept:
                continue
            run = runs.setdefault(labels.get(f"{key}\t{cap.started}", ""), len(runs))
            captures.append([key, cap.started, run])
            for label, vs in sorted(kept.items()):
                figs.setdefault(label, []).append([len(captures) - 1, vs])
    return {"captures": captures, "figures": dict(sorted(figs.items()))}


def platforms(root: Path) -> list[str]:
    return driftfile.platforms(root)  # every platform of the store; one that cannot be measured is named, not left out


def _up(x: float) -> float:
    return math.ceil(x * 1000) / 1000  # rounded up: never narrower than measured


def table(root: Path) -> dict:
    """The data file's content: per platform and kind, the drift factor and what it was measured from; per
    platform, the figures that moved more than their kind's drift, each with its own."""
    measured = {p: measure(root, p) for p in platforms(root)}
    wanted = compared(root)
    plats: dict[str, dict] = {}
    own_figures: dict[str, dict[str, float]] = {}
    for p, kinds in measured.items():
        rows = {}
        apart: dict[str, float] = {}
        for k, kd in kinds.items():
            logs, source = kd.basis()
            level = quantile(logs, LEVEL) if logs else math.log(DEFAULT)
            factor = math.exp(level)
            for label, x in kd.own().items():
                if x > level:
                    apart[label] = _up(math.exp(x))
            shared, _ = kd.basis(shared=True)
            shared_level = quantile(shared, LEVEL) if shared else None
            if shared_level is not None and math.exp(shared_level) >= factor ** 2:
                shared_level = None
            run = kd.run_basis(set(apart))
            run_level = math.exp(quantile(run, LEVEL)) if run else None
            rows[k] = {
                "drift": _up(factor) if logs else DEFAULT,
                "max": _up(math.exp(max(logs))) if logs else None,
                # the ratio of two such records from the same process (its LEVEL percentile), where that is less
                # than two drifts
                "shared": _up(math.exp(shared_level)) if shared_level is not None else None,
                "shared_pairs": len(shared),
                # the ratio of two such figures captured in one run, where it moved less than two drifts
                "run": _up(run_level) if run_level and run_level < factor ** 2 else None,
                "run_pairs": len(run),
                "source": source if logs else "default",
                "pairs": len(logs),
                "widest": kd.widest(),
                "records": kd.records + (kd.changed_records if source.endswith("changed inputs") else 0),
                "reruns": len(kd.logs),
                "changed": len(kd.changed_logs),
                "p95": _up(math.exp(quantile(logs, 0.95))) if logs else None,
                "spread_p95": _up(math.exp(quantile(kd.spread_logs, 0.95))) if kd.spread_logs else None,
            }
        plats[p] = rows
        own_figures[p] = dict(sorted(apart.items()))
    return {
        "about": "Drift of each kind of timing between captures on the platform's own host: the 95th percentile "
                 "of how far its figures moved, beyond the spread of their repeats, between any two captures of "
                 "the same program; a figure that moved more keeps its own largest move (figures). The ratio of two "
                 "figures of one process (shared) or one run (run) moves less. history: the captures of every figure "
                 "the pages compare, for the rule's check against earlier captures in one sitting. "
                 "capture/evidence/drift.py; recompute: python -m capture drift",
        "default": DEFAULT,
        "platforms": plats,
        "figures": own_figures,
        "history": {p: history_table(root, p, wanted) for p in measured},
    }


def write(root: Path, data: dict) -> Path:
    return driftfile.write(root, data)[0]  # checked, then replaced atomically (capture/evidence/driftfile.py)


def render(data: dict) -> str:
    lines = ["drift between captures on each platform's own host: the 95th percentile of how far its figures moved "
             "beyond their repeats (what the verdict rule widens each spread by; a figure that moved more keeps its "
             "own, listed after its platform); the largest; the spread over repeats inside one capture"]
    for p, rows in data["platforms"].items():
        lines.append(p)
        for k in KINDS:
            r = rows[k]
            p95 = f"{r['p95']:.3f}" if r["p95"] else "-"
            sp = f"{r['spread_p95']:.3f}" if r["spread_p95"] else "-"
            sh = f"x{r['shared']:.3f}" if r["shared"] else "-"
            lines.append(f"  {k:<7} x{r['drift']:<7.3f} {r['source']:<26} {r['reruns']:>4} re-run pairs, "
                         f"{r['changed']:>4} across changed inputs ({r.get('records', 0)} records); p95 x{p95:<6} spread over repeats p95 x{sp:<8} "
                         f"same-process ratio {sh} ({r['shared_pairs']} pairs); same-run ratio "
                         f"{'x%.3f' % r['run'] if r.get('run') else '-'} ({r.get('run_pairs', 0)} pairs)")
            if r.get("widest"):
                lines.append(f"          largest x{r['max']:.3f}, by {r['widest']}")
        for label, f in sorted((data.get("figures") or {}).get(p, {}).items(), key=lambda x: -x[1]):
            lines.append(f"  own x{f:<7.3f} {label}")
    return "\n".join(lines)
