"""{verdict-matrix}: yes/no questions answered from records, one column per machine and device role.

    :::{verdict-matrix} 调用之后发生了什么
    :rows: 调用返回时已经算完（PyTorch） = not torch-ret@{role}:ret.returns_before_done; 没人读的结果照样执行（burn） = all(burn-drop@{role}:drop.dropped_executes)
    :roles: cpu, gpu
    :::

{role} in a row becomes each column's role. Each cell is 是 / 否 computed on that platform, 差不多（相差不到 k 倍）
where the measurements cannot order the two sides but bound their ratio within k, or 说不清 where they bound
neither (capture/evidence/verdict.py; the reason is the cell's title), with the
devices that ran and a link to the records; 未测 where the machine did not run it. Rows whose value is
a word (a verdict an experiment recorded, e.g. silent | correct | error) are shown through
`:labels: silent = 复现; correct = 结果正确; error = 报错`; a word without a label is a build warning. This is where
a reader sees that machines differ (CUDA against MPS, Vulkan against Metal).
"""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from capture.evidence.controls import visible
from capture.evidence.fmt import NBSP
from capture.storage.keys import ROLES
from capture.sphinxext.common import (book, depend, differs_option, logger, reader_why, report_answer, stale_mark,
                                     value_node, warn)
from capture.sphinxext.reader import data_label, detail_words, tip
from capture.sphinxext.tables import parse_pairs, table_node


class VerdictMatrixDirective(SphinxDirective):
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = {"rows": directives.unchanged_required, "roles": directives.unchanged, "labels": directives.unchanged,
                   "differs": directives.unchanged}

    def run(self):
        b = book(self.env)
        where = self.get_location()
        try:
            rows = parse_pairs(self.options["rows"], ":rows:")
            self.labels = dict(parse_pairs(self.options["labels"], ":labels:")) if "labels" in self.options else {}
            roles = [r.strip() for r in self.options.get("roles", "cpu, gpu").split(",") if r.strip()]
            self.differs = differs_option(self.options.get("differs"))
            bad = [r for r in roles if r not in ROLES]
            if bad:
                raise ValueError(f":roles: {bad} (use cpu, gpu)")
        except (KeyError, ValueError) as e:
            warn(f"verdict-matrix: {e}", where, "verdicts")
            return []
        columns = [(p, r) for p in b.platforms() for r in roles if r == "cpu" or b.identity(p).has_gpu]
        header = ["问题", *[tip(b.short_label(p, r), b.label(p, r)) for p, r in columns]]
        body = []
        for label, template in rows:
            text, _ = self.state.inline_text(label, self.lineno)  # `code` in a question renders as code
            cells = [nodes.inline("", "", *text, classes=["book-verdict-question"])]
            for plat, role in columns:
                cell = self._cell(b, template.replace("{role}", role), plat, where)
                # on a phone the matrix is a list: each answer says its column (book-site.css)
                cells.append(nodes.inline("", "", data_label(b.short_label(plat, role)), cell))
            body.append(cells)
        for _, template in rows:
            for role in roles:
                try:
                    depend(self.env, b, b.refs(template.replace("{role}", role)))
                except Exception:  # noqa: BLE001 - reported by the cell
                    pass
        title = nodes.inline("", "", *self.state.inline_text(self.arguments[0], self.lineno)[0]) if self.arguments else None
        table = table_node(title, header, body, ("book-records-table", "book-verdict-matrix"))
        return [table]

    def _cell(self, b, expr, plat, where):
        ans = b.answer(expr, plat, self.differs)
        if ans.error:
            report_answer(ans, where, f"verdict-matrix {expr}")
            return nodes.inline("", "？", classes=["book-na"])
        if not ans.ok:
            st = ans.blocking
            text = "未测" if st.state in ("not-applicable", "missing") else "—"
            return tip(text, detail_words(st.detail) if st.state == "not-applicable" else "这台机器还没有这项记录",
                       ["book-na"])
        val = getattr(ans.value, "v", ans.value)
        why = getattr(ans.value, "why", "")
        same = getattr(ans.value, "same", None)
        if val is None and same:  # no order, but the data bound the gap (capture/evidence/verdict.py about_same)
            text, cls = f"差不多（相差不到 {same:g}{NBSP}倍）", "same"
        elif val is None and why:  # the measurements cannot tell (capture/evidence/verdict.py)
            logger.info(f"verdict-matrix: {expr} cannot be decided on {plat}: {why}", location=where)
            text, cls = "说不清", "undecided"
        elif isinstance(val, bool):
            text, cls = ("是", "yes") if val else ("否", "no")
        elif isinstance(val, str) and val in self.labels:
            text, cls = self.labels[val], val
        else:
            known = f" (labels: {', '.join(self.labels)})" if self.labels else ""
            warn(f"verdict-matrix: {expr} gives {val!r} on {plat}, not yes/no and not a word of :labels:{known}",
                 where, "verdicts")
            return nodes.inline("", "？", classes=["book-na"])
        out = nodes.inline(classes=["book-verdict", f"book-verdict-{cls}"])
        out += value_node(self.env, b, ans, text)
        if why:
            out.children[-1]["reftitle"] = reader_why(why, self.env)
        devices = sorted({st.fragment.meta.get("device") for st in ans.states if st.fragment is not None} - {None})
        if devices:
            out += nodes.inline("", visible(f"（{'、'.join(devices)}）"), classes=["book-verdict-device"])
        mark = stale_mark(b, ans.states)
        if mark is not None:
            out += mark
        return out

