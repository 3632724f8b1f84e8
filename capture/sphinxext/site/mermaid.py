"""Mermaid charts that render offline, over HTTP and from file://.

sphinxcontrib-mermaid (pinned 2.1.1) supplies the `mermaid` directive and node; data-driven
charts (capture.sphinxext) create the same node. Its own HTML support loads mermaid as an
ES module (from a CDN, or `mermaid_use_local`); browsers refuse ES modules on file:// pages,
so this module takes over the HTML side:

- each mermaid node becomes `<pre class="mermaid">source</pre>` (the same markup
  sphinxcontrib-mermaid writes in its "raw" mode);
- pages that have one load two plain deferred scripts: `_static/mermaid/mermaid.min.js`,
  the classic build of the mermaid version pinned in docs/_mermaid/package-lock.json, and
  `_static/book-mermaid.js`, which renders the charts (and again when the theme switches
  between light and dark);
- `mermaid_output_format` is set to "classic", which tells sphinxcontrib-mermaid's
  html-page-context hook to add nothing (it only acts for "raw").

The classic build is installed (`npm ci`, once) and copied by capture.assets. A build
without it would publish blank charts, so failing to get it is a build warning
(an error under -W).
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging
from sphinxcontrib.mermaid import mermaid

from capture import assets

logger = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
SCRIPT = "mermaid/mermaid.min.js"  # under _static/
INIT = "book-mermaid.js"  # under _static/, from ./static/
HTML_FORMATS = ("html",)


def visit_mermaid_html(self, node: mermaid) -> None:
    classes = ["mermaid", *node.get("classes", [])]
    if "align" in node:
        classes.append(f"align-{node['align']}")
    attrs = {"class": " ".join(classes)}
    if node.get("ids"):
        attrs["id"] = node["ids"][0]
    if "alt" in node:
        attrs["aria-label"] = node["alt"]
    attr_text = " ".join(f'{k}="{self.attval(v)}"' for k, v in attrs.items())
    self.body.append(f"<pre {attr_text}>{self.encode(node['code'])}</pre>\n")
    raise nodes.SkipNode


def on_config_inited(app: Sphinx, config: Config) -> None:
    config.mermaid_output_format = "classic"
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))


def on_builder_inited(app: Sphinx) -> None:
    if app.builder.format not in HTML_FORMATS:
        return
    npm_dir = Path(app.confdir, app.config.book_mermaid_npm_dir)
    try:
        assets.install_mermaid(Path(app.outdir, "_static", "mermaid"), npm_dir, log=logger.info)
    except (assets.AssetError, OSError) as exc:
        logger.warning(f"mermaid charts will stay blank: {exc}", location=str(npm_dir / "package-lock.json"),
                       type="book", subtype="mermaid")


def on_html_page_context(app: Sphinx, pagename, templatename, context, doctree) -> None:
    if doctree is None or doctree.next_node(mermaid) is None:
        return
    app.add_js_file(SCRIPT, defer="defer")
    app.add_js_file(INIT, defer="defer")


def setup(app: Sphinx):
    app.setup_extension("sphinxcontrib.mermaid")
    app.add_node(mermaid, override=True, html=(visit_mermaid_html, None))
    app.add_config_value("book_mermaid_npm_dir", str(assets.NPM_DIR), "html", types=[str])
    app.connect("config-inited", on_config_inited)
    app.connect("builder-inited", on_builder_inited)
    app.connect("html-page-context", on_html_page_context)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
