"""A small expression language over records, for inline numbers, table cells, claims and charts.

A reference names records of one fragment:  experiment@role:record.name{tag=value,...}
    burn-ret@gpu:ret.synced            every record of that name (all runs)
    burn-drop@gpu:drop.dropped{round=2} only round 2
Expressions combine references with functions and arithmetic, Python syntax:
    median(burn-ret@gpu:ret.synced) / median(burn-ret@gpu:ret.returned) > 10
    range(torch-chain8@gpu:chain8.device.median)       # a (low, high) pair, for display
A bare reference must select exactly one record. Evaluation happens on one platform at a time.
"""

from __future__ import annotations

import ast
import re
import statistics
from dataclasses import dataclass

REF = re.compile(r"([a-z0-9][a-z0-9._-]*)@(cpu|gpu):([A-Za-z_][A-Za-z0-9_.]*)(\{[^}]*\})?")


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
    """A number (or text/bool) with its unit, and the fragments it came from."""

    v: object
    unit: str = ""
    sources: tuple[str, ...] = ()


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


def _values(v):
    if isinstance(v, list):
        return v
    return [v]


def _num(x):
    if isinstance(x, Value):
        return x.v
    return x


def _agg(fn):
    def inner(v):
        vals = _values(v)
        if not vals:
            raise QueryError("aggregate of no records")
        unit = vals[0].unit if isinstance(vals[0], Value) else ""
        srcs = tuple(sorted({s for x in vals if isinstance(x, Value) for s in x.sources}))
        return Value(fn([_num(x) for x in vals]), unit, srcs)

    return inner


def _range(v):
    vals = _values(v)
    nums = [_num(x) for x in vals]
    unit = vals[0].unit if vals and isinstance(vals[0], Value) else ""
    srcs = tuple(sorted({s for x in vals if isinstance(x, Value) for s in x.sources}))
    return Range(min(nums), max(nums), unit, srcs)


FUNCS = {
    "min": _agg(min),
    "max": _agg(max),
    "median": _agg(statistics.median),
    "mean": _agg(statistics.fmean),
    "first": _agg(lambda xs: xs[0]),
    "last": _agg(lambda xs: xs[-1]),
    "count": lambda v: Value(len(_values(v))),
    "range": _range,
    "all": lambda v: Value(all(_num(x) for x in _values(v))),
    "any": lambda v: Value(any(_num(x) for x in _values(v))),
    "abs": lambda v: Value(abs(_num(v)), getattr(v, "unit", ""), getattr(v, "sources", ())),
}


class Evaluator:
    """Evaluates expressions against a lookup(ref) -> list of record dicts on one platform."""

    def __init__(self, lookup):
        self.lookup = lookup

    def refs(self, expr: str) -> list[Ref]:
        return parse_refs(expr)[1]

    def eval(self, expr: str):
        src, refs = parse_refs(expr)
        try:
            tree = ast.parse(src, mode="eval")
        except SyntaxError as e:
            raise QueryError(f"cannot parse {expr!r}: {e.msg}") from None
        env = {}
        for i, ref in enumerate(refs):
            recs = self.lookup(ref)
            env[f"__r{i}"] = [Value(r["value"], r.get("unit", ""), (ref.key,)) for r in recs]
        return self._eval(tree.body, env, expr)

    def explain(self, expr: str) -> list[str]:
        """Both sides of every comparison in the expression with their values, e.g. for a failing claim:
        ["median(a@gpu:x) = 0.0012 s  <  0.5 * median(b@gpu:y) = 0.0008 s"]."""
        src, refs = parse_refs(expr)
        tree = ast.parse(src, mode="eval")
        env = {f"__r{i}": [Value(r["value"], r.get("unit", ""), (ref.key,)) for r in self.lookup(ref)] for i, ref in enumerate(refs)}
        back = {f"__r{i}": ref.text for i, ref in enumerate(refs)}

        def text(node) -> str:
            out = ast.unparse(node)
            for ph, ref in sorted(back.items(), key=lambda kv: -len(kv[0])):
                out = out.replace(ph, ref)
            return out

        def val(node) -> str:
            if isinstance(node, ast.Constant):
                return ""
            try:
                v = self._eval(node, env, expr)
            except QueryError as e:
                return f"<{e}>"
            v = v[0] if isinstance(v, list) and len(v) == 1 else v
            x = v.v if isinstance(v, Value) else v
            shown = f"{x:.4g}" if isinstance(x, float) else repr(x)
            return shown + (f" {v.unit}" if isinstance(v, Value) and v.unit else "")

        symbols = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
        out = []
        for node in ast.walk(tree.body):
            if isinstance(node, ast.Compare):
                left = node.left
                for op, comp in zip(node.ops, node.comparators):
                    sides = [text(n) + (f" = {v}" if (v := val(n)) else "") for n in (left, comp)]
                    out.append(f"{sides[0]}  {symbols.get(type(op), '?')}  {sides[1]}")
                    left = comp
        return out

    def _eval(self, node, env, expr):
        E = lambda n: self._eval(n, env, expr)  # noqa: E731
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in env:
                vals = env[node.id]
                return vals[0] if len(vals) == 1 else vals
            if node.id in ("True", "False"):
                return node.id == "True"
            raise QueryError(f"unknown name {node.id!r} in {expr!r}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCS:
            if len(node.args) != 1:
                raise QueryError(f"{node.func.id}() takes one argument in {expr!r}")
            arg = node.args[0]
            val = env[arg.id] if isinstance(arg, ast.Name) and arg.id in env else E(arg)
            return FUNCS[node.func.id](val)
        if isinstance(node, ast.BinOp):
            a, b = self._scalar(E(node.left), expr), self._scalar(E(node.right), expr)
            ops = {ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y, ast.Mult: lambda x, y: x * y,
                   ast.Div: lambda x, y: x / y}
            if type(node.op) not in ops:
                raise QueryError(f"operator not allowed in {expr!r}")
            unit = _unit_of(a, b, node.op)
            try:
                v = ops[type(node.op)](_num(a), _num(b))
            except ZeroDivisionError:
                raise QueryError(f"division by zero in {expr!r}") from None
            return Value(v, unit, _srcs(a, b))
        if isinstance(node, ast.UnaryOp):
            v = self._scalar(E(node.operand), expr)
            if isinstance(node.op, ast.Not):
                return Value(not _num(v), "", _srcs(v))
            if isinstance(node.op, ast.USub):
                return Value(-_num(v), getattr(v, "unit", ""), _srcs(v))
        if isinstance(node, ast.BoolOp):
            vals = [self._scalar(E(v), expr) for v in node.values]
            res = all(_num(v) for v in vals) if isinstance(node.op, ast.And) else any(_num(v) for v in vals)
            return Value(res, "", _srcs(*vals))
        if isinstance(node, ast.Compare):
            left = self._scalar(E(node.left), expr)
            result, srcs = True, list(_srcs(left))
            for op, comp in zip(node.ops, node.comparators):
                right = self._scalar(E(comp), expr)
                srcs += _srcs(right)
                ops = {ast.Lt: lambda x, y: x < y, ast.LtE: lambda x, y: x <= y, ast.Gt: lambda x, y: x > y,
                       ast.GtE: lambda x, y: x >= y, ast.Eq: lambda x, y: x == y, ast.NotEq: lambda x, y: x != y}
                if type(op) not in ops:
                    raise QueryError(f"comparison not allowed in {expr!r}")
                result = result and ops[type(op)](_num(left), _num(right))
                left = right
            return Value(result, "", tuple(sorted(set(srcs))))
        raise QueryError(f"unsupported expression {ast.unparse(node)!r} in {expr!r}")

    def _scalar(self, v, expr):
        if isinstance(v, list):
            if len(v) != 1:
                raise QueryError(f"a reference in {expr!r} selects {len(v)} records; aggregate it (min/median/max/first) or add tags")
            return v[0]
        if isinstance(v, Range):
            raise QueryError(f"range() is for display only, not arithmetic, in {expr!r}")
        return v


def _unit_of(a, b, op) -> str:
    ua, ub = getattr(a, "unit", ""), getattr(b, "unit", "")
    if isinstance(op, ast.Div):
        return "" if ua == ub else ua if not ub else f"{ua}/{ub}"
    if isinstance(op, ast.Mult):
        return ua or ub
    return ua or ub


def _srcs(*vals) -> tuple[str, ...]:
    return tuple(sorted({s for v in vals for s in getattr(v, "sources", ())}))
