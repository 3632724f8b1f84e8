"""The site around the pages: everything a reader meets that is not a captured figure.

Each module is a Sphinx extension of its own (a throwaway test project can load one alone);
`capture.sphinxext.site` loads them all:

- anchors   every section labelled, docs/anchors.txt kept (other volumes link here)
- volumes   {vol}`burn:label` references into the other volumes
- zh_text   a line break between two Chinese characters is not a space
- rust_api  sphinx-rust's API pages re-read only when the crate changes
- mermaid   charts drawn to SVG at build time (headless Chromium), or in the browser without one
- theme     the theme's templates and assets: no icon script, search scripts on the search page only
- search    the index without charts, tables of contents and captions; chapters ranked first
- ranwhere  the generated page "what ran where", from the fragment store
- buildguard one build at a time per output folder; an interrupted build leaves the next one whole
- fences    a directive closed early by an inner fence of the same length is a build error
- glossary  the book's terms (docs/terms.toml): the glossary, the words pages avoid
- evidence  a section's one fold ({evidence}); on a phone, a list item's evidence folded behind one line
- codewrap  inline code breaks between its parts, never inside a word

"Re-read the pages that depend on X when X changes" is done once, in depends.py.
"""

from __future__ import annotations

from sphinx.application import Sphinx

MODULES = ("buildguard", "anchors", "volumes", "zh_text", "rust_api", "mermaid", "theme", "search", "ranwhere", "fences",
           "glossary", "evidence", "codewrap")


def setup(app: Sphinx):
    for name in MODULES:
        app.setup_extension(f"{__name__}.{name}")
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
