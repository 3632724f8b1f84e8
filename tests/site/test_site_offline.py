"""The built site loads nothing from other hosts: no CDN for scripts, styles, fonts or charts."""

from __future__ import annotations

import re

from site_helpers import ParsedPage, html_pages, is_external

# Tags whose URL the browser fetches while showing the page (a plain <a href> is only a link).
LOADED = {"script", "link", "img", "iframe", "source", "video", "audio", "object", "embed", "track", "input"}
CSS_URL = re.compile(r"""(?:@import\s+(?:url\()?|url\()\s*['"]?((?:[a-z][a-z0-9+.-]*:)?//[^'")\s]+)""", re.I)
INLINE_IMPORT = re.compile(r"""\bimport\b[^;]*?['"]((?:https?:)?//[^'"]+)['"]""")
SCRIPT = re.compile(r"<script\b[^>]*>(.*?)</script>", re.S | re.I)  # an import in a page's prose is not code


def test_pages_load_nothing_from_other_hosts(site):
    found = []
    for page in html_pages(site):
        parsed = ParsedPage(page)
        found += [f"{page.relative_to(site)}: <{tag} {attr}={url}>" for tag, attr, url in parsed.urls
                  if tag in LOADED and is_external(url)]
        found += [f"{page.relative_to(site)}: inline import {url}"
                  for code in SCRIPT.findall(page.read_text(encoding="utf-8")) for url in INLINE_IMPORT.findall(code)]
    assert not found, "\n".join(found)


def test_stylesheets_load_nothing_from_other_hosts(site):
    found = []
    for css in (site / "_static").rglob("*.css"):
        found += [f"{css.relative_to(site)}: {url}" for url in CSS_URL.findall(css.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)


def test_mermaid_is_the_pinned_local_copy(site):
    import json

    from site_helpers import DOCS

    lock = json.loads((DOCS / "_mermaid" / "package-lock.json").read_text(encoding="utf-8"))
    local = site / "_static" / "mermaid" / "mermaid.min.js"
    installed = DOCS / "_mermaid" / "node_modules" / "mermaid"
    assert local.is_file(), "the build did not copy mermaid.min.js into _static/mermaid/"
    assert json.loads((installed / "package.json").read_text())["version"] == lock["packages"]["node_modules/mermaid"]["version"]
    assert local.read_bytes() == (installed / "dist" / "mermaid.min.js").read_bytes()


def test_pages_load_no_icon_script_and_search_only_where_searched(site):
    """Light pages: no 1.5 MB fontawesome.js (the icons are the theme's webfont) and the search scripts and
    index only on the search page (capture/sphinxext/site/templates/layout.html)."""
    heavy = []
    for page in html_pages(site):
        scripts = [url for tag, attr, url in ParsedPage(page).urls if tag == "script"]
        rel = page.relative_to(site).as_posix()
        heavy += [f"{rel}: {u}" for u in scripts if "fontawesome" in u]
        if rel != "search.html":
            heavy += [f"{rel}: {u}" for u in scripts if re.search(r"searchtools|searchindex|language_data", u)]
    assert not heavy, "\n".join(heavy)
    search = [url for tag, _, url in ParsedPage(site / "search.html").urls if tag == "script"]
    assert any("searchindex.js" in u for u in search) and any("searchtools" in u for u in search)
