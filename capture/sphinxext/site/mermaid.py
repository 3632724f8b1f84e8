"""Mermaid charts as SVG in the page, drawn at build time; in the reader's browser only without Chromium.

sphinxcontrib-mermaid (pinned 2.1.1) supplies the `mermaid` directive and node; the data charts
(capture/sphinxext/charts.py) make the same node. Its own HTML output loads mermaid (3.6 MB) as
an ES module on every page with a chart, from a CDN by default; browsers refuse ES modules on
file:// pages. Here instead:

1. After the pages are read, every chart not drawn yet (render.py's cache) is drawn to SVG by
   headless Chromium with the mermaid pinned in docs/_mermaid (capture/toolchains/assets.py), once in the
   light theme and once in the dark one. A chart mermaid cannot parse is a located warning.
2. Each chart is written as both SVGs (CSS shows the one of the reader's mode), no script:
   pages are light and charts show from file://. The SVG shrinks with a narrow column only
   until its smallest text is 11 px (READABLE_PX), then its box scrolls; 「全屏查看」 opens it
   at its own size (site/static/book-site.js).
3. Without Chromium (or with book_charts = "browser") a chart is written as
   <pre class="mermaid">source</pre> and the page loads book-mermaid.js, which loads the
   classic mermaid build (a plain script, fine on file://) only when a chart comes near the
   viewport, and draws it in the reader's mode.

`mermaid_output_format = "svg"` (a value sphinxcontrib-mermaid accepts) is what this is: SVG
made at build time. Its own HTML visitor, which would call mermaid-cli, is replaced, and its
page hook, which acts only for "raw", adds nothing.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.environment import BuildEnvironment
from sphinx.util import logging
from sphinxcontrib.mermaid import mermaid

from capture.toolchains import assets
from capture.system import oserror
from capture.sphinxext.site import render
from capture.sphinxext.site.depends import Dependency

logger = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
SCRIPT = "mermaid/mermaid.min.js"  # under _static/: the browser fallback
INIT = "book-mermaid.js"  # under _static/, from ./static/
HTML_FORMATS = ("html",)
READABLE_PX = 11  # chart text is never drawn smaller than this
MODES = ("auto", "build", "browser")


# -- which charts the pages have -------------------------------------------------------------------
def _charts(env: BuildEnvironment) -> dict[str, list[tuple[str, int]]]:
    if not hasattr(env, "book_charts"):
        env.book_charts = {}
    return env.book_charts


def collect(app: Sphinx, doctree: nodes.document) -> None:
    """doctree-read: remember each chart's source and line, to draw what is missing after reading."""
    found = [(n["code"], n.line or 0) for n in doctree.findall(mermaid)]
    charts = _charts(app.env)
    charts.pop(app.env.docname, None)
    if found:
        charts[app.env.docname] = found
        DRAWER.note(app.env)


def purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    _charts(env).pop(docname, None)


def merge(app: Sphinx, env: BuildEnvironment, docnames, other: BuildEnvironment) -> None:
    _charts(env).update({d: c for d, c in getattr(other, "book_charts", {}).items() if d in docnames})


# -- drawing -----------------------------------------------------------------------------------------
def drawer(app: Sphinx) -> str:
    """How charts are drawn in this build: "svg" (a browser found) or "browser" (the reader's)."""
    mode = app.config.book_charts
    if mode == "browser" or getattr(app, "book_mermaid_js", None) is None:
        return "browser"
    if getattr(app, "book_browser", None) is None:
        app.book_browser = render.find_browser() or ""
    return "svg" if app.book_browser else "browser"


DRAWER = Dependency("chart-drawer", drawer)  # pages with charts are rewritten when this changes


def job_id(key: str) -> str:
    return f"bookchart-{key}"


def draw_missing(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """env-updated: draw (in one browser run) every chart of the book the cache lacks."""
    app.book_drawn, app.book_drawings = {}, {}
    if app.builder.format not in HTML_FORMATS:
        return []
    if drawer(app) != "svg":
        why = "book_charts = \"browser\"" if app.config.book_charts == "browser" else \
            "no Chromium found (apt-get install chromium, or set BOOK_CHROMIUM)"
        if app.config.book_charts == "build" and app.book_browser == "":
            logger.warning(f"charts cannot be drawn at build time: {why}", location=str(Path(app.confdir, "conf.py")),
                           type="book", subtype="mermaid")
        elif _charts(env):
            logger.info(f"charts are drawn in the reader's browser: {why}")
        return []
    version = assets.locked_version(Path(app.confdir, app.config.book_mermaid_npm_dir))
    jobs, where = [], {}
    for docname, charts in sorted(_charts(env).items()):
        for code, line in charts:
            for theme in render.THEMES:
                key = render.job_key(code, theme, version)
                app.book_drawn[(code, theme)] = key
                if key not in where and render.cached(key) is None:
                    jobs.append({"id": job_id(key), "theme": theme, "code": code})
                where.setdefault(key, (docname, line))
    if not jobs:
        return []
    logger.info(f"drawing {len(jobs)} chart(s) with {app.book_browser} (mermaid {version})")
    try:
        results = render.render(jobs, app.book_mermaid_js, app.book_browser)
    except render.RenderError as e:
        logger.warning(f"charts not drawn at build time, the pages draw them in the browser: {e}",
                       location=str(Path(app.confdir, "conf.py")), type="book", subtype="mermaid")
        return []
    uncached: list[OSError] = []
    for job in jobs:
        key = job["id"].removeprefix("bookchart-")
        result = results[job["id"]]
        if isinstance(result, str):
            logger.warning(f"mermaid cannot draw this chart ({job['theme']}): {result}", location=where[key],
                           type="book", subtype="mermaid")
            continue
        app.book_drawings[key] = result  # this build uses it even if the cache cannot keep it
        try:
            render.store(key, result)
        except OSError as e:
            uncached.append(e)
    if uncached:  # the pages have their drawings; only the next build pays: said once, never a build failure
        logger.info(f"{len(uncached)} chart drawing(s) not cached, drawn again next build: {oserror.plain(uncached[0])}")
    return []


def drawing(app: Sphinx, code: str, theme: str) -> tuple[str, render.Drawing] | None:
    key = getattr(app, "book_drawn", {}).get((code, theme))
    found = (getattr(app, "book_drawings", {}).get(key) or render.cached(key)) if key else None
    return (key, found) if found else None


# -- HTML --------------------------------------------------------------------------------------------
_ROOT = re.compile(r"<svg\b[^>]*>")


def svg_markup(draw: render.Drawing, old_id: str, new_id: str, cls: str) -> str:
    """The drawing's <svg> with a page-unique id, its theme class and its size limits."""
    svg = draw.svg.replace(old_id, new_id)
    root = _ROOT.match(svg)
    if root is None:
        return svg
    tag = re.sub(r'\sstyle="[^"]*"', "", root.group(0))
    tag = tag.replace('class="', f'class="{cls} ', 1) if 'class="' in tag else tag.replace("<svg", f'<svg class="{cls}"', 1)
    style = f"max-width: {math.ceil(draw.width)}px; min-width: {math.ceil(draw.min_width(READABLE_PX))}px"
    tag = tag[:-1] + f' style="{style}" focusable="false">'
    return tag + svg[root.end():]


def visit_mermaid_html(self, node: mermaid) -> None:
    app = self.builder.app
    drawn = [drawing(app, node["code"], theme) for theme in render.THEMES]
    attrs = {}
    if node.get("ids"):
        attrs["id"] = node["ids"][0]
    if "align" in node:
        attrs["class"] = f"align-{node['align']}"
    if all(drawn):
        seen = self.__dict__.setdefault("book_chart_ids", {})
        svgs = []
        for theme, (key, draw) in zip(render.THEMES, drawn):
            n = seen[key] = seen.get(key, 0) + 1
            svgs.append(svg_markup(draw, job_id(key), job_id(key) + (f"-{n}" if n > 1 else ""), f"book-chart-{theme}"))
        classes = " ".join(["book-chart", "mermaid", *node.get("classes", []), attrs.pop("class", "")]).strip()
        label = node.get("alt") or "图"
        attr_text = "".join(f' {k}="{self.attval(v)}"' for k, v in attrs.items())
        self.body.append(
            f'<div class="{classes}" data-processed="true"{attr_text}>'
            f'<div class="book-chart-scroll" role="group" aria-label="{self.attval(label)}">{"".join(svgs)}</div>'
            f'<p class="book-chart-tools pst-js-only"><button type="button" class="book-chart-open" '
            f'data-title="{self.attval(label)}">全屏查看</button></p></div>\n'
        )
        raise nodes.SkipNode
    classes = ["mermaid", *node.get("classes", [])] + ([attrs.pop("class")] if "class" in attrs else [])
    attrs["class"] = " ".join(classes)
    if "alt" in node:
        attrs["aria-label"] = node["alt"]
    attr_text = " ".join(f'{k}="{self.attval(v)}"' for k, v in attrs.items())
    self.body.append(f"<pre {attr_text}>{self.encode(node['code'])}</pre>\n")
    raise nodes.SkipNode


# -- setup ------------------------------------------------------------------------------------------
def on_config_inited(app: Sphinx, config: Config) -> None:
    config.mermaid_output_format = "svg"  # drawn at build time (sphinxcontrib-mermaid then adds no script)
    if config.book_charts not in MODES:
        logger.warning(f"book_charts must be one of {', '.join(MODES)}, not {config.book_charts!r}; using auto",
                       location=str(Path(app.confdir, "conf.py")), type="book", subtype="mermaid")
        config.book_charts = "auto"
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))


def on_builder_inited(app: Sphinx) -> None:
    app.book_mermaid_js = None
    if app.builder.format not in HTML_FORMATS:
        return
    npm_dir = Path(app.confdir, app.config.book_mermaid_npm_dir)
    try:
        app.book_mermaid_js = assets.ensure_mermaid(npm_dir, log=logger.info)
        assets.install_mermaid(Path(app.outdir, "_static", "mermaid"), npm_dir, log=logger.info)
    except (assets.AssetError, OSError) as exc:
        logger.warning(f"mermaid charts will stay blank: {exc}", location=str(npm_dir / "package-lock.json"),
                       type="book", subtype="mermaid")


def on_html_page_context(app: Sphinx, pagename, templatename, context, doctree) -> None:
    if doctree is None:
        return
    if any(not all(drawing(app, n["code"], t) for t in render.THEMES) for n in doctree.findall(mermaid)):
        app.add_js_file(INIT, defer="defer")  # it loads _static/mermaid/mermaid.min.js when a chart is near


def setup(app: Sphinx):
    app.setup_extension("sphinxcontrib.mermaid")
    app.add_node(mermaid, override=True, html=(visit_mermaid_html, None))
    app.add_config_value("book_mermaid_npm_dir", str(assets.NPM_DIR), "html", types=[str])
    app.add_config_value("book_charts", "auto", "html", types=[str])
    app.connect("config-inited", on_config_inited)
    app.connect("builder-inited", on_builder_inited)
    app.connect("doctree-read", collect)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    app.connect("env-updated", draw_missing)
    app.connect("html-page-context", on_html_page_context)
    DRAWER.connect(app)
    return {"version": "0.2", "parallel_read_safe": True, "parallel_write_safe": True}
