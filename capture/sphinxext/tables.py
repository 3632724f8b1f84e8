"""{records-table}: a comparison table laid out from records across experiments, devices and platforms.

    :::{records-table} 调用返回与同步之后
    :rows: torch CPU = torch-ret@cpu; burn GPU = burn-ret@gpu
    :columns: 返回 = median({row}:ret.returned); 同步后 = median({row}:ret.synced); 比 = median({row}:ret.synced) / median({row}:ret.returned) | ratio
    :platforms: all
    :::

Each cell is an expression with {row} standing for the row's fragment (experiment@role).
`:platforms: all` gives one row per captured platform; otherwise the page's platform, or
the first that has the row. A cell without data says 本平台未测 instead of vanishing.
"""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from capture.query import MissingData, QueryError
from capture.sphinxext.common import book, fragment_href, logger, page_platform, platform_label
from capture.sphinxext.numbers import render_value, split_style

NOT_CAPTURED = "本平台未测"


def parse_pairs(text: str, what: str) -> list[tuple[str, str]]:
    out = []
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        label, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"{what}: '{part}' should be 'label = value'")
        out.append((label.strip(), value.strip()))
    return out


def layout_rows(b, rows, platforms_opt, page_plat):
    """(label, key, platform or None) for each table row."""
    out = []
    for label, key in rows:
        have = [p for p in b.captured_platforms() if b.fragment(p, key) is not None]
        if platforms_opt == "all":
            out += [(label, key, p) for p in have] or [(label, key, None)]
        elif page_plat:
            out.append((label, key, page_plat if page_plat in have else None))
        else:
            out.append((label, key, have[0] if have else None))
    return out


class RecordsTableDirective(SphinxDirective):
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = {"rows": directives.unchanged_required, "columns": directives.unchanged_required,
                   "platforms": directives.unchanged, "platform": directives.unchanged}

    def run(self):
        b = book(self.env)
        where = (self.env.docname, self.lineno)
        try:
            rows = parse_pairs(self.options["rows"], ":rows:")
            cols = [(label, *split_style(expr)) for label, expr in parse_pairs(self.options["columns"], ":columns:")]
        except (KeyError, ValueError) as e:
            logger.warning(f"records-table: {e}", location=where)
            return []
        table_rows = layout_rows(b, rows, self.options.get("platforms"), page_platform(self.env, self.options))
        show_platform = len({p for _, _, p in table_rows if p}) > 1 or self.options.get("platforms") == "all"
        header = ["", *(["平台"] if show_platform else []), *[c[0] for c in cols]]
        body = []
        for label, key, plat in table_rows:
            exp_id, _, role = key.partition("@")
            if plat is None:
                lk = b.find(exp_id, role)
                if lk.state == "missing" and not b.expected_absent(exp_id, role):
                    logger.warning(f"records-table: no platform has {key}; regenerate with: {lk.regen_command}",
                                   location=where, type="capture", subtype="missing")
            cells = [nodes.Text(label)]
            if show_platform:
                cells.append(nodes.Text(platform_label(plat) if plat else "—"))
            for col_label, expr, opts in cols:
                cells.append(self._cell(b, expr.replace("{row}", key), opts, plat, where))
            for p in [p for p in ([b.layout.fragments / plat / f"{key}.json"] if plat else []) if p.exists()]:
                self.env.note_dependency(str(p))
            body.append(cells)
        return [self._table(header, body)]

    def _cell(self, b, expr, opts, plat, where):
        if plat is None:
            return nodes.inline("", NOT_CAPTURED, classes=["book-na"])
        try:
            v = b.evaluate(expr, plat)
        except MissingData as e:
            logger.warning(f"records-table: {e}", location=where, type="capture", subtype="record")
            return nodes.inline("", NOT_CAPTURED, classes=["book-na"])
        except QueryError as e:
            logger.warning(f"records-table: {e}", location=where, type="capture", subtype="query")
            return nodes.inline("", "?", classes=["book-na"])
        key = v.sources[0] if getattr(v, "sources", ()) else None
        text = render_value(v, opts)
        if not key:
            return nodes.Text(text)
        return nodes.reference("", text, refuri=fragment_href(self.env, plat, key, "json"), classes=["book-num"],
                               reftitle=f"{platform_label(plat)} · {expr}")

    def _table(self, header, body):
        table = nodes.table(classes=["book-records-table"])
        if self.arguments:
            table += nodes.title(text=self.arguments[0])
        group = nodes.tgroup(cols=len(header))
        table += group
        for _ in header:
            group += nodes.colspec(colwidth=1)
        thead = nodes.thead()
        group += thead
        thead += self._row([nodes.Text(h) for h in header])
        tbody = nodes.tbody()
        group += tbody
        for cells in body:
            tbody += self._row(cells)
        return table

    @staticmethod
    def _row(cells):
        row = nodes.row()
        for c in cells:
            entry = nodes.entry()
            entry += nodes.paragraph("", "", c)
            row += entry
        return row
