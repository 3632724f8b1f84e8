"""Stable section anchors, because the burn and candle volumes link into this one.

1. Every section of a page carries an explicit label on the line before its heading,
   `(eager-return-time)=`. Chinese headings get ids like `id3`, which move when a section
   is added above; labels don't. Generated pages (`book_label_exempt`) are skipped.
2. A label is lowercase ASCII words joined by hyphens, so that the HTML id is the label
   itself (docutils would turn `fusion_decorator` into the id `fusion-decorator`).
3. `book_anchors_file` (docs/anchors.txt) lists every public anchor as `page#label`.
   The build warns when a listed anchor is gone (a section renamed or removed without
   keeping its old label) and when a page has a label the list lacks, so that no label
   can disappear later without a visible change to the list.

Renaming a section keeps its old anchor by keeping the old label above the new one:

    (eager-old-name)=
    (eager-new-name)=
    ## 新的标题

Both become ids in the HTML: the section's id is the label nearest the heading, each
other label gets an empty <span id="...">. See docs/dev/site.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging
from sphinx.util.matching import Matcher

logger = logging.getLogger(__name__)

LABEL_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def _exempt(app: Sphinx, docname: str) -> bool:
    return Matcher(app.config.book_label_exempt)(docname)


def check_labels(app: Sphinx, doctree: nodes.document) -> None:
    """doctree-read: every section labelled, every label usable as its own HTML id."""
    docname = app.env.docname
    if _exempt(app, docname):
        return
    for section in doctree.findall(nodes.section):
        if not any(doctree.nametypes.get(name) for name in section["names"]):
            title = section.next_node(nodes.title)
            heading = title.astext() if title else "?"
            logger.warning(
                f"section 「{heading}」 has no label: write `({docname.replace('/', '-')}-<topic>)=` "
                "on the line before its heading",
                location=section,
                type="book",
                subtype="label",
            )
    for name, explicit in doctree.nametypes.items():
        node_id = doctree.nameids.get(name)
        if explicit and node_id and (name != node_id or not LABEL_RE.fullmatch(name)):
            logger.warning(
                f"label {name!r} becomes the HTML id {node_id!r}: use lowercase letters, digits and hyphens",
                location=doctree.ids.get(node_id),
                type="book",
                subtype="label",
            )


def read_anchors(path: Path) -> dict[tuple[str, str], int]:
    """`page#label` lines of an anchors file -> line number; '#' comments and blanks skipped."""
    anchors: dict[tuple[str, str], int] = {}
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        logger.warning(f"the list of public anchors cannot be read: {e}", location=str(path), type="book", subtype="anchors")
        return anchors
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        page, sep, label = line.partition("#")
        if not sep or not page or not label:
            logger.warning(f"expected `page#label`, got {line!r}", location=f"{path}:{lineno}", type="book", subtype="anchors")
            continue
        anchors[(page, label)] = lineno
    return anchors


def check_anchors(app: Sphinx, env: BuildEnvironment) -> None:
    """env-check-consistency: docs/anchors.txt and the book's labels agree."""
    if not app.config.book_anchors_file:
        return
    path = Path(app.confdir, app.config.book_anchors_file)
    if not path.is_file():
        logger.warning("the list of public anchors is missing", location=str(path), type="book", subtype="anchors")
        return
    listed = read_anchors(path)
    labels = {
        (docname, label)
        for label, (docname, _id) in env.get_domain("std").anonlabels.items()
        if docname in env.found_docs and not _exempt(app, docname)
    }
    for (page, label), lineno in sorted(listed.items(), key=lambda kv: kv[1]):
        if (page, label) not in labels:
            logger.warning(
                f"public anchor {page}#{label} is gone; other volumes link to it. "
                "Keep the old label on the line above the new one (docs/dev/site.md)",
                location=f"{path}:{lineno}",
                type="book",
                subtype="anchors",
            )
    missing = sorted(labels - set(listed))
    if missing:
        lines = "\n".join(f"{page}#{label}" for page, label in missing)
        logger.warning(
            f"{len(missing)} label(s) not listed yet; add these lines (they become public):\n{lines}",
            location=str(path),
            type="book",
            subtype="anchors",
        )


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("book_anchors_file", "", "env", types=[str])
    app.add_config_value("book_label_exempt", [], "env", types=[list])
    app.connect("doctree-read", check_labels)
    app.connect("env-check-consistency", check_anchors)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
