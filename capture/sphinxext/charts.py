"""{datachart}: a mermaid chart whose labels and branches are filled from records (a Jinja template).

    :::{datachart}
    :caption: 调用之后发生了什么
    flowchart TB
      a["调用 a.exp()"] --> b{% if holds("median(burn-ret@gpu:ret.returned) < 0.5 * median(burn-ret@gpu:ret.synced)") %}["立即返回"]{% else %}["算完才返回"]{% endif %}
      c["设备时间 {{ value("median(burn-chain8@gpu:chain8.device.median)") }}"]
    :::

The chart is drawn once per captured platform that holds every fragment it reads (tabs, the
book's platform order); `:platform: KEY` draws one. Template functions: value(expr, style=""),
holds(expr) (true only when the data say yes), fails(expr) (true only when they say no), platform (the
machine's name). Where a verdict cannot be decided (capture/evidence/verdict.py) the caption says so, with its reason;
write `{% if holds(e) %}…{% elif fails(e) %}…{% else %}…{% endif %}` to draw that case as a branch of its own. Each drawing is a sphinxcontrib-mermaid
node, drawn like any other mermaid chart (capture/sphinxext/site/mermaid.py).

Data is text, never markup: what value() and platform put into the chart is escaped by chart_text,
so a recorded `<img …>`, `<a …>`, a markdown string or mermaid syntax shows as the characters it is.
Put value() inside a quoted label (a["{{ value(...) }}"]): there every character is safe.

Mermaid's hexagon shape, `id{{"text"}}`, is also Jinja's expression syntax: a template would
silently print the text and drop the shape. So every `{{ … }}` must call value() or name
platform; anything else is a located error that says how to write the hexagon:
`id{% raw %}{{"text"}}{% endraw %}`.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from capture.evidence.controls import visible
from capture.storage.keys import FragmentKey, KeyError_, check_platform_key
from capture.plan.manifest import ManifestError
from capture.evidence.query import QueryError, parse_refs
from capture.sphinxext.common import (book, depend, differs_option, fragment_href, logger, notice, platform_tabs,
                                     reader_why, report_answer, warn)
from capture.sphinxext.numbers import render_value, split_style


# Mermaid entity codes (#lt; …) for what would be markup or leave a quoted label: `<`, `>` and `&` are shown as
# themselves in node and edge labels alike; `"`, `#` (which starts an entity code) and "`" (which starts a
# markdown string) as themselves in node labels, and as their entity text in an edge label: never as markup.
_ENTITY = {"&": "#amp;", "<": "#lt;", ">": "#gt;", '"': "#quot;", "#": "#num;", "`": "#grave;"}
_LINE_BREAKS = {"\n": " ", "\r": " ", "\t": " "}


def chart_text(text: str) -> str:
    """A data value as chart text: control characters visible, line breaks as spaces, markup as entity codes."""
    return "".join(_ENTITY.get(c) or _LINE_BREAKS.get(c) or c for c in visible(text))


class _NoData(Exception):
    def __init__(self, answer):
        self.answer = answer


class _Fill:
    def __init__(self, b, platform, differs=()):
        self.b, self.platform, self.answers, self.undecided, self.differs = b, platform, [], [], differs

    def _ask(self, expr):
        ans = self.b.answer(expr, self.platform, self.differs)
        self.answers.append(ans)
        if ans.error:
            raise QueryError(ans.error)
        if not ans.ok:
            raise _NoData(ans)
        return ans.value

    def value(self, expr: str, style: str = "") -> str:
        e, opts = split_style(expr + (" | " + style if style else ""))
        return chart_text(render_value(self._ask(e), opts))

    def _verdict(self, expr: str, fn: str):
        v = self._ask(expr)
        val = getattr(v, "v", v)
        if val is None and getattr(v, "why", ""):
            self.undecided.append((expr, v.why))  # told in the caption: neither branch is the data's
            return None
        if not isinstance(val, bool):
            raise QueryError(f"{fn}({expr!r}) gives {val!r}, not true/false")
        return val

    def holds(self, expr: str) -> bool:
        """True only when the data say yes (capture/evidence/verdict.py); a "cannot tell" is False here and told in the caption."""
        return self._verdict(expr, "holds") is True

    def fails(self, expr: str) -> bool:
        """True only when the data say no."""
        return self._verdict(expr, "fails") is False


OPTION_LINE = re.compile(r"\s*:[\w-]+:")
HEXAGON_HELP = ("`{{ … }}` here is not value(...) or platform: if it is mermaid's hexagon shape, write it as "
                "id{% raw %}{{\"text\"}}{% endraw %} (in a datachart, {{ }} is the template's own syntax)")


def _environment() -> jinja2.Environment:
    return jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)


def collisions(template: str) -> list[tuple[int, str]]:
    """(line in the template, source of it) of each `{{ … }}` that reads no record: a mermaid hexagon, most likely."""
    from jinja2 import nodes as j

    def reads_data(expr) -> bool:
        found = [expr, *expr.find_all((j.Call, j.Name))]
        return any(isinstance(n, j.Call) and isinstance(n.node, j.Name) and n.node.name == "value" for n in found) or \
            any(isinstance(n, j.Name) and n.name == "platform" for n in found)

    lines = template.splitlines()
    out = []
    for output in _environment().parse(template).find_all(j.Output):
        for expr in output.nodes:
            if not isinstance(expr, j.TemplateData) and not reads_data(expr):
                out.append((expr.lineno, lines[expr.lineno - 1].strip() if expr.lineno <= len(lines) else ""))
    return out


def fill(b, template: str, platform: str, differs=()):
    f = _Fill(b, platform, differs)
    code = _environment().from_string(template).render(value=f.value, holds=f.holds, fails=f.fails,
                                                       platform=chart_text(b.label(platform)))
    return code, f.answers, f.undecided


class DataChartDirective(SphinxDirective):
    has_content = True
    option_spec = {"platform": directives.unchanged, "caption": directives.unchanged, "differs": directives.unchanged}

    def run(self):
        b = book(self.env)
        where = self.get_location()
        template = "\n".join(self.content)
        try:
            clashes = collisions(template)
        except jinja2.TemplateSyntaxError as e:
            warn(f"datachart: the template does not parse: {e.message} — fix the template", self._line(e.lineno or 1), "template")
            return []
        for lineno, text in clashes:
            warn(f"datachart: {HEXAGON_HELP}; got {text!r}", self._line(lineno), "template")
        if clashes:
            return []
        try:
            keys = sorted({FragmentKey(r.exp, r.role) for r in parse_refs(template)[1]})
            for k in keys:
                b.experiment(k)
            only = check_platform_key(self.options["platform"], ":platform:") if self.options.get("platform") else None
            differs = differs_option(self.options.get("differs"))
        except (KeyError_, ManifestError, QueryError, ValueError) as e:
            warn(f"datachart: {e}", where, "chart")
            return []
        depend(self.env, b, keys)
        plats = [only] if only else [p for p in b.platforms() if all(b.fragment(p, k) is not None for k in keys)]
        items = []
        for plat in plats:
            try:
                code, answers, undecided = fill(b, template, plat, differs)
            except _NoData as e:
                report_answer(e.answer, where, "datachart")
                continue
            except (QueryError, jinja2.TemplateError) as e:
                warn(f"datachart on {plat}: {e} — fix the template", where, "chart")
                return []
            for ans in answers:
                report_answer(ans, where, "datachart")
            items.append((plat, b.short_label(plat), [self._figure(b, plat, code, answers, undecided)], b.label(plat)))
        if b.reader and b.reader not in plats and not only and items:
            items.append(self._yours_missing(b, keys))  # the reader's machine lacks some of the chart's data: why
        if not items:
            pending = [st for k in keys if (st := b.absent_everywhere(k))]
            if any(st.severity == "warn" for st in pending):
                warn(f"datachart: no platform has the data; capture it with: {pending[0].fix}", where, "chart")
            return [notice("na", "这张图依据的数据还没有在能运行它的机器上捕获。")]
        if len(items) == 1:
            return items[0][2]
        return [platform_tabs(items, classes=["book-chart-tabs"])]

    def _yours_missing(self, b, keys) -> tuple:
        """A tab for the reader's own machine (capture/machines/yours.py) where it cannot draw the chart: which of its
        data it has not got and why, and where its answers to the branches it has are (the findings page)."""
        from sphinx import addnodes

        from capture.sphinxext.reader import detail_words

        ident = b.identity(b.reader)
        why = []
        for k in keys:
            if b.fragment(b.reader, k) is not None:
                continue
            if k.role == "gpu" and not ident.has_gpu:
                reason = "GPU 一侧的数据（这台机器没有 GPU）"
            else:
                st = b.state(b.reader, k)
                reason = f"{k}（{detail_words(st.detail) if st.state == 'not-applicable' else '还没有捕获'}）"
            if reason not in why:
                why.append(reason)
        box = notice("na", f"这张图要用到 {'、'.join(why)}，所以在你的机器上画不出来。")
        para = nodes.paragraph("", "它有数据的那些分支，回答在")
        ref = addnodes.pending_xref("", refdomain="std", reftype="ref", reftarget="appendix-yours-findings",
                                    refexplicit=True, refwarn=True)
        ref += nodes.inline("你的机器和本书的机器", "你的机器和本书的机器")
        para += ref
        para += nodes.Text("这一页。")
        box += para
        return (b.reader, b.short_label(b.reader), [box], b.label(b.reader))

    def _line(self, lineno: int) -> str:
        """The page location of the template's line `lineno` (1-based): after the fence and its option lines."""
        source, fence = self.get_source_info()
        try:
            lines = Path(source).read_text(encoding="utf-8").splitlines()
        except (OSError, TypeError):
            return self.get_location()
        i = fence  # 0-based index of the line after the fence
        if i < len(lines) and lines[i].strip() == "---":  # options as a YAML block
            i = next((j + 1 for j in range(i + 1, len(lines)) if lines[j].strip() == "---"), i)
        while i < len(lines) and OPTION_LINE.match(lines[i]):
            i += 1
        return f"{source}:{i + lineno}"

    def _figure(self, b, plat, code, answers, undecided=()):
        from sphinxcontrib.mermaid import mermaid

        node = mermaid()
        node["code"] = code
        node["options"] = {}
        node["inline"] = False
        self.set_source_info(node)  # a chart mermaid cannot draw is reported at this directive
        fig = nodes.container(classes=["book-datachart"])
        fig["classes"].append(f"book-plat-{plat}")
        fig += node
        from capture.sphinxext.reader import disclosure, plain, with_code

        cap = nodes.paragraph(classes=["book-chart-caption"])
        if self.options.get("caption"):
            cap += nodes.Text(self.options["caption"] + "。")
        # a chart that prints no figure (no value() in its template) has only its branches from the data
        drawn = "分支和数字" if re.search(r"\bvalue\s*\(", "\n".join(self.content)) else "分支"
        cap += nodes.Text(f"图中的{drawn}来自 {b.label(plat)} 上的测量。")
        keys = sorted({st.key for a in answers for st in a.states})
        stale = sorted({st.key for a in answers for st in a.stale})
        if stale:
            cap += nodes.Text("其中有的数据来自这段代码较早的版本。")
        for expr, why in undecided:
            logger.info(f"datachart on {plat}: {expr} cannot be decided: {why}", location=self.get_location())
            cap += nodes.inline("", "图中有一处判断，这台机器的数据说不清。", classes=["book-verdict-undecided"])
        fig += cap
        sources = nodes.paragraph()
        for i, key in enumerate(keys):
            if i:
                sources += nodes.Text("、")
            title = b.experiment(key).title or str(key)
            sources += nodes.reference(plain(title), "", *with_code(title), refuri=fragment_href(self.env, plat, key))
            if key in stale:
                sources += nodes.Text("（旧）")
        rows = [sources] + [nodes.paragraph("", reader_why(why)) for _, why in undecided if reader_why(why)]
        fig += disclosure("图中的数据来自哪些实验", rows, ["book-chart-more", "book-no-search"])
        return fig  # the caption once, between the chart and its sources (issue 28: it was printed twice)
