"""{claim} expression: the sentence in the body is shown with a mark; the build checks the predicate."""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from capture.claims import judge
from capture.query import QueryError, parse_refs
from capture.sphinxext.common import book, logger, notice, platform_label


class ClaimDirective(SphinxDirective):
    required_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = {"platforms": directives.unchanged}

    def run(self):
        b = book(self.env)
        expr = self.arguments[0]
        where = (self.env.docname, self.lineno)
        plats = [p.strip() for p in self.options["platforms"].split(",")] if self.options.get("platforms") else None
        try:
            verdicts = judge(b, expr, plats)
        except QueryError as e:
            verdicts, err = [], str(e)
        else:
            err = "no captured platform has the data it needs"
        refs = parse_refs(expr)[1]
        for v in verdicts:
            for r in refs:
                p = b.layout.fragments / v.platform / f"{r.key}.json"
                if p.exists():
                    self.env.note_dependency(str(p))
        box = nodes.container(classes=["book-claim"])
        self.state.nested_parse(self.content, self.content_offset, box)
        bad = [v for v in verdicts if v.holds is not True]
        if not verdicts and refs and all(b.expected_absent(r.exp, r.role) for r in refs):
            box["classes"].append("book-claim-pending")
            box += notice("na", "这句话依据的数据还没有在能运行它的平台上捕获，尚未核对。")
            return [box]
        if not verdicts or bad:
            why = "; ".join(f"{v.platform}: {v.why}" for v in bad) or err
            logger.warning(f"claim not supported by the data: {expr} ({why})", location=where, type="capture", subtype="claim")
            box["classes"].append("book-claim-failed")
            box += notice("claim", f"这句话没有得到数据支持：{why}")
        else:
            box["classes"].append("book-claim-ok")
            ok = "、".join(platform_label(v.platform) for v in verdicts)
            mark = nodes.inline("", f"✓ 数据核对：{ok}", classes=["book-claim-mark"])
            mark["title"] = expr
            box += nodes.paragraph("", "", mark)
        return [box]
