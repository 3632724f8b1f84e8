"""On a phone, a list item's evidence is one click away.

design.md argues in bullet lists: each item is a bold lead sentence and a paragraph, then the evidence
(a snippet, an output in machine tabs, a table, a claim checked against the data, notes per machine).
At 390 px that evidence made the page three times as tall as its argument. This pass wraps everything
from the item's first piece of evidence to its end in one closed <details> (reader.disclosure) whose
summary names what is inside (「代码、输出和断言」).

The folding is a phone's only: at 641 px and wider book-site.css hides the summary and shows the
content of the closed <details> (its ::details-content), so a laptop reads the page as before. The
text stays in the HTML: the search index, search engines and the browser's find-in-page (which opens a
closed <details> it finds text in, as does a link to an id inside one) all see it.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx

from capture.sphinxext.reader import details, disclosure, setup_nodes

# what a piece of evidence is, by its classes (the capture directives' nodes) -> the word in the summary
KINDS = (
    ("book-snippet", "代码"),
    ("book-output", "输出"),
    ("book-notice-missing", "输出"),
    ("book-notice-awaiting", "输出"),
    ("book-until-captured", "输出"),
    ("book-records-table", "表"),
    ("book-chart", "图"),
    ("book-claim", "断言"),
)
ORDER = ("代码", "输出", "表", "图", "断言")


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
    """「代码和输出」, 「代码、输出和断言」: the kinds of evidence folded, in a fixed order."""
    found = set()
    for child in children:
        for node in child.findall(nodes.Element):
            kind = _kind(node)
            if kind:
                found.add(kind)
    words = [w for w in ORDER if w in found]
    return words[0] if len(words) == 1 else "、".join(words[:-1]) + "和" + words[-1]


def fold_item(item: nodes.list_item) -> bool:
    """Fold the item's evidence: from its first piece after the opening paragraph to its end."""
    children = list(item.children)
    if len(children) < 2 or not isinstance(children[0], nodes.paragraph):
        return False
    if any(isinstance(c, details) for c in children):
        return False
    start = next((i for i, c in enumerate(children[1:], 1)
                  if _kind(c) in ("代码", "输出", "表", "图")), None)
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
        if item.parent is not None and not any(isinstance(a, nodes.list_item) for a in _ancestors(item)):
            fold_item(item)


def _ancestors(node: nodes.Node):
    node = node.parent
    while node is not None:
        yield node
        node = node.parent


def setup(app: Sphinx):
    setup_nodes(app)
    app.connect("doctree-resolved", fold_evidence)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
