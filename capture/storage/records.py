"""Records: the structured measurements snippets emit next to their human-readable output.

One JSON object per line of the file named by BOOK_RECORDS:

    {"name": "t.synced", "value": 0.0021, "unit": "s", "tags": {"run": "0"}}

name: a non-empty string; value: a finite number, a string or a bool; unit: a string (default
""); tags: a flat object of strings, finite numbers or bools (default {}). Anything else on a
line is an error reported with its line number, and the run is not published.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from capture.system import regular

FIELDS = ("name", "value", "unit", "tags")


@dataclass
class Parsed:
    records: list[dict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # "line N: why"


def _text_problem(s: str) -> str | None:
    """A string JSON can hold but UTF-8 cannot (a lone surrogate such as \\ud800)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"{s[:40]!r} is not valid Unicode text (a lone surrogate {s[e.start]!r} at character {e.start + 1})"
    return None


def _scalar_problem(v: object) -> str | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, str):
        return _text_problem(v)
    if isinstance(v, int):
        try:
            float(v)
        except OverflowError:
            return f"an integer of {len(str(abs(v)))} digits is too large for a number (at most about 1.8e308)"
        return None
    if isinstance(v, float):
        return None if math.isfinite(v) else f"{v!r} is not a finite number"
    return f"{json.dumps(v)[:40]} is a {type(v).__name__}, not a number, string or bool"


def record_problem(rec: object) -> str | None:
    """Why `rec` is not a valid record, or None."""
    if not isinstance(rec, dict):
        return f"a record is a JSON object, not {type(rec).__name__}"
    unknown = sorted(set(rec) - set(FIELDS))
    if unknown:
        return f"unknown field(s) {unknown}; a record has {', '.join(FIELDS)}"
    name = rec.get("name")
    if not isinstance(name, str) or not name.strip():
        return f"name must be a non-empty string, not {name!r}"
    if _text_problem(name):
        return f"name {_text_problem(name)}"
    if "value" not in rec:
        return f"record {name!r} has no value"
    why = _scalar_problem(rec["value"])
    if why:
        return f"record {name!r}: value {why}"
    if not isinstance(rec.get("unit", ""), str):
        return f"record {name!r}: unit must be a string, not {rec['unit']!r}"
    if _text_problem(rec.get("unit", "")):
        return f"record {name!r}: unit {_text_problem(rec['unit'])}"
    tags = rec.get("tags", {})
    if not isinstance(tags, dict):
        return f"record {name!r}: tags must be an object of scalars, not {type(tags).__name__}"
    for k, v in tags.items():
        why = _text_problem(k) or _scalar_problem(v)
        if why:
            return f"record {name!r}: tag {k!r}: {why}"
    return None


def _reject_constant(text: str):
    raise ValueError(f"{text} is not a finite number")


def parse_records(data: bytes) -> Parsed:
    """Records from JSONL bytes, with every bad line named. A last line without its newline that
    does not parse is a write cut short by a crash: dropped, not an error (the run's exit says more)."""
    out = Parsed()
    lines = data.split(b"\n")
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        last_unterminated = n == len(lines)
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            out.errors.append(f"line {n}: not UTF-8 (byte {raw[e.start]:#04x} at column {e.start + 1})")
            continue
        try:
            rec = json.loads(line, parse_constant=_reject_constant)
        except ValueError as e:
            if last_unterminated and isinstance(e, json.JSONDecodeError):
                continue
            if not isinstance(e, json.JSONDecodeError) and "integer string conversion" in str(e):
                e = ValueError(f"an integer of more than {sys.get_int_max_str_digits()} digits is too large for a number")
            out.errors.append(f"line {n}: {e}")
            continue
        why = record_problem(rec)
        if why:
            out.errors.append(f"line {n}: {why}")
            continue
        out.records.append({"name": rec["name"], "value": rec["value"], "unit": rec.get("unit", ""), "tags": rec.get("tags", {})})
    return out


def read_file(path: Path) -> Parsed:
    if not path.is_file():
        return Parsed()
    return parse_records(regular.read_bytes(path))


def read_records(path: Path) -> list[dict]:
    """The valid records of a JSONL file (bad lines left out; `read_file` names them)."""
    return read_file(path).records


def matches(rec: dict, name: str, tags: dict | None = None) -> bool:
    if rec["name"] != name:
        return False
    return all(str(rec["tags"].get(k)) == str(v) for k, v in (tags or {}).items())


def select(records: list[dict], name: str, tags: dict | None = None) -> list[dict]:
    return [r for r in records if matches(r, name, tags)]
