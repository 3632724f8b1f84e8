"""Every internal link of the built site opens a file, and every #anchor exists in it."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

from site_helpers import ParsedPage, html_pages, is_external

SKIP_SCHEMES = ("mailto:", "javascript:", "data:", "tel:")


def test_internal_links_and_anchors_resolve(site):
    @cache
    def ids(path: Path) -> set[str]:
        return ParsedPage(path).ids

    broken = []
    checked = 0
    for page in html_pages(site):
        for tag, attr, url in ParsedPage(page).urls:
            if tag == "base":  # the 404 page's base: the path the site is served under, not a link (test_deploy.py)
                assert page.name == "404.html" and url.startswith("/") and url.endswith("/"), (page, url)
                continue
            if is_external(url) or url.startswith(SKIP_SCHEMES):
                continue
            parts = urlsplit(url)
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            checked += 1
            where = f"{page.relative_to(site)}: <{tag} {attr}={url}>"
            if not target.is_file():
                broken.append(f"{where}: no file {target}")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in ids(target):
                broken.append(f"{where}: no id {parts.fragment!r} in {target.relative_to(site)}")
    assert checked > 0
    assert not broken, "\n".join(broken)
