"""The Mac table of docs/dev/mac.md, read as data: every row's encoding, applied to the synthetic Mac.

docs/dev/mac.md has one table row per statement the drafts (../shared/seeds/) make about the M2 Max.
Its last two cells say which record carries the statement and how the synthetic third platform
encodes it; both are read here, so the page and the fixture cannot drift apart: a row whose
encoding cell has no statement fails to parse, a statement that selects nothing fails to apply,
and tests/docs/test_third_platform.py checks every row's carrier on the written Mac.

An encoding cell holds one or more statements in backticks (prose around them, and code spans that
start with neither `KEY`, `platform.`, `none` nor `see`, are ignored):

    KEY:NAME{tag=v,...} = VALUE        set the value of every record it selects (at least one);
                                       a list assigns in the records' order (run, round, process), cycling
    KEY:NAME{tag=v,...} + VALUE        add a record (a result only the Mac's build writes)
    KEY:NAME{tag=v,...} [TAG] = VALUE  set a tag of every record it selects
    KEY:NAME{tag=v,...} drop           remove the records it selects (a result only other backends write)
    KEY .a.b = VALUE                   set a metadata field (versions.threads, caches, ...)
    KEY 'old' -> 'new'                 replace text the reader sees (must occur)
    KEY absent                         the manifest does not run it on macOS (checked, nothing written)
    platform.FIELD = VALUE             the machine (MAC_MACHINE / platform.json)
    none                               no experiment of the book carries it (the cell says why)
    see E07                            carried and encoded by that other row

KEY is `experiment@role`, and may be a glob (`torch-*@*`). VALUE: a number with an optional unit
(ns, µs, us, ms, s: stored in seconds), true / false, a quoted string, a [list], or a bare word.
Stdlib only: this module parses, the test applies it to fragments it then writes through the store.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

TABLE = Path(__file__).resolve().parents[2] / "docs/dev/mac.md"
UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_NUM = re.compile(r"^(-?[0-9][0-9_.e+-]*)\s*(ns|µs|us|ms|s)?$")
# a backticked span of the encoding cell that is a statement (others are code named in prose)
_STATEMENT = re.compile(r"^(\S+@\S+|platform\.\S+ =|none$|see [EDS]\d\d[a-z]?$)")
_REF = re.compile(r"^(?P<key>[A-Za-z0-9*?_.-]+@[A-Za-z*?]+)(?::(?P<name>[A-Za-z0-9_.]+)(?:\{(?P<tags>[^}]*)\})?)?$")


@dataclass(frozen=True)
class Statement:
    kind: str  # set | add | tag | drop | meta | text | absent | machine | none | see
    key: str = ""
    name: str = ""
    tags: tuple[tuple[str, str], ...] = ()
    target: str = ""  # the tag (kind tag) or dotted metadata path (meta, machine)
    value: object = None
    old: str = ""


@dataclass
class Row:
    rid: str
    line: int  # in docs/dev/mac.md
    draft: str
    carrier: str
    statements: list[Statement] = field(default_factory=list)


def value(text: str):
    text = text.strip()
    if text.startswith("["):
        return [value(p) for p in _split_list(text[1:-1])]
    if text in ("true", "false"):
        return text == "true"
    if text[:1] in "'\"":
        return ast.literal_eval(text)
    m = _NUM.match(text)
    if m:
        num, unit = m.groups()
        try:
            if unit:
                return float(num) * UNITS[unit]
            return int(num) if re.fullmatch(r"-?\d+", num) else float(num)
        except ValueError:
            return text
    return text


def _split_list(body: str) -> list[str]:
    parts, depth, cur, quote = [], 0, "", ""
    for ch in body:
        if quote:
            cur += ch
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            cur, quote = cur + ch, ch
        elif ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            depth += (ch == "[") - (ch == "]")
            cur += ch
    return [p for p in (*parts, cur) if p.strip()]


def _tags(text: str | None) -> tuple[tuple[str, str], ...]:
    if not text:
        return ()
    return tuple((k.strip(), v.strip()) for k, _, v in (p.partition("=") for p in text.split(",")))


def statement(src: str) -> Statement:
    """One statement of an encoding cell (see the module docstring); ValueError names what is wrong."""
    src = src.strip()
    if src == "none":
        return Statement("none")
    if re.fullmatch(r"see [EDS]\d\d[a-z]?", src):
        return Statement("see", target=src[4:])
    if src.startswith("platform."):
        path, _, val = src.partition("=")
        return Statement("machine", target=path.strip()[len("platform."):], value=value(val))
    head, _, rest = src.partition(" ")
    rest = rest.strip()
    m = _REF.match(head)
    if not m:
        raise ValueError(f"not a reference: {head!r}")
    key, name, tags = m["key"], m["name"] or "", _tags(m["tags"])
    if rest == "absent":
        return Statement("absent", key)
    if rest.startswith(("'", '"')) and "->" in rest:
        old, _, new = rest.partition("->")
        return Statement("text", key, old=value(old), value=value(new))
    if rest.startswith(".") and "=" in rest:
        path, _, val = rest.partition("=")
        return Statement("meta", key, target=path.strip()[1:], value=value(val))
    if not name:
        raise ValueError(f"{src!r}: a record statement needs KEY:NAME")
    tm = re.match(r"^\[(\w+)\]\s*=\s*(.+)$", rest)
    if tm:
        return Statement("tag", key, name, tags, target=tm[1], value=value(tm[2]))
    if rest == "drop":
        return Statement("drop", key, name, tags)
    if rest.startswith("="):
        return Statement("set", key, name, tags, value=value(rest[1:]))
    if rest.startswith("+"):
        return Statement("add", key, name, tags, value=value(rest[1:]))
    raise ValueError(f"{src!r}: expected '= VALUE', '+ VALUE', '[TAG] = VALUE', '.PATH = VALUE', "
                     "\"'old' -> 'new'\" or 'absent'")


def rows(path: Path = TABLE) -> list[Row]:
    """The table's rows: those whose first cell is a row id like E01, D12, S03."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) < 5 or not re.fullmatch(r"[EDS]\d\d[a-z]?", cells[0]):
            continue
        rid, draft, carrier, enc = cells[0], cells[1], cells[-2], cells[-1]
        found = [c for c in re.findall(r"`([^`]+)`", enc) if _STATEMENT.match(c)]
        if not found:
            raise ValueError(f"{path}:{n}: row {rid} has no encoding (a statement in backticks in its last cell)")
        try:
            stmts = [statement(s) for s in found]
        except ValueError as e:
            raise ValueError(f"{path}:{n}: row {rid}: {e}") from None
        out.append(Row(rid, n, draft, carrier, stmts))
    return out


def keys_matching(pattern: str, keys) -> list[str]:
    return sorted(k for k in keys if fnmatch.fnmatchcase(k, pattern))


def _order(rec: dict) -> tuple:
    tags = rec.get("tags") or {}
    return tuple(int(tags[t]) if str(tags.get(t, "")).isdigit() else str(tags.get(t, ""))
                 for t in ("process", "round", "run", "variant", "what", "chain"))


def select(meta: dict, st: Statement) -> list[dict]:
    hits = [r for r in meta["records"] if r["name"] == st.name
            and all(str((r.get("tags") or {}).get(k)) == v for k, v in st.tags)]
    return sorted(hits, key=_order)


def _assign(hits: list[dict], field_: str, val, tag: str = "") -> None:
    vals = val if isinstance(val, list) else [val]
    for i, r in enumerate(hits):
        v = vals[i % len(vals)]
        if tag:
            r["tags"][tag] = v
        else:
            r["value"] = v


def apply(st: Statement, meta: dict, text: str, device: str | None) -> str:
    """Apply a record, tag, metadata or text statement to one fragment; returns its (new) text."""
    where = f"{meta['experiment']}@{meta['role']}"
    if st.kind in ("set", "tag"):
        hits = select(meta, st)
        if not hits:
            raise AssertionError(f"{where}: no record {st.name}{dict(st.tags) or ''}")
        _assign(hits, "value", st.value, st.target if st.kind == "tag" else "")
    elif st.kind == "drop":
        hits = select(meta, st)
        if not hits:
            raise AssertionError(f"{where}: no record {st.name}{dict(st.tags) or ''}")
        meta["records"] = [r for r in meta["records"] if not any(r is h for h in hits)]
    elif st.kind == "add":
        tags = {"framework": meta["framework"], "device": device, **dict(st.tags)}
        meta["records"].append({"name": st.name, "value": st.value, "unit": "", "tags": tags})
        text += f"{st.name}: {st.value}\n"
    elif st.kind == "meta":
        *parents, leaf = st.target.split(".")
        node = meta
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = st.value
    elif st.kind == "text":
        if st.old not in text:
            raise AssertionError(f"{where}: the text has no {st.old!r}")
        text = text.replace(st.old, st.value)
    return text
