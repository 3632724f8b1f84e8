"""docs/dev/coverage.md: every point of the author's two drafts is either placed (a public anchor,
and the experiments that carry it) or has a reason for not being on the page.

The table is parsed as written: one row per point, numbered E<section>.<n> (the eager draft) or
D<section>.<n> (the design draft); the location cell is a {ref} to a public anchor or "—"; the
experiment cell lists ids in backticks, an id followed by （计划） being one another branch is adding.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
COVERAGE = DOCS / "dev" / "coverage.md"

# Experiments another branch is adding (issue 21, the design page). Once merged they are in the
# manifest: drop the （计划） marks in the table and empty this set.
PLANNED: set[str] = set()

ROW_ID = re.compile(r"^[ED]\d+\.\d+$")
REF = re.compile(r"\{ref\}`([^`<>]+)`")
EXPERIMENT = re.compile(r"`([a-z0-9][a-z0-9-]*)`(（计划）)?")
NOT_PLACED = ("不放", "未放")


def rows() -> list[dict]:
    out = []
    for lineno, line in enumerate(COVERAGE.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("| "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not ROW_ID.match(cells[0]):
            continue
        assert len(cells) == 5, f"line {lineno}: {len(cells)} cells, want 5: {line}"
        number, point, where, experiments, note = cells
        out.append(
            {
                "line": lineno,
                "number": number,
                "point": point,
                "refs": REF.findall(where),
                "where": where,
                "experiments": [] if experiments == "—" else EXPERIMENT.findall(experiments),
                "note": note,
            }
        )
    return out


def public_labels() -> set[str]:
    labels = set()
    for line in (DOCS / "anchors.txt").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            labels.add(line.partition("#")[2])
    return labels


def manifest() -> list[dict]:
    with open(DOCS / "experiments.toml", "rb") as fh:
        return tomllib.load(fh)["experiment"]


def test_table_has_rows_for_both_drafts():
    numbers = [r["number"] for r in rows()]
    assert any(n.startswith("E") for n in numbers) and any(n.startswith("D") for n in numbers)
    assert len(set(numbers)) == len(numbers), "duplicate point numbers"


def test_every_anchor_is_public():
    labels = public_labels()
    wrong = [f"line {r['line']} ({r['number']}): {ref}" for r in rows() for ref in r["refs"] if ref not in labels]
    assert not wrong, "not in docs/anchors.txt:\n" + "\n".join(wrong)


def test_every_experiment_exists_or_is_planned():
    ids = {e["id"] for e in manifest()}
    wrong = []
    for r in rows():
        for exp, planned in r["experiments"]:
            if planned:
                if exp not in PLANNED:
                    wrong.append(f"line {r['line']} ({r['number']}): {exp} is marked planned but is not in PLANNED")
            elif exp not in ids:
                wrong.append(f"line {r['line']} ({r['number']}): {exp} is not in docs/experiments.toml")
    assert not wrong, "\n".join(wrong)


def test_no_row_has_neither_place_nor_reason():
    wrong = []
    for r in rows():
        if r["where"] == "—":
            if not r["note"].startswith(NOT_PLACED[0]):
                wrong.append(f"line {r['line']} ({r['number']}): no section, and the note gives no reason (不放：...)")
        elif not r["refs"]:
            wrong.append(f"line {r['line']} ({r['number']}): the location is neither a {{ref}} nor —")
        if r["note"].startswith(NOT_PLACED) and len(r["note"]) < 8:
            wrong.append(f"line {r['line']} ({r['number']}): the reason is empty")
    assert not wrong, "\n".join(wrong)


def test_every_macos_only_experiment_has_a_row():
    named = {exp for r in rows() for exp, _ in r["experiments"]}
    mac_only = [e["id"] for e in manifest() if e.get("platforms") == ["macos"]]
    missing = [exp for exp in mac_only if exp not in named]
    assert not missing, "experiments that run only on macOS, with no row in docs/dev/coverage.md: " + ", ".join(missing)


def test_planned_experiments_are_all_named():
    named = {exp for r in rows() for exp, planned in r["experiments"] if planned}
    assert named == PLANNED, f"PLANNED and the （计划） marks differ: {sorted(named ^ PLANNED)}"
