"""{records-table}: a comparison table laid out from records, one row per row key and platform.

    :::{records-table} 调用返回与同步之后
    :rows: torch CPU = torch-ret@cpu; burn GPU = burn-ret@gpu
    :columns: 返回 = median({row}:ret.returned); 同步后 = median({row}:ret.synced); 比 = median({row}:ret.synced) / median({row}:ret.returned) | ratio
    :::

Each cell is an expression with {row} standing for the row's fragment (experiment@role). Every
captured platform that holds a row's fragment gets its own row, named by its machine (grouped
by machine; `:group: row` groups by row key instead); `:platform: KEY` keeps one platform (the reading
path's table), `:except: KEY[, KEY]` leaves those out (the others, in the section's {evidence} fold). A
cell without data says 本平台未测; a value from a stale fragment carries the stale mark.

A ratio of two timings can carry its verdict, so that no cell is read as a direction the data do not bear:
`A / B | ratio, faster=candle/burn` shows 「0.61（candle 快）」, 「1.3（burn 快）」, 「1.1（差不多，相差不到 1.5 倍）」,
or 「说不清」 alone (no number to be read as a direction), from the rule that decides {cmp} (comparisons.py).
"""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from capture.storage.keys import FragmentKey, KeyError_
from capture.plan.manifest import ManifestError
from capture.sphinxext.common import (book, depend, differs_option, platform_choice, reader_why, report_answer,
                                     report_state, stale_mark, value_node, warn)
from capture.evidence.share import split_ratio
from capture.sphinxext.comparisons import direction
from capture.evidence.fmt import NBSP
from capture.sphinxext.numbers import render_value, split_style
from capture.sphinxext.reader import tip

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


def layout_rows(b, rows, only: str | None, group: str, others=()) -> list[tuple[str, FragmentKey, str | None]]:
    """(label, key, platform or None) for each table row, grouped by machine or by row."""
    plats = [only] if only else [p for p in b.platforms() if p not in others]
    if group == "row":
        out = [(label, key, p) for label, key in rows for p in plats if b.fragment(p, key) is not None]
    else:
        out = [(label, key, p) for p in plats for label, key in rows if b.fragment(p, key) is not None]
    held = {key for _, key, _ in out} | {key for _, key in rows for p in others if b.fragment(p, key) is not None}
    return out + [(label, key, None) for label, key in rows if key not in held]


class RecordsTableDirective(SphinxDirective):
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = {"rows": directives.unchanged_required, "columns": directives.unchanged_required,
                   "platform": directives.unchanged, "except": directives.unchanged, "group": lambda a: directives.choice(a, ("platform", "row")),
                   "differs": directives.unchanged}

    def run(self):
        b = book(self.env)
        where = self.get_location()
        try:
            rows = [(label, FragmentKey.parse(key)) for label, key in parse_pairs(self.options["rows"], ":rows:")]
            for _, key in rows:
                b.experiment(key)
            cols = [(label, *split_style(expr)) for label, expr in parse_pairs(self.options["columns"], ":columns:")]
            only, others = platform_choice(self.options)
            self.differs = differs_option(self.options.get("differs"))
        except (KeyError, ValueError, KeyError_, ManifestError) as e:
            warn(f"records-table: {e}", where, "table")
            return []
        depend(self.env, b, [key for _, key in rows])
        body = []
        for label, key, plat in layout_rows(b, rows, only, self.options.get("group", "platform"), others):
            cells = [self._inline(label)]  # `code` in a label, a header or the title renders as code
            if plat is None:
                st = b.absent_everywhere(key) if not only else b.state(only, key)
                report_state(st, where, f"records-table row {key}")
                cells.append(nodes.Text("—"))
                cells += [nodes.inline("", NOT_CAPTURED, classes=["book-na"]) for _ in cols]
            else:
                cells.append(tip(b.short_label(plat, key.role), b.label(plat, key.role), ["book-machine"]))
                cells += [self._cell(b, expr.replace("{row}", str(key)), opts, plat, where) for _, expr, opts in cols]
            body.append(cells)
        header = ["项目", "机器", *[self._inline(c[0]) for c in cols]]
        return [table_node(self._inline(self.arguments[0]) if self.arguments else None, header, body)]

    def _inline(self, text: str) -> nodes.inline:
        parsed, _ = self.state.inline_text(text, self.lineno)
        return nodes.inline("", "", *parsed)

    def _cell(self, b, expr, opts, plat, where):
        ans = b.answer(expr, plat, self.differs)
        report_answer(ans, where, f"records-table {expr}")
        if ans.error and not ans.no_record:
            return nodes.inline("", "？", classes=["book-na"])
        if not ans.ok:
            return nodes.inline("", NOT_CAPTURED, classes=["book-na"])
        para = nodes.inline()
        if opts.get("faster"):
            para += self._verdict(b, expr, opts, plat, ans, where)
        else:
            para += value_node(self.env, b, ans, render_value(ans.value, opts))
        mark = stale_mark(b, ans.states)
        if mark is not None:
            para += mark
        return para


    def _verdict(self, b, expr, opts, plat, ratio, where) -> nodes.Node:
        """A ratio of two timings with the verdict of `A < B` beside it (`faster=NAME_A/NAME_B`)."""
        names = str(opts["faster"]).split("/")
        sides = split_ratio(expr)
        if len(names) != 2 or sides is None:
            warn(f"records-table {expr}: faster=A/B needs a ratio of two expressions (X / Y) and two names", where, "table")
            return nodes.inline("", "？", classes=["book-na"])
        lt = b.answer(f"({sides[0]}) < ({sides[1]})", plat, self.differs)
        gt = b.answer(f"({sides[0]}) > ({sides[1]})", plat, self.differs)
        about = getattr(lt.value, "same", None)
        way = direction(getattr(lt.value, "v", None), getattr(gt.value, "v", None), about)
        why = reader_why(getattr((gt if way == "larger" else lt).value, "why", ""), self.env)
        if way == "undecided":
            return tip("说不清", why, ["book-verdict-undecided"])
        words = {"smaller": f"（{names[0]} 快）", "larger": f"（{names[1]} 快）", "same": "（一样快）",
                 "about": f"（差不多，相差不到 {about or 0:g}{NBSP}倍）"}[way]
        out = nodes.inline()
        out += value_node(self.env, b, ratio, render_value(ratio.value, opts))
        out += tip(words, why, ["book-verdict"])
        return out


def table_node(title, header: list, body: list[list[nodes.Node]], classes=("book-records-table",)) -> nodes.table:
    """A docutils table: a header row (text or nodes) and body rows of nodes."""
    table = nodes.table(classes=list(classes))
    if title:
        table += nodes.title(text=title) if isinstance(title, str) else nodes.title("", "", title)
    group = nodes.tgroup(cols=len(header))
    table += group
    for _ in header:
        group += nodes.colspec(colwidth=1)
    thead, tbody = nodes.thead(), nodes.tbody()
    group += thead
    group += tbody
    head = [nodes.Text(h) if isinstance(h, str) else h for h in header]
    for cells, part in [(head, thead), *[(c, tbody) for c in body]]:
        row = nodes.row()
        for c in cells:
            entry = nodes.entry()
            entry += nodes.paragraph("", "", c)
            row += entry
        part += row
    return table
