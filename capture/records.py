"""Records: the structured measurements snippets emit next to their human-readable output."""

from __future__ import annotations

import json
from pathlib import Path


def read_records(path: Path) -> list[dict]:
    """Records from a JSONL file; a half-written last line (a crash mid-write) is dropped."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and "name" in rec and "value" in rec:
            rec.setdefault("unit", "")
            rec.setdefault("tags", {})
            out.append(rec)
    return out


def matches(rec: dict, name: str, tags: dict | None = None) -> bool:
    if rec["name"] != name:
        return False
    return all(str(rec["tags"].get(k)) == str(v) for k, v in (tags or {}).items())


def select(records: list[dict], name: str, tags: dict | None = None) -> list[dict]:
    return [r for r in records if matches(r, name, tags)]
