"""Inline code breaks between its parts, never inside a word.

Sphinx writes inline code as `<code class="literal"><span class="pre">TOKEN</span> …</code>`, one span per
whitespace-separated token. book-site.css lets a token wrap only where it has to (`overflow-wrap: break-word`:
a token that fits on a line is never split, so `chain8` does not become "chai/n8" in a narrow table cell and
`nox -s regenerate` not "regenera te"). This pass gives a long token (a record reference, a path, an
environment variable, a long CamelCase name) places to break between its parts: a <wbr> after `.`, `/`, `_`,
`:`, `@`, `(`, `,`, `=` where a letter or digit follows, and before each capitalised part of a CamelCase name
(Shape·Mismatch·Binary·Op). Each part is an inline block (book-site.css), so it too moves to the next line
whole. <wbr> is not copied with the text, so a copied command stays whole.
"""

from __future__ import annotations

import re

from sphinx.application import Sphinx

LONG = 12  # characters: shorter tokens fit any column and keep no break opportunity
SPAN = re.compile(r'(<span class="pre">)([^<]{%d,})(</span>)' % LONG)
PART = re.compile(r"(\.|/|_|:|@|&#64;|\(|,|=)(?=[A-Za-z0-9])|(?<=[a-z0-9])(?=[A-Z][a-z])")


def breakable(body: str) -> str:
    """The page body with each long inline-code token cut into parts, each a span.book-code-part (an inline block:
    it moves to the next line whole, so no part breaks at its own hyphen), with a <wbr> between them."""
    def parts(token: str) -> str:
        cut = PART.sub(lambda m: (m.group(1) or "") + "\0", token).split("\0")
        return "<wbr>".join(f'<span class="book-code-part">{part}</span>' for part in cut if part)

    return SPAN.sub(lambda m: m.group(1) + parts(m.group(2)) + m.group(3), body)


def on_html_page_context(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if doctree is not None and isinstance(context.get("body"), str):
        context["body"] = breakable(context["body"])


def setup(app: Sphinx):
    app.connect("html-page-context", on_html_page_context)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
