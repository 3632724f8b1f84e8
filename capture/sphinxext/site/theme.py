"""The theme as the book wants it: light pages, an accessible sidebar, the site's own scripts and styles.

sphinx-book-theme 1.3.0 on pydata-sphinx-theme 0.17.1, adjusted in one place:

- templates/layout.html: no fontawesome.js (1.5 MB; the icons come from the webfont that the
  theme's CSS declares), and the search scripts and the 80 KB index only on the search page;
- templates/search-button-field.html: the search button is named by its visible text
  (axe: label-content-name-mismatch);
- the sidebar's collapsible sections: each <summary> is named after its section (axe: summary-name);
- templates/book-footer.html: the footer says what the book is and the commit it was built from (the
  theme's author and copyright lines are not shown); the permalinks' tooltips are Chinese (WORDS);
- static/book-site.js + book-site.css: overflowing blocks say that they scroll (and tables keep
  their first column in view), charts open full-size, search summaries skip charts and tables of
  contents. Loaded on every page.
"""

from __future__ import annotations

import gettext
import html
import os
import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit
from typing import Any

from markupsafe import Markup
from sphinx import locale
from sphinx.application import Sphinx
from sphinx.config import Config

from capture.sphinxext.site.depends import Dependency

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"

# pydata-sphinx-theme's collapsible toctree: <a ...>Title</a><details ...><summary><span class="toctree-toggle" ...
_SUMMARY = re.compile(r'(<a class="[^"]*\breference internal\b[^"]*"[^>]*>((?:(?!<a\b).)*?)</a>\s*<details(?: [^>]*)?>\s*)<summary>', re.S)


def name_summaries(toctree_html: str) -> str:
    """Give each collapsible section of the sidebar a name: «展开或收起「标题」»."""
    def named(m: re.Match) -> str:
        title = html.unescape(re.sub(r"<[^>]+>", "", m.group(2))).strip()
        return f'{m.group(1)}<summary aria-label="{html.escape(f"展开或收起「{title}」")}">'

    return _SUMMARY.sub(named, toctree_html)


def static_fingerprint(app: Sphinx) -> list:
    """Sizes and times of the files copied into _static/ (the site's own and the book's)."""
    seen = []
    for folder in app.config.html_static_path:
        root = Path(app.confdir, folder)
        if root.is_dir():
            seen += sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file())
    return seen


# Sphinx copies static files only in a build that writes a page: when one of them changed and no page
# did, the front page is written again, so that an edited style sheet or script reaches the site.
ASSETS = Dependency("site-assets", static_fingerprint, pages=lambda app, env: [app.config.root_doc])


# Sphinx 7.4's zh_CN catalogue lacks the permalinks' titles: they would be English tooltips on every heading.
WORDS = {
    "Link to this heading": "链接到这一节",
    "Link to this code": "链接到这段代码",
    "Link to this table": "链接到这张表",
    "Link to this image": "链接到这张图",
    "Link to this definition": "链接到这个定义",
    "Link to this term": "链接到这个术语",
    "Link to this toctree": "链接到这个目录",
}


class BookWords(gettext.NullTranslations):
    """A fallback after Sphinx's own catalogue: only the strings it does not translate."""

    def gettext(self, message: str) -> str:
        return WORDS.get(message, message)


def add_words(app: Sphinx) -> None:
    """builder-inited: Sphinx's translator (loaded for `language`) falls back to BookWords."""
    if not str(app.config.language or "").startswith("zh"):
        return
    translator = locale.translators.get(("general", "sphinx"))
    if translator is not None and not getattr(translator, "_book_words", False):
        translator.add_fallback(BookWords())
        translator._book_words = True


def commit(root: Path) -> dict | None:
    """The commit the site is built from (the checkout's HEAD; CI's variables without git); None when unknown."""
    full, date = "", ""
    try:
        out = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%H %cs"], capture_output=True, text=True,
                             timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            full, date = out.stdout.split()[:2]
    except (OSError, subprocess.SubprocessError):
        pass
    full = full or os.environ.get("GITHUB_SHA") or os.environ.get("READTHEDOCS_GIT_COMMIT_HASH") or ""
    return {"full": full, "short": full[:10], "date": date} if full else None


def on_config_inited(app: Sphinx, config: Config) -> None:
    if str(TEMPLATES) not in config.templates_path:
        config.templates_path.insert(0, str(TEMPLATES))
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))
    # the footer: the book's own line instead of the theme's author and copyright
    options = config.html_theme_options
    options.setdefault("footer_content_items", ["book-footer.html"])
    config.html_context.setdefault("book_commit", commit(Path(app.confdir)))
    config.html_context.setdefault("book_repository_url", config.book_repository_url.rstrip("/"))


def site_path(url: str) -> str:
    """The path the site is served under ("/eager-book/"), from its address; "" when unknown."""
    path = urlsplit(url).path if url else ""
    return path if path.endswith("/") else path + "/" if path else ""


def on_html_page_context(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if pagename == "404" and site_path(app.config.book_site_url):
        # the server sends this page for any missing address, at any depth: its links (relative to the
        # site's root, where it lives) resolve against the site's path
        context["metatags"] = f'<base href="{html.escape(site_path(app.config.book_site_url))}">\n' + context.get("metatags", "")
    toctree = context.get("generate_toctree_html")
    if toctree is not None and not getattr(toctree, "_book_named", False):
        def generate_toctree_html(*args, **kwargs):
            return Markup(name_summaries(str(toctree(*args, **kwargs))))

        generate_toctree_html._book_named = True
        context["generate_toctree_html"] = generate_toctree_html


def setup(app: Sphinx) -> dict[str, Any]:
    # where the book's sources are published (the footer links the commit there); "" for none
    app.add_config_value("book_repository_url", "", "html")
    app.add_config_value("book_site_url", "", "html")  # where the site is served (its 404 page needs the path)
    app.connect("config-inited", on_config_inited)
    app.connect("builder-inited", add_words)
    app.connect("html-page-context", on_html_page_context, priority=900)  # after the theme fills the context
    ASSETS.connect(app)
    app.add_css_file("book-site.css")
    app.add_js_file("book-site.js", defer="defer")
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
