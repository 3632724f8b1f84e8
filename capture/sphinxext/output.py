"""{output} experiment@role: a captured output, with line selection, elision and a provenance caption.

Options: :lines: "1-3, 8-" (gaps shown as "..."); :platform: a platform key (default: the
page's, else the first in book_platforms that has it); :platforms: all -> one tab per
captured platform.
"""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from capture.manifest import ManifestError
from capture.regions import RegionError, select_lines
from capture.sphinxext.common import (
    book,
    depend_on_fragment,
    fragment_href,
    logger,
    notice,
    page_platform,
    platform_label,
    provenance,
    warn_lookup,
)


class OutputDirective(SphinxDirective):
    required_arguments = 1
    option_spec = {
        "lines": directives.unchanged,
        "platform": directives.unchanged,
        "platforms": directives.unchanged,
        "caption": directives.unchanged,
    }

    def run(self):
        b = book(self.env)
        where = (self.env.docname, self.lineno)
        exp_id, _, role = self.arguments[0].partition("@")
        if role not in ("cpu", "gpu"):
            return self._fail(f"output {self.arguments[0]}: write experiment@cpu or experiment@gpu", where)
        try:
            if self.options.get("platforms") == "all":
                plats = [p for p in b.captured_platforms() if b.fragment(p, f"{exp_id}@{role}")]
                lookups = [b.find(exp_id, role, p) for p in plats] or [b.find(exp_id, role)]
            else:
                lookups = [b.find(exp_id, role, page_platform(self.env, self.options))]
        except ManifestError as e:
            return self._fail(f"output {self.arguments[0]}: {e}", where)
        depend_on_fragment(self.env, b, lookups[0])
        blocks = []
        for lk in lookups:
            block = [n for n in [warn_lookup(lk, where, b)] if n is not None]
            if lk.fragment is not None:
                block.append(self._block(lk))
            blocks.append((lk.platform or "—", block))
        if len(blocks) == 1:
            return blocks[0][1]
        return [self._tabs(blocks)]

    def _block(self, lk):
        text = lk.fragment.text.rstrip("\n")
        try:
            text = select_lines(text, self.options.get("lines"))
        except RegionError as e:
            logger.warning(f"output {self.arguments[0]}: {e}", location=(self.env.docname, self.lineno))
        literal = nodes.literal_block(text, text, language="text", classes=["book-output"])
        literal["book_source"] = f"fragment:{lk.platform}/{lk.exp}@{lk.role}"
        self.set_source_info(literal)
        wrapper = nodes.container("", literal_block=True, classes=["literal-block-wrapper", "book-output-wrapper"])
        cap = nodes.caption("", "")
        if self.options.get("caption"):
            cap += nodes.Text(self.options["caption"] + " · ")
        cap += nodes.Text(f"输出 {lk.exp}@{lk.role} · " + provenance(lk.fragment) + " · ")
        cap += nodes.reference("原始输出", "原始输出", refuri=fragment_href(self.env, lk.platform, f"{lk.exp}@{lk.role}"))
        cap += nodes.Text(" / ")
        cap += nodes.reference("元数据", "元数据", refuri=fragment_href(self.env, lk.platform, f"{lk.exp}@{lk.role}", "json"))
        wrapper += cap
        wrapper += literal
        return wrapper

    def _tabs(self, blocks):
        from sphinx_design.shared import create_component

        tab_set = create_component("tab-set", classes=["sd-tab-set", "book-platform-tabs"])
        for plat, content in blocks:
            label = nodes.rubric(plat, "", nodes.Text(platform_label(plat)), classes=["sd-tab-label"])
            label["sync_group"] = "platform"
            label["sync_id"] = plat
            body = create_component("tab-content", children=content, classes=["sd-tab-content"])
            tab_set += create_component("tab-item", children=[label, body], classes=["sd-tab-item"])
        return tab_set

    def _fail(self, msg, where):
        logger.warning(msg, location=where, type="capture", subtype="output")
        return [notice("error", msg)]
