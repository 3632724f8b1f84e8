"""docs/anchors.txt: each public anchor of this volume is an id in the built page and a label
in objects.inv, so that a rename cannot silently break the burn and candle volumes' links.
(The strict build checks the list against the labels too: capture/sphinxext/anchors.py.)"""

from __future__ import annotations

from site_helpers import DOCS, ParsedPage

ANCHORS = DOCS / "anchors.txt"


def public_anchors() -> list[tuple[str, str]]:
    entries = []
    for line in ANCHORS.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            page, _, label = line.partition("#")
            entries.append((page, label))
    return entries


def test_anchor_list_is_well_formed():
    entries = public_anchors()
    assert entries, f"{ANCHORS} lists no anchor"
    assert all(page and label for page, label in entries)
    assert len(set(entries)) == len(entries), "duplicate lines"


def test_each_public_anchor_is_an_id_in_its_page(site):
    missing = []
    for page, label in public_anchors():
        path = site / f"{page}.html"
        if not path.is_file():
            missing.append(f"{page}#{label}: no page {path.name}")
        elif label not in ParsedPage(path).ids:
            missing.append(f"{page}#{label}: no id {label!r} in {page}.html")
    assert not missing, "\n".join(missing)


def test_each_public_anchor_is_a_label_in_objects_inv(site):
    from sphinx.util.inventory import InventoryFile

    with open(site / "objects.inv", "rb") as fh:
        labels = InventoryFile.load(fh, "", lambda _base, loc: loc).get("std:label", {})
    wrong = [
        f"{page}#{label}: objects.inv has {labels[label][2] if label in labels else 'nothing'}"
        for page, label in public_anchors()
        if labels.get(label, (None, None, None))[2] != f"{page}.html#{label}"
    ]
    assert not wrong, "\n".join(wrong)
