"""Comparisons only between like things: the conditions under which each reference of an expression ran.

An expression that combines records of several fragments (a claim, a table cell, a chart, a
`{num}`) compares like with like only when they come from the same host and ran under the same
conditions:

- fragment conditions: the host (capture/machines/fingerprint.py), the cache state (`caches` in the
  manifest), the thread count (RAYON_NUM_THREADS / OMP_NUM_THREADS in the manifest's env, or the
  threads torch reported when they differ from the machine's cores);
- record tags: size, timing (how the time was taken), steps, iters, reps, backtrace.

A tag a reference pins explicitly (`{size=4x4}`) is a chosen difference when every reference that
has the tag pins it. Any other difference is reported, naming both references; a page that
compares unlike things on purpose says which with `:differs: threads` (claims, tables, charts,
matrices) or `| differs=threads` (`{num}`), and its text must say how they differ.
"""

from __future__ import annotations

import ast

from capture.machines import fingerprint as fpmod
from capture.evidence.query import Ref, parse_refs

FRAGMENT_CONDITIONS = ("host", "caches", "threads")
TAG_CONDITIONS = ("size", "timing", "steps", "iters", "reps", "backtrace")
CONDITIONS = FRAGMENT_CONDITIONS + TAG_CONDITIONS
THREAD_VARS = ("RAYON_NUM_THREADS", "OMP_NUM_THREADS")


def threads(env: dict, meta: dict) -> str:
    for var in THREAD_VARS:
        if var in env:
            return f"{var}={env[var]}"
    n = (meta.get("versions") or {}).get("threads")
    cores = (meta.get("machine") or {}).get("cores")
    return "default" if n is None or n == cores else f"{n} threads"


def of_ref(ref: Ref, meta: dict, records: list[dict], env: dict) -> dict[str, set[str]]:
    """Condition -> the values it takes among the records this reference selects."""
    host = fpmod.of_fragment(meta)
    out = {"host": {fpmod.describe(host)} if host else set(), "caches": {meta.get("caches") or "default"},
           "threads": {threads(env, meta)}}
    for tag in TAG_CONDITIONS:
        vals = {str((r.get("tags") or {}).get(tag)) for r in records if tag in (r.get("tags") or {})}
        if vals:
            out[tag] = vals
    return out


def mismatches(per_ref: list[tuple[Ref, dict[str, set[str]]]], differs: tuple[str, ...] = ()) -> list[str]:
    """What is compared unlike, in English (empty when the expression compares like with like)."""
    out = []
    for cond in CONDITIONS:
        if cond in differs:
            continue
        having = [(ref, vals[cond]) for ref, vals in per_ref if vals.get(cond)]
        pinned = [ref for ref, _ in having if cond in dict(ref.tags)]
        for ref, vals in having:
            if len(vals) > 1 and ref not in pinned:
                out.append(f"{ref.text} mixes records of different {cond} ({', '.join(sorted(vals))}); pin one with "
                           f"{{{cond}=...}}")
        if len(having) > 1 and not (pinned and len(pinned) == len(having)):
            first_ref, first = having[0]
            for ref, vals in having[1:]:
                if vals != first and len(vals) == 1 == len(first):
                    out.append(f"{first_ref.text} and {ref.text} differ in {cond}: {next(iter(first))} vs "
                               f"{next(iter(vals))}")
                    break
    return out


def groups(expr: str) -> list[list[int]]:
    """The references that an expression puts side by side: those inside one comparison or one
    arithmetic term (indices into parse_refs' list). `and` / `or` / `not` / all() join separate
    statements, which may each be about other sizes: `a < b and c < d` gives [[a, b], [c, d]]."""
    src, _ = parse_refs(expr)
    try:
        tree = ast.parse(src, mode="eval").body
    except SyntaxError:
        return []
    out: list[list[int]] = []

    def refs_in(node) -> list[int]:
        return sorted({int(n.id[3:]) for n in ast.walk(node) if isinstance(n, ast.Name) and n.id.startswith("__r")})

    def visit(node):
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                visit(v)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            visit(node.operand)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("all", "any") and node.args:
            visit(node.args[0])
        else:
            out.append(refs_in(node))

    visit(tree)
    return [g for g in out if len(g) > 1] + [g for g in out if len(g) == 1]
