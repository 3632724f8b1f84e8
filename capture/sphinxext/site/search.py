"""Search that finds prose: what goes into the index, and in which order results come.

- Left out of the index: tables of contents (a page's toctree would make it match every title it
  lists), charts, the provenance captions under outputs and anything marked `book-no-search`.
  Sphinx indexes the written doctree; here it gets a copy without those nodes.
- Left out entirely: the Rust source pages that sphinx-rust generates (api/**/code/*, untitled) and the notes
  for authors (dev/*: an author section outside the reader's table of contents, docs/dev/index.md).
- Ranked: a query that is one of the book's terms (docs/terms.toml) finds the page that introduces it
  first, linked to that section; otherwise chapters first, then the front page, the developer notes, the
  appendix, and the generated API pages last (html_search_scorer: static/book-scorer.js, with the terms).
- Split: a run of Chinese the index does not know whole is cut into the longest words it knows.
- The summaries under each result skip charts and tables of contents (static/book-site.js).
- jieba's dictionary loads three times faster, with the same words (zhsearch.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.builders.html import StandaloneHTMLBuilder
from sphinx.config import Config
from sphinx.util.matching import Matcher
from sphinxcontrib.mermaid import mermaid

HERE = Path(__file__).resolve().parent
SCORER = HERE / "static" / "book-scorer.js"
UNSEARCHED_CLASSES = {"toctree-wrapper", "book-no-search", "book-datachart", "book-chart-caption", "book-ran-where"}
UNSEARCHED_PAGES = ["api/crates/*/code/*",  # sphinx-rust's source listings: code, no prose, no title
                    "dev/*"]  # the notes for authors (docs/dev/index.md): not what a reader searches for


def searchable(doctree: nodes.document) -> nodes.document:
    """A copy of the page without what a reader does not search for."""
    copy = doctree.deepcopy()
    drop = [n for n in copy.findall(nodes.Element)
            if isinstance(n, (mermaid, addnodes.toctree)) or UNSEARCHED_CLASSES & set(n.get("classes", []))
            or (isinstance(n, nodes.caption) and "book-output-wrapper" in n.parent.get("classes", []))]
    for node in drop:
        if node.parent is not None:
            node.parent.remove(node)
    return copy


def on_builder_inited(app: Sphinx) -> None:
    builder = app.builder
    if not isinstance(builder, StandaloneHTMLBuilder) or getattr(builder, "_book_search", False):
        return
    index_page = builder.index_page

    def index_searchable(pagename: str, doctree: nodes.document, title: str) -> None:
        index_page(pagename, searchable(doctree), title)

    builder.index_page = index_searchable
    builder._book_search = True


def on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    if Matcher(UNSEARCHED_PAGES)(app.env.docname):
        app.env.metadata[app.env.docname]["nosearch"] = True


def terms_map(app: Sphinx) -> dict[str, list[str]]:
    """Each term (Chinese; English words in lower case) -> [page, label] of the section introducing it,
    the page looked up in the public anchors (docs/anchors.txt lists every label)."""
    from capture.sphinxext.site.glossary import book_terms

    anchors = Path(app.confdir) / app.config.book_anchors_file if getattr(app.config, "book_anchors_file", "") else None
    pages = {}
    if anchors is not None and anchors.is_file():
        for line in anchors.read_text(encoding="utf-8").splitlines():
            if "#" in line and not line.lstrip().startswith("#"):
                page, label = line.strip().split("#", 1)
                pages[label] = page
    out: dict[str, list[str]] = {}
    for term in book_terms(app).terms:
        if term.at in pages:
            for key in [term.zh, *(e.strip().lower() for e in term.en.replace("(", ",").replace(")", "").split(","))]:
                if key:
                    out.setdefault(key, [pages[term.at], term.at])
    return out


def on_config_inited(app: Sphinx, config: Config) -> None:
    """The scorer: static/book-scorer.js with the terms' pages in front, written next to the doctrees."""
    if config.html_search_scorer:
        return
    import json

    code = f"var BOOK_TERMS = {json.dumps(terms_map(app), ensure_ascii=False, sort_keys=True)};\n" + SCORER.read_text(encoding="utf-8")
    target = Path(app.doctreedir) / "book-scorer.js"
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.is_file() or target.read_text(encoding="utf-8") != code:
        target.write_text(code, encoding="utf-8")
    config.html_search_scorer = str(target)


def setup(app: Sphinx) -> dict[str, Any]:
    from sphinx import search as sphinx_search

    # By name: imported (with jieba) only when a page is written to the index (zhsearch.py)
    sphinx_search.languages["zh"] = "capture.sphinxext.site.zhsearch.BookChinese"
    app.connect("config-inited", on_config_inited)
    app.connect("builder-inited", on_builder_inited)
    app.connect("doctree-read", on_doctree_read)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
