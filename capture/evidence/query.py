"""A small expression language over records, for inline numbers, table cells, claims and charts.

A reference names records of one fragment:  experiment@role:record.name{tag=value,...}
    burn-ret@gpu:ret.synced            every record of that name (all runs)
    burn-drop@gpu:drop.dropped{round=2} only round 2
Expressions combine references with functions and arithmetic, Python syntax:
    median(burn-ret@gpu:ret.synced) / median(burn-ret@gpu:ret.returned) > 10
    range(torch-chain8@gpu:chain8.device.median)       # a (low, high) pair, for display
    all(a@gpu:x.dropped > 0.25 * a@gpu:x.kept.median)  # per record, paired by their tags
A reference that selects several records is a list: aggregate it (min, median, max, first, last,
mean, count) for a number, or compare it element by element (records paired by the tags that tell
them apart, e.g. round) and ask all() or any(). Evaluation happens on one platform at a time.

Every number keeps its spread (the lowest and highest of the repeats, rounds or processes behind it)
and its drift (how far it may move between captures, from its kind of figure on its platform); a
comparison that involves a measurement answers yes, no or cannot tell, by the one rule in capture/evidence/verdict.py. Each verdict carries `why`: the comparison that decided it, with the values
and spreads of both sides, naming the record (inside all() / any() too).
"""

from __future__ import annotations

import ast
import math
import re
import statistics
from dataclasses import dataclass, replace

from capture.evidence import verdict
from capture.evidence.drift import REPEAT_TAGS, figure_label

REF = re.compile(r"([a-z0-9][a-z0-9._-]*)@(cpu|gpu):([A-Za-z_][A-Za-z0-9_.]*)(\{[^}]*\})?")
# Units of measured quantities: a timing, or a rate derived from one. Everything else is exact.
MEASURED_UNITS = ("s",)


def is_measured(unit: str) -> bool:
    return unit in MEASURED_UNITS or unit.endswith("/s")


class QueryError(Exception):
    pass


class MissingData(QueryError):
    """A reference selects no record on this platform (fragment or record absent)."""

    def __init__(self, ref: str, reason: str):
        super().__init__(f"{ref}: {reason}")
        self.ref = ref


@dataclass(frozen=True)
class Ref:
    exp: str
    role: str
    name: str
    tags: tuple[tuple[str, str], ...]
    text: str

    @property
    def key(self) -> str:
        return f"{self.exp}@{self.role}"


@dataclass(frozen=True)
class Value:
    """A number (or text/bool) with its unit, the fragments it came from, and for a measurement its spread.

    v: the value; for a comparison True, False or None (cannot tell, capture/evidence/verdict.py).
    lo, hi: the lowest and highest repeat behind a measured number (None: exact).
    drift: how far it may move from one capture to the next beyond its spread, as ln of a factor
      (capture/evidence/verdict.py; 0: exact)
    why: for a verdict, the comparison that decided it, with both sides' values.
    timed: for a verdict, whether a comparison of measurements went into it (a timing verdict).
    kind: a measured value's kind of figure (capture/evidence/drift.py), when it is one record's or all its parts share it.
    figure: the figure a measured value was read from (drift.figure_label), when all its records are of one.
    proc: where a measured value was taken (fragment, how it was aggregated, the processes behind it), for the
      shared drift of two figures from one process (capture/evidence/verdict.py); () when it mixes several.
    repeats: for a cannot-tell comparison of measurements, what this capture's repeats alone say
      (verdict.by_repeats): yes or no where they already agree and only the drift keeps it open, None where
      they overlap.
    same: for a cannot-tell comparison of two measurements neither scaled by a constant, the factor within which
      the data bound their ratio (verdict.about_same: "about the same, within k"), None where they bound no gap.
    agg, scale, whole: for a measured value of one figure, how its repeats were aggregated ("" for one record), the
      constant it was scaled by (None: shifted or inverted, which the history cannot follow), and whether it covers
      every repeat of its figure (no repeat tag picked some): what the history of earlier captures needs
      (verdict.Side).
    label: the record it was read from (reference text, with the tags that picked it).
    tags: the record's tags (a list of records is paired by them).
    """

    v: object
    unit: str = ""
    sources: tuple[str, ...] = ()
    lo: float | None = None
    hi: float | None = None
    drift: float = 0.0
    why: str = ""
    label: str = ""
    tags: tuple[tuple[str, str], ...] = ()
    timed: bool = False
    kind: str = ""
    figure: str = ""
    proc: tuple = ()
    repeats: bool | None = None
    same: float | None = None
    agg: str = ""
    scale: float | None = 1.0
    whole: bool = False
    parts: tuple = ()  # for a sum of whole figures: each one's verdict.Side, so the history can follow the sum

    @property
    def spread(self) -> tuple[float, float]:
        return (self.v if self.lo is None else self.lo, self.v if self.hi is None else self.hi)


@dataclass(frozen=True)
class Range:
    lo: float
    hi: float
    unit: str = ""
    sources: tuple[str, ...] = ()


def parse_refs(expr: str) -> tuple[str, list[Ref]]:
    """Replace references by placeholders __r0, __r1 ... so the rest parses as Python."""
    refs: list[Ref] = []

    def sub(m):
        tags = ()
        if m.group(4):
            pairs = [p.strip() for p in m.group(4)[1:-1].split(",") if p.strip()]
            try:
                tags = tuple(tuple(x.strip() for x in p.split("=", 1)) for p in pairs)
                if any(len(t) != 2 for t in tags):
                    raise ValueError
            except ValueError:
                raise QueryError(f"bad tags in {m.group(0)!r} (use {{k=v,...}})") from None
        refs.append(Ref(m.group(1), m.group(2), m.group(3), tags, m.group(0)))
        return f"__r{len(refs) - 1}"

    return REF.sub(sub, expr), refs


def check_syntax(expr: str) -> None:
    """Raise QueryError for an expression that does not parse (a page mistake, not missing data)."""
    src, _ = parse_refs(expr)
    try:
        ast.parse(src, mode="eval")
    except SyntaxError as e:
        raise QueryError(f"cannot parse {expr!r}: {e.msg}") from None


def record_values(ref: Ref, records: list[dict], drift: verdict.PlatformDrift | None = None) -> list[Value]:
    """The records a reference selected, as Values. A measured record is one repeat (a run, a round, a
    process) or one statistic of a run (X.median): its spread comes from aggregating several of them
    (median over processes spans their range), not from the min and max of the run, which one slow
    repeat would stretch. `drift` gives a measured record's drift and kind on the platform (verdict.PlatformDrift)."""
    drift = drift or verdict.DEFAULT_DRIFTS.of_platform(None)
    out = []
    for r in records:
        unit = r.get("unit", "")
        tags = tuple(sorted((r.get("tags") or {}).items()))
        measured = is_measured(unit) and _is_number(r["value"])
        d = drift.record(r["name"], dict(tags), ref.key) if measured else 0.0
        lo = hi = r["value"] if d else None
        kind = drift.kind(r["name"], dict(tags)) if measured else ""
        figure = figure_label(ref.key, r["name"], tags) if measured else ""
        proc = (ref.key, "", frozenset([dict(tags).get("process", "")])) if measured else ()
        whole = measured and not any(k in REPEAT_TAGS for k, _ in ref.tags)
        picked = [f"{k}={v}" for k, v in tags if k not in dict(ref.tags)]
        label = ref.text + (f"{{{','.join(picked)}}}" if picked and len(records) > 1 else "")
        out.append(Value(r["value"], unit, (ref.key,), lo, hi, d, "", label, tags, kind=kind, figure=figure, proc=proc,
                         whole=whole))
    return out


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _num(x):
    return x.v if isinstance(x, Value) else x


def _values(v) -> list:
    return v if isinstance(v, list) else [v]


def _srcs(*vals) -> tuple[str, ...]:
    return tuple(sorted({s for v in vals for s in getattr(v, "sources", ())}))


def _numbers(vals: list, fn: str, expr: str) -> list[float]:
    nums = [_num(x) for x in vals]
    bad = [x for x in nums if not _is_number(x)]
    if bad:
        raise QueryError(f"{fn}() of {bad[0]!r} in {expr!r}: it takes numbers; a word or a yes/no is compared with ==")
    return nums


def _aggregate(fn: str, vals: list, expr: str) -> Value:
    if not vals:
        raise QueryError(f"{fn}() of no records in {expr!r}")
    if fn in ("first", "last"):
        one = vals[0 if fn == "first" else -1]
        return replace(one, whole=False) if len(vals) > 1 and isinstance(one, Value) else one
    nums = _numbers(vals, fn, expr)
    vs = [x if isinstance(x, Value) else Value(x) for x in vals]
    unit, drift = vs[0].unit, max(x.drift for x in vs)
    los, his = [x.spread[0] for x in vs], [x.spread[1] for x in vs]
    if fn == "min":
        v, lo, hi = min(nums), min(los), min(his)
    elif fn == "max":
        v, lo, hi = max(nums), max(los), max(his)
    else:  # median, mean: the typical value, spanning every repeat behind it
        v = statistics.median(nums) if fn == "median" else statistics.fmean(nums)
        lo, hi = min(los), max(his)
    figure = _common(x.figure for x in vs)
    return Value(v, unit, _srcs(*vs), lo if drift else None, hi if drift else None, drift,
                 kind=_common(x.kind for x in vs), figure=figure, proc=_aggregated_proc(fn, vs),
                 agg=fn, whole=bool(figure) and all(x.whole and not x.agg and x.scale == 1.0 for x in vs))


def _common(xs) -> str:
    xs = set(xs)
    return xs.pop() if len(xs) == 1 else ""


def _aggregated_proc(fn: str, vs: list[Value]) -> tuple:
    """Where an aggregate was taken: one fragment's records of one process whatever the function; over
    several processes, the function too (a median over processes orders like another median over them)."""
    if not vs or any(not x.proc for x in vs) or len({x.proc[0] for x in vs}) != 1:
        return ()
    procs = frozenset().union(*(x.proc[2] for x in vs))
    steps = {x.proc[1] for x in vs}
    if len(procs) == 1 and steps == {""}:
        return (vs[0].proc[0], "", procs)
    return (vs[0].proc[0], fn + "(" + ",".join(sorted(steps)) + ")", procs)


def _range(vals: list, expr: str) -> Range:
    nums = _numbers(vals, "range", expr)
    unit = vals[0].unit if vals and isinstance(vals[0], Value) else ""
    return Range(min(nums), max(nums), unit, _srcs(*vals))


def _truth(vals: list, fn: str, expr: str) -> Value:
    """all() / any() in three values; why names the record that decided."""
    vs = [x if isinstance(x, Value) else Value(x) for x in vals]
    bad = [x.v for x in vs if not (isinstance(x.v, bool) or x.v is None)]
    if bad:
        raise QueryError(f"{fn}() of {bad[0]!r} in {expr!r}: it takes yes/no values (comparisons or recorded booleans)")
    combine = verdict.kleene_and if fn == "all" else verdict.kleene_or
    res = combine([x.v for x in vs])
    if res is verdict.CANNOT_TELL:
        deciding = [x for x in vs if x.v is verdict.CANNOT_TELL]
    elif (res is False) == (fn == "all"):
        deciding = [x for x in vs if x.v is res][:1]  # the first record that settles it
    else:
        deciding = vs
    why = "; ".join(_why(x) for x in deciding)
    return Value(res, "", _srcs(*vs), why=f"{fn}(): {verdict.word(res)}" + (f" — {why}" if why else ""),
                 timed=any(x.timed for x in vs))


def _varying(xs: list) -> set[str]:
    """The tags whose values differ between the records of a list (what tells them apart)."""
    keys = {k for x in xs for k, _ in getattr(x, "tags", ())}
    return {k for k in keys if len({dict(getattr(x, "tags", ())).get(k) for x in xs}) > 1}


def _at(res, keys, x):
    """A result computed for one record of a list, its why prefixed with that record's tags."""
    if isinstance(res, Value) and res.why and keys:
        at = ",".join(f"{k}={dict(x.tags).get(k)}" for k in sorted(keys))
        res = replace(res, why=f"{{{at}}}: {res.why}")
    if isinstance(res, Value) and not res.tags and getattr(x, "tags", ()):
        res = replace(res, tags=x.tags)
    return res


def _why(x: Value) -> str:
    return x.why or f"{x.label or 'value'} = {x.v!r}"


FUNCS = ("min", "max", "median", "mean", "first", "last", "count", "range", "all", "any", "abs")


def _finite(x) -> bool:
    """A number every later step can compute with: finite, and an int a double can hold."""
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


class Evaluator:
    """Evaluates expressions against a lookup(ref) -> list of record dicts on one platform; `drift(name, tags)`
    gives each timing record's drift there (verdict.Drifts.of_record; by default the fixed DEFAULT)."""

    def __init__(self, lookup, drift: verdict.PlatformDrift | None = None):
        self.lookup = lookup
        self.drift = drift or verdict.DEFAULT_DRIFTS.of_platform(None)

    def refs(self, expr: str) -> list[Ref]:
        return parse_refs(expr)[1]

    def _env(self, refs: list[Ref]) -> dict:
        env = {}
        for i, ref in enumerate(refs):
            env[f"__r{i}"] = record_values(ref, self.lookup(ref), self.drift)
        return env

    def eval(self, expr: str):
        src, refs = parse_refs(expr)
        try:
            tree = ast.parse(src, mode="eval")
        except SyntaxError as e:
            raise QueryError(f"cannot parse {expr!r}: {e.msg}") from None
        ctx = _Ctx(expr, refs, self.drift)
        out = ctx.eval(tree.body, self._env(refs))
        if isinstance(out, list):
            if len(out) != 1:
                raise QueryError(f"a reference in {expr!r} selects {len(out)} records; aggregate it "
                                 "(min/median/max/first), or ask all()/any() of a comparison, or add tags")
            out = out[0]
        return out


class _Ctx:
    def __init__(self, expr: str, refs: list[Ref], drift: verdict.PlatformDrift):
        self.expr = expr
        self.drift = drift
        self.back = {f"__r{i}": ref.text for i, ref in enumerate(refs)}

    def text(self, node) -> str:
        out = ast.unparse(node)
        for ph, ref in sorted(self.back.items(), key=lambda kv: -len(kv[0])):
            out = out.replace(ph, ref)
        return out

    def eval(self, node, env):
        expr = self.expr
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (int, float, str, bool)):
                return node.value
            raise QueryError(f"constant {node.value!r} not allowed in {expr!r}")
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in ("True", "False"):
                return node.id == "True"
            raise QueryError(f"unknown name {node.id!r} in {expr!r}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCS and not node.keywords:
            if len(node.args) != 1:
                raise QueryError(f"{node.func.id}() takes one argument in {expr!r}")
            return self.call(node.func.id, self.eval(node.args[0], env))
        if isinstance(node, ast.BinOp):
            return self.pairwise(node, self.eval(node.left, env), self.eval(node.right, env),
                                 lambda a, b: self.arith(node.op, a, b))
        if isinstance(node, ast.UnaryOp):
            return self.each(self.eval(node.operand, env), lambda v: self.unary(node, v))
        if isinstance(node, ast.BoolOp):
            vals = [self.scalar(self.eval(v, env)) for v in node.values]
            return self.boolop(node, vals)
        if isinstance(node, ast.Compare):
            parts, left = [], self.eval(node.left, env)
            lnode = node.left
            for op, comp in zip(node.ops, node.comparators):
                right = self.eval(comp, env)
                parts.append(self.pairwise(node, left, right, lambda a, b, op=op, ln=lnode, rn=comp: self.compare(op, a, b, ln, rn)))
                left, lnode = right, comp
            if len(parts) == 1:
                return parts[0]
            return self.boolop(ast.BoolOp(op=ast.And()), [self.scalar(p) for p in parts])
        raise QueryError(f"unsupported expression {self.text(node)!r} in {expr!r}")

    # -- functions ----------------------------------------------------------------------------
    def call(self, fn: str, arg):
        vals = _values(arg)
        if fn == "count":
            return Value(len(vals))
        if fn == "range":
            return _range(vals, self.expr)
        if fn in ("all", "any"):
            return _truth(vals, fn, self.expr)
        if fn == "abs":
            return self.each(arg, self._abs)
        return _aggregate(fn, vals, self.expr)

    def _abs(self, v):
        v = v if isinstance(v, Value) else Value(v)
        if not _is_number(v.v):
            raise QueryError(f"abs() of {v.v!r} in {self.expr!r}")
        lo, hi = v.spread
        span = (min(abs(lo), abs(hi)) if lo * hi > 0 else 0.0, max(abs(lo), abs(hi)))
        return replace(v, v=abs(v.v), lo=span[0] if v.drift else None, hi=span[1] if v.drift else None)

    # -- lists: element by element, paired by tags --------------------------------------------
    def each(self, v, fn):
        return [fn(x) for x in v] if isinstance(v, list) else fn(v)

    def pairwise(self, node, a, b, fn):
        if isinstance(a, list) and len(a) == 1:
            a = a[0]
        if isinstance(b, list) and len(b) == 1:
            b = b[0]
        if not isinstance(a, list) and not isinstance(b, list):
            return fn(a, b)
        if not isinstance(a, list):
            keys = _varying(b)
            return [_at(fn(a, y), keys, y) for y in b]
        if not isinstance(b, list):
            keys = _varying(a)
            return [_at(fn(x, b), keys, x) for x in a]
        keys = sorted(_varying(a) | _varying(b))
        return [_at(fn(x, y), keys, x) for x, y in self.pair(node, a, b, keys)]

    def pair(self, node, a: list, b: list, keys: list[str]) -> list[tuple]:
        """Records of two lists paired by the tags that tell each list's records apart (round, run, ...)."""
        if not keys:
            raise QueryError(f"{self.text(node)!r} in {self.expr!r}: both sides select several records that no tag "
                             "tells apart; aggregate them or add tags")
        index = {}
        for y in b:
            index.setdefault(tuple(dict(y.tags).get(k) for k in keys), []).append(y)
        out = []
        for x in a:
            k = tuple(dict(x.tags).get(kk) for kk in keys)
            match = index.get(k, [])
            if len(match) != 1:
                shown = ",".join(f"{kk}={vv}" for kk, vv in zip(keys, k))
                raise QueryError(f"{self.text(node)!r} in {self.expr!r}: {len(match)} records on the right for "
                                 f"{{{shown}}} on the left; the two sides must select records with the same "
                                 f"{', '.join(keys)}")
            out.append((x, match[0]))
        if len(out) != len(b):
            raise QueryError(f"{self.text(node)!r} in {self.expr!r}: the two sides select {len(a)} and {len(b)} records")
        return out

    # -- scalars --------------------------------------------------------------------------------
    def scalar(self, v):
        if isinstance(v, list):
            if len(v) != 1:
                raise QueryError(f"a reference in {self.expr!r} selects {len(v)} records; aggregate it "
                                 "(min/median/max/first), or ask all()/any() of a comparison, or add tags")
            return v[0]
        if isinstance(v, Range):
            raise QueryError(f"range() is for display only, not arithmetic, in {self.expr!r}")
        return v

    def arith(self, op, a, b):
        a, b = self.scalar(a), self.scalar(b)
        av, bv = (a if isinstance(a, Value) else Value(a)), (b if isinstance(b, Value) else Value(b))
        for x in (av, bv):
            if not _is_number(x.v):
                raise QueryError(f"arithmetic on {x.v!r} ({x.label or 'a constant'}) in {self.expr!r}: only numbers")
        (alo, ahi), (blo, bhi) = av.spread, bv.spread
        try:
            if isinstance(op, ast.Add):
                v, lo, hi = av.v + bv.v, alo + blo, ahi + bhi
                drift = max(av.drift, bv.drift)  # each part off by at most its factor: the sum by the largest
            elif isinstance(op, ast.Sub):
                if av.drift and bv.drift:  # two nearly equal timings can differ by anything once each drifts
                    raise QueryError(f"{self.text_of(av, bv)} in {self.expr!r}: a difference of two measurements has no "
                                     "bounded drift; compare them directly (a < b) or as a ratio (a / b)")
                v, lo, hi = av.v - bv.v, alo - bhi, ahi - blo
                drift = max(av.drift, bv.drift)
            elif isinstance(op, ast.Mult):
                corners = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
                v, lo, hi = av.v * bv.v, min(corners), max(corners)
                drift = av.drift + bv.drift  # the factors multiply
            elif isinstance(op, ast.Div):
                if bv.v == 0 or blo <= 0 <= bhi:
                    raise QueryError(f"division by zero (or by a spread that includes zero) in {self.expr!r}")
                corners = [alo / blo, alo / bhi, ahi / blo, ahi / bhi]
                v, lo, hi = av.v / bv.v, min(corners), max(corners)
                drift = av.drift + bv.drift
            else:
                raise QueryError(f"operator not allowed in {self.expr!r}")
        except OverflowError:
            raise QueryError(f"a number in {self.expr!r} is too large to compute with") from None
        if not all(_finite(x) for x in (v, lo, hi)):  # an exact int past a double's range too
            raise QueryError(f"a number in {self.expr!r} is too large to compute with (it is not finite)")
        unit = _unit_of(av.unit, bv.unit, op)
        # scaled by a constant, a figure keeps its kind and where it was taken; mixed with another, it has neither
        one = av if not bv.drift else bv if not av.drift else None
        scale = None
        if one is not None and one.scale is not None:  # the constant it was scaled by, for the history
            if isinstance(op, ast.Mult):
                scale = one.scale * (bv.v if one is av else av.v)
            elif isinstance(op, ast.Div) and one is av:
                scale = one.scale / bv.v
        parts = ()
        if isinstance(op, ast.Add) and av.drift and bv.drift:  # a sum of whole figures: the history sums them too
            la, lb = _parts(av), _parts(bv)
            parts = la + lb if la and lb else ()
        return Value(v, unit, _srcs(av, bv), lo if drift else None, hi if drift else None, drift,
                     label=av.label if not bv.label else bv.label if not av.label else "",
                     kind=one.kind if one else "", figure=one.figure if one else "", proc=one.proc if one else (),
                     agg=one.agg if one else "", scale=scale, whole=bool(one and one.whole), parts=parts)

    @staticmethod
    def text_of(a: Value, b: Value) -> str:
        return f"{a.label or 'a measurement'} - {b.label or 'a measurement'}"

    def unary(self, node, v):
        v = self.scalar(v)
        val = v if isinstance(v, Value) else Value(v)
        if isinstance(node.op, ast.Not):
            if not (isinstance(val.v, bool) or val.v is None):
                raise QueryError(f"`not` of {val.v!r} in {self.expr!r}: it takes a yes/no")
            res = verdict.kleene_not(val.v)
            return Value(res, "", val.sources, why=f"not ({_why(val)})" if val.why else "", label=val.label, tags=val.tags,
                         timed=val.timed)
        if isinstance(node.op, ast.USub):
            if not _is_number(val.v):
                raise QueryError(f"minus of {val.v!r} in {self.expr!r}")
            lo, hi = val.spread
            return replace(val, v=-val.v, lo=-hi if val.drift else None, hi=-lo if val.drift else None)
        raise QueryError(f"operator not allowed in {self.expr!r}")

    def boolop(self, node, vals):
        vs = [x if isinstance(x, Value) else Value(x) for x in vals]
        for x in vs:
            if not (isinstance(x.v, bool) or x.v is None):
                raise QueryError(f"`and`/`or` of {x.v!r} in {self.expr!r}: they take yes/no values")
        is_and = isinstance(node.op, ast.And)
        res = (verdict.kleene_and if is_and else verdict.kleene_or)([x.v for x in vs])
        if res is verdict.CANNOT_TELL:
            deciding = [x for x in vs if x.v is verdict.CANNOT_TELL]
        elif (res is False) == is_and:
            deciding = [x for x in vs if x.v is res][:1]
        else:
            deciding = vs
        return Value(res, "", _srcs(*vs), why="; ".join(_why(x) for x in deciding), timed=any(x.timed for x in vs))

    def compare(self, op, a, b, lnode, rnode):
        a, b = self.scalar(a), self.scalar(b)
        av, bv = (a if isinstance(a, Value) else Value(a)), (b if isinstance(b, Value) else Value(b))
        name = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}.get(type(op))
        if name is None:
            raise QueryError(f"comparison not allowed in {self.expr!r}")
        numeric = _is_number(av.v) and _is_number(bv.v)
        if not numeric and (_is_number(av.v) or _is_number(bv.v)) and name not in ("eq", "ne"):
            raise QueryError(f"{self.text(lnode)!r} {verdict.SYMBOLS[name]} {self.text(rnode)!r} in {self.expr!r} "
                             f"compares a number with {(bv.v if _is_number(av.v) else av.v)!r}: compare numbers with numbers")
        if numeric and (av.drift or bv.drift) and name in ("eq", "ne"):
            raise QueryError(f"{self.text(lnode)!r} {verdict.SYMBOLS[name]} {self.text(rnode)!r} in {self.expr!r}: "
                             "a measurement is never exactly equal to anything; use < or > with a factor")
        if numeric:
            try:
                ld, rd = verdict.pair_drifts(av.drift, bv.drift, self.shared(av, bv))
                res = verdict.decide(name, av.spread, bv.spread, ld, rd) if name not in ("eq", "ne") \
                    else (av.v == bv.v) == (name == "eq")
            except TypeError:
                raise QueryError(f"cannot compare in {self.expr!r}") from None
        elif name in ("eq", "ne"):
            res = (av.v == bv.v) == (name == "eq")
        else:
            raise QueryError(f"{self.text(lnode)!r} {verdict.SYMBOLS[name]} {self.text(rnode)!r} in {self.expr!r}: "
                             f"{av.v!r} and {bv.v!r} are not numbers; words are compared with == or !=")
        judged = None
        if numeric and av.drift and bv.drift and name not in ("eq", "ne"):
            judged = verdict.with_history(name, res, av.spread, bv.spread, self.drift.earlier(_parts(av) or _side(av),
                                                                                             _parts(bv) or _side(bv)),
                                          (float(av.v), float(bv.v)))
        drift_said, res = res, (judged.value if judged is not None else res)
        why = f"{self._side(lnode, av)} {verdict.SYMBOLS[name]} {self._side(rnode, bv)}: {verdict.word(res)}"
        repeats = same = None
        if numeric and (av.drift or bv.drift) and drift_said is verdict.CANNOT_TELL:
            repeats = verdict.by_repeats(name, av.spread, bv.spread)
            said = f"{REPEATS_OVERLAP} and" if repeats is None else \
                f"{REPEATS_SAY} {verdict.word(repeats)}, but"
            why += f" ({said} the spreads widened by their drift overlap: {_widened(av, ld)} vs {_widened(bv, rd)})"
        elif res is verdict.CANNOT_TELL and numeric:  # the drift decided; a capture of the history said otherwise
            repeats = verdict.by_repeats(name, av.spread, bv.spread)
        if res is verdict.CANNOT_TELL and numeric and av.drift and bv.drift and not (_scaled(lnode) or _scaled(rnode)):
            bounds = [k for k in (verdict.about_same(av.spread, bv.spread, ld, rd), judged and judged.same) if k]
            same = min(bounds) if bounds else None
            if same is not None:
                how = HISTORY_BOUND if judged and judged.same == same else ABOUT_SAME
                why += f" [{how} x{same:g}]"
        if judged is not None:
            why += _history_why(judged)
        tags = av.tags or bv.tags
        return Value(res, "", _srcs(av, bv), why=why, label=av.label or bv.label, tags=tags,
                     timed=bool(numeric and (av.drift or bv.drift)), repeats=repeats, same=same)

    def shared(self, a: Value, b: Value) -> float | None:
        """The drift two figures of one kind share (capture/evidence/verdict.py): from the same process, or
        captured in one run; the smaller where both apply."""
        if not (a.drift and b.drift and a.kind and a.kind == b.kind):
            return None
        # a side that keeps its own drift but is no single figure (a sum, say) has no own run drift to look up
        own = any(x.drift > self.drift.level(a.kind) + 1e-12 and not x.figure for x in (a, b))
        found = [None if own else self.drift.run_shared(a.kind, _srcs(a, b), a.figure, b.figure)]
        if a.proc and a.proc == b.proc:
            found.append(self.drift.shared(a.kind))
        found = [x for x in found if x is not None]
        return min(found) if found else None

    def _side(self, node, v: Value) -> str:
        text = v.label if v.label and isinstance(node, ast.Name) else self.text(node)
        if isinstance(node, ast.Constant):
            return text
        x = v.v
        shown = exact(x) if isinstance(x, float) else repr(x)
        if v.unit:
            shown += f" {v.unit}"
        if v.drift and v.lo is not None and (v.lo, v.hi) != (v.v, v.v):
            shown += f" [{exact(v.lo)}–{exact(v.hi)}]"
        return f"{text} = {shown}"


# how a cannot tell's why says what holds it open (read back by capture/sphinxext/reader.py and evidence/share.py)
REPEATS_SAY = "the repeats alone say"  # they agree: only the drift keeps it open
REPEATS_OVERLAP = "the repeats themselves overlap"
# an undecided order whose gap the data bound (verdict.about_same), read back by reader.py and share.py
ABOUT_SAME = "about the same: their ratio, widened the same way, stays within"
HISTORY_BOUND = "about the same: over the captures in one sitting, their ratio (and the next one's, predicted) stays within"


def _parts(v: Value) -> tuple[verdict.Side, ...]:
    """A value as whole figures the history can follow: the parts of a sum, or the one figure it is; () if neither."""
    if v.parts:
        return v.parts
    side = _side(v)
    return (side,) if side.figure else ()


def _side(v: Value) -> verdict.Side:
    """One side of a comparison as the history sees it: its figure, when it is one whole figure of one fragment."""
    whole = v.whole and v.figure and len(v.sources) == 1 and v.scale
    return verdict.Side(v.figure if whole else "", v.sources[0] if whole else "", v.agg, v.scale or 0.0)


# how a verdict's why names its history (read back by capture/sphinxext/reader.py)
HISTORY_AGREE = "in one sitting each, every capture ordered them so"
HISTORY_AGAINST = "the capture of"


def _history_why(j: verdict.Judged) -> str:
    if j.disagreed:
        when = "this capture" if j.disagreed == "now" else j.disagreed
        return f" [{HISTORY_AGAINST} {when} ordered them the other way: cannot tell]"
    if j.value is None and j.captures:  # some agreed, not enough of them, or not far enough apart to decide
        gap = f", the closest x{j.gap:.4g}" if j.gap else ""
        return f" [history: {j.captures} captures in one sitting agreed{gap}: too few or too scattered to predict the next]"
    if j.value is None or not j.captures:
        return ""
    how = "decided by the history" if j.by_history else "history"
    gap = f", the closest x{j.gap:.3g}" if j.gap else ""
    return f" [{how}: {j.captures} capture{'s' if j.captures != 1 else ''} {HISTORY_AGREE}{gap}]"


def _scaled(node) -> bool:
    """A comparison side scaled by a constant (`0.5 * b`): a margin, not one of the two things compared, so "about
    the same" would say nothing about them."""
    return any(isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) for n in ast.walk(node))


def exact(x: float) -> str:
    """A number in a verdict's `why`, precise enough that whoever shows it rounds the value itself, once, as a
    table shows it (capture/evidence/fmt.py): rounded here to 4 digits, 0.00023949 became 0.0002395 and then «240 µs»
    beside a table's «239 µs». 12 digits read better in a log than repr's 17 (0.0004, not 0.00039999999999999996)."""
    return f"{x:.12g}"


def _widened(v: Value, drift: float) -> str:
    """A value's spread widened by a drift, for a why: "[62.5–85.4] (x1.2)"."""
    if not drift:
        return f"{v.v:.4g}"
    lo, hi = verdict.widened(v.spread, drift)
    return f"[{lo:.4g}–{hi:.4g}] (x{math.exp(drift):.3g})"


def _unit_of(ua: str, ub: str, op) -> str:
    if isinstance(op, ast.Div):
        return "" if ua == ub else ua if not ub else f"{ua}/{ub}"
    return ua or ub
