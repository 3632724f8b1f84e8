"""{datachart}: a mermaid chart whose labels and branches are filled from records (a Jinja template).

    :::{datachart}
    :platform: linux-x86_64-nvidia-h200     (default: the first platform where the template has its data)
    flowchart TB
      a["调用 a.exp()"] --> b{% if holds("median(burn-ret@gpu:ret.returned) < 0.5 * median(burn-ret@gpu:ret.synced)") %}["立即返回"]{% else %}["算完才返回"]{% endif %}
      c["设备时间 {{ value("median(burn-chain8@gpu:chain8.device.median)") }}"]
    :::

Template functions: value(expr, style=""), holds(expr) -> bool, platform (its label).
The chart is a sphinxcontrib-mermaid node, rendered offline like any other mermaid chart.
"""

from __future__ import annotations

import jinja2
from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from capture.query import MissingData, QueryError, parse_refs
from capture.sphinxext.common import book, fragment_href, logger, notice, page_platform, platform_label
from capture.sphinxext.numbers import render_value, split_style


class _Fill:
    def __init__(self, b, platform):
        self.b, self.platform, self.refs = b, platform, set()

    def value(self, expr: str, style: str = "") -> str:
        self.refs |= {r.key for r in parse_refs(expr)[1]}
        e, opts = split_style(expr + (" | " + style if style else ""))
        return render_value(self.b.evaluate(e, self.platform), opts)

    def holds(self, expr: str) -> bool:
        self.refs |= {r.key for r in parse_refs(expr)[1]}
        v = self.b.evaluate(expr, self.platform)
        val = getattr(v, "v", v)
        if not isinstance(val, bool):
            raise QueryError(f"holds({expr!r}) gives {val!r}, not true/false")
        return val


def fill(b, template: str, platform: str) -> tuple[str, set[str]]:
    f = _Fill(b, platform)
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    code = env.from_string(template).render(value=f.value, holds=f.holds, platform=platform_label(platform))
    return code, f.refs


class DataChartDirective(SphinxDirective):
    has_content = True
    option_spec = {"platform": directives.unchanged, "caption": directives.unchanged}

    def run(self):
        from sphinxcontrib.mermaid import mermaid

        b = book(self.env)
        where = (self.env.docname, self.lineno)
        template = "\n".join(self.content)
        wanted = page_platform(self.env, self.options)
        candidates = [wanted] if wanted else b.captured_platforms()
        errors = []
        for plat in candidates:
            try:
                code, refs = fill(b, template, plat)
            except MissingData as e:
                errors.append(f"{plat}: {e}")
                continue
            except (QueryError, jinja2.TemplateError) as e:
                logger.warning(f"datachart: {e}", location=where, type="capture", subtype="chart")
                return []
            for key in refs:
                p = b.layout.fragments / plat / f"{key}.json"
                if p.exists():
                    self.env.note_dependency(str(p))
            node = mermaid()
            node["code"] = code
            node["options"] = {}
            node["inline"] = False
            fig = nodes.container(classes=["book-datachart"])
            fig += node
            cap = nodes.paragraph(classes=["book-chart-caption"])
            cap += nodes.Text((self.options.get("caption", "") + " · " if self.options.get("caption") else "")
                              + f"图中的分支由 {platform_label(plat)} 上的测量决定，来自 ")
            for i, key in enumerate(sorted(refs)):
                if i:
                    cap += nodes.Text("、")
                cap += nodes.reference(key, key, refuri=fragment_href(self.env, plat, key, "json"))
            fig += cap
            return [fig]
        refs = parse_refs(template)[1]
        if refs and all(b.expected_absent(r.exp, r.role) for r in refs):
            return [notice("na", "这张图依据的数据还没有在能运行它的平台上捕获。")]
        logger.warning("datachart: no platform has the data: " + "; ".join(errors), location=where, type="capture", subtype="chart")
        return []
