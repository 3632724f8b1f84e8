"""{claim} expression: the sentence in the body, with a mark per platform saying whether the data bear it out.

Options: :where: where the claim is expected to hold (see capture/claims.py; default all);
:platform: KEY — check it there only, and read the body's figures from there.
Inside a {per-platform} block it is checked on that block's platform only.
"""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from capture.book import WARN
from capture.claims import WhereError, judge, parse_where
from capture.manifest import ManifestError
from capture.query import QueryError
from capture.sphinxext.common import SCOPE, book, depend, differs_option, logger, notice, reader_why, scoped, titled, warn


class ClaimDirective(SphinxDirective):
    required_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = {"where": directives.unchanged, "platform": directives.unchanged, "differs": directives.unchanged}

    def run(self):
        b = book(self.env)
        expr = self.arguments[0]
        where = self.get_location()
        only = self.options.get("platform") or ((self.env.temp_data.get(SCOPE) or [None])[-1])
        box = nodes.container(classes=["book-claim"])
        with scoped(self.env, self.options.get("platform")):
            self.state.nested_parse(self.content, self.content_offset, box)
        try:
            tokens = parse_where(self.options.get("where"))
            verdicts = judge(b, expr, tokens, (only,) if only else None, differs_option(self.options.get("differs")))
            pending = None if verdicts else b.pending(expr)
            depend(self.env, b, b.refs(expr))
        except (WhereError, QueryError, ManifestError, ValueError) as e:
            warn(f"claim {expr}: {e} — fix the claim in the page", where, "claim")
            box["classes"].append("book-claim-failed")
            box += notice("claim", f"这条断言写错了：{e}")
            return [box]
        if not verdicts:
            if pending is not None and pending.severity == WARN:
                warn(f"claim {expr}: no captured platform has its data; capture it with: {pending.fix}", where, "claim")
            box["classes"].append("book-claim-pending")
            box += notice("na", "这句话依据的数据还没有在能运行它的机器上捕获，尚未核对。")
            return [box]
        marks = nodes.paragraph(classes=["book-claim-marks"])
        failed = False
        for v in verdicts:
            for u in v.answer.unlike:
                warn(f"claim on {v.platform} compares unlike things: {u} — make the experiments' conditions agree, or "
                     "say how they differ in the text and add `:differs: CONDITION`", where, "unlike")
            label = b.label(v.platform)
            devices = "、".join(sorted(set(d for d in v.devices if d)))
            if v.severity == WARN:
                failed = True
                warn(f"claim not supported on {v.platform} ({devices}): {expr} — {v.why}", where, "claim")
            if v.undecided:
                if v.expected:
                    logger.info(f"claim cannot be decided on {v.platform} ({devices}): {v.why}", location=where)
                text, cls = f"≈ {label}：说不清", "book-claim-undecided"
            elif v.holds is None:
                text, cls = f"？ {label}：未能核对", "book-claim-unknown"
            elif v.expected:
                text, cls = (f"✓ {label}", "book-claim-ok") if v.holds else (f"✗ {label}：数据不支持", "book-claim-bad")
            else:
                text = f"· {label}（{devices}）不在这句话说的范围内：这里{'也成立' if v.holds else '不成立'}"
                cls = "book-claim-other"
            if v.stale:
                text += "（数据来自较早的代码）"
            mark = titled(text, reader_why(v.why) if v.why else ("数据支持这句话" if v.holds else ""), ["book-claim-mark", cls])
            if len(marks):
                marks += nodes.Text("　")
            marks += mark
        box["classes"].append("book-claim-failed" if failed else "book-claim-checked")
        box += marks
        return [box]
