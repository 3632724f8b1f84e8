"""A section's evidence behind one line: the {evidence} fold (every width), and a list item's (phone only).

{evidence} is the section's one fold, closed at every width (phone and laptop). A section states its
point, shows its code and one output from a named machine ({output} `:platform:`), and puts everything
else in it: the other machines' outputs, the tables of all machines, the claims' checks:

    :::{evidence}                         summary generated from what it holds (「输出、表和核对」)
    ```{output} burn-ret@gpu
    :except: linux-x86_64-nvidia-h200
    ```
    ...
    :::

    :::{evidence} 其他机器的输出            or written by the page

A second {evidence} directly in the same section is a warning (book.evidence): one fold per section.
The text stays in the HTML: the search index and find-in-page see it; a link to an id inside the fold
opens it (Chromium does so itself; book-site.js for browsers that do not). Its summary line is left out
of the search index (book-no-search).

On a phone, a list item's evidence is one click away too.

design.md argues in bullet lists: each item is a bold lead sentence and a paragraph, then the evidence
(a snippet, an output in machine tabs, a table, a claim checked against the data, notes per machine).
At 390 px that evidence made the page three times as tall as its argument. This pass wraps everything
from the item's first piece of evidence to its end in one closed <details> (reader.disclosure) whose
summary names what is inside (「代码、输出和核对」).

The folding is a phone's only: at 641 px and wider book-site.css hides the summary and shows the
content of the closed <details> (its ::details-content), so a laptop reads the page as before. The
text stays in the HTML: the search index, search engines and the browser's find-in-page (which opens a
closed <details> it finds text in, as does a link to an id inside one) all see it.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from capture.sphinxext.reader import CHECKS, details, disclosure, setup_nodes

logger = logging.getLogger(__name__)
FOLD_CLASS = "book-fold"

# what a piece of evidence is, by its classes (the capture directives' nodes) -> the word in the summary
KINDS = (
    ("book-snippet", "代码"),
    ("book-output", "输出"),
    ("book-notice-missing", "输出"),
    ("book-notice-awaiting", "输出"),
    ("book-until-captured", "输出"),
    ("book-records-table", "表"),
    ("book-chart", "图"),
    ("book-claim", CHECKS),  # a claim's check on each machine (not 「断言」: the machinery's word)
)
ORDER = ("代码", "输出", "表", "图", CHECKS)


def _kind(node: nodes.Node) -> str | None:
    if not isinstance(node, nodes.Element):
        return None
    classes = node.get("classes", [])
    for prefix, word in KINDS:
        if any(c.startswith(prefix) for c in classes):
            return word
    if isinstance(node, nodes.container) and any(_kind(c) for c in node.children):
        return next(_kind(c) for c in node.children if _kind(c))  # a wrapper around a table or a chart
    return None


def label(children: list[nodes.Node]) -> str:
    """「代码和输出」, 「代码、输出和核对」: the kinds of evidence folded, in a fixed order."""
    found = set()
    for child in children:
        for node in child.findall(nodes.Element):
            kind = _kind(node)
            if kind:
                found.add(kind)
    words = [w for w in ORDER if w in found]
    return words[0] if len(words) == 1 else "、".join(words[:-1]) + "和" + words[-1]


# Words by which the text points at the next table or chart (「看下表的 GPU 几行」): what they point at is not folded.
POINTERS = (("表", re.compile(r"下表|下面的表|下面这张表|下列表")), ("图", re.compile(r"下图|下面的图|下面这张图")))
SHOWN = ("代码", "输出", "表", "图")


def pointed(text: str) -> set[str]:
    """The kinds of evidence ("表", "图") that a text points at as coming next."""
    return {kind for kind, words in POINTERS if words.search(text)}


def fold_start(children: list[nodes.Node]) -> int | None:
    """Where the item's fold starts: at its first piece of evidence after the opening paragraph, or, when the text
    before it points at a table or chart below, after the first one of those (the reader must see what is pointed at)."""
    start = next((i for i, c in enumerate(children[1:], 1) if _kind(c) in SHOWN), None)
    if start is None:
        return None
    wanted = pointed(" ".join(c.astext() for c in children[:start] if not _kind(c)))
    if not wanted:
        return start
    target = next((i for i in range(start, len(children)) if _kind(children[i]) in wanted), None)
    if target is None:
        return start
    return next((i for i in range(target + 1, len(children)) if _kind(children[i]) in SHOWN), None)


def fold_item(item: nodes.list_item) -> bool:
    """Fold the item's evidence: from its first piece after the opening paragraph (or after what its text points
    at) to its end."""
    children = list(item.children)
    if len(children) < 2 or not isinstance(children[0], nodes.paragraph):
        return False
    if any(isinstance(c, details) for c in children):
        return False
    start = fold_start(children)
    if start is None:
        return False
    folded = children[start:]
    for child in folded:
        item.remove(child)
    box = disclosure(label(folded), folded, classes=("book-evidence",))
    box[0]["classes"].append("book-no-search")  # the label is not the page's text (search.py)
    item += box
    return True


def fold_evidence(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if app.builder.format != "html":
        return
    for item in list(doctree.findall(nodes.list_item)):
        if item.parent is not None and not any(isinstance(a, nodes.list_item) or _is_fold(a) for a in _ancestors(item)):
            fold_item(item)  # (inside an {evidence} fold a list item is folded already)


# -- {evidence}: the section's one fold, closed at every width --------------------------------------------
def _is_fold(node: nodes.Node) -> bool:
    return isinstance(node, details) and FOLD_CLASS in node.get("classes", [])


def fold_label(children: list[nodes.Node]) -> str:
    """What the fold holds, in the reader's words: 「各台机器的输出、表和核对」 (each output's 「来历」 is its own icon,
    not a word of the title)."""
    found = set()
    machines = False
    for child in children:
        for node in child.findall(nodes.Element):
            kind = _kind(node)
            if kind:
                found.add(kind)
            if "book-platform-tabs" in node.get("classes", []):
                machines = True
    words = [w for w in ORDER if w in found]
    if "输出" in words:
        words[words.index("输出")] = "各台机器的输出" if machines else "输出"
    if not words:
        return "更多"
    return words[0] if len(words) == 1 else "、".join(words[:-1]) + "和" + words[-1]


class EvidenceDirective(SphinxDirective):
    """:::{evidence} [summary] … ::: — see the module's docstring."""

    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True

    def run(self):
        children = self.parse_content_to_nodes()
        text = self.arguments[0].strip() if self.arguments else fold_label(children)
        box = disclosure(text, children, classes=(FOLD_CLASS,))
        box[0]["classes"].append("book-no-search")  # the summary is not the page's text (search.py)
        self.set_source_info(box)
        return [box]


def _home(node: nodes.Node) -> bool:
    """A fold's home: its section (or the page), or a machine's tab ({per-platform} renders a fold once per machine)."""
    if isinstance(node, (nodes.section, nodes.document)):
        return True
    return isinstance(node, nodes.Element) and "sd-tab-content" in node.get("classes", [])


def one_fold_per_section(app: Sphinx, doctree: nodes.document) -> None:
    """doctree-read: a section (or a page without sections, or one machine's tab) holds at most one {evidence} fold."""
    seen: dict[int, details] = {}
    for fold in doctree.findall(details):
        if not _is_fold(fold):
            continue
        section = next((a for a in _ancestors(fold) if _home(a)), None)
        first = seen.setdefault(id(section), fold)
        if first is not fold:
            logger.warning("a second {evidence} fold in this section (the first is at line %s): a section has one fold, "
                           "closed at every width, holding all its evidence — merge them into one",
                           first.line, location=fold, type="book", subtype="evidence")


def _ancestors(node: nodes.Node):
    node = node.parent
    while node is not None:
        yield node
        node = node.parent


def setup(app: Sphinx):
    setup_nodes(app)
    app.add_directive("evidence", EvidenceDirective)
    app.connect("doctree-read", one_fold_per_section)
    app.connect("doctree-resolved", fold_evidence)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
