"""Data on the site is text, never markup: a recorded value or a captured output that holds HTML, mermaid
syntax or raw control bytes shows as the characters it is. One row per hostile value, each put into a
chart's node label, an edge label, a {num}, a records table and an output; one strict build (charts drawn
to SVG by headless Chromium when there is one) serves every row.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys

import pytest

from capture.plan import inputs as inputsmod
from capture.plan.manifest import load
from capture.storage.paths import Layout
from capture.storage.store import Store
from tests.faults.faultbook import PLAT, REPO, snapshot, write

# (id, the recorded text, what the page must show for it)
ROWS = [
    ("img", "<img src=x onerror=alert(1)>", "<img src=x onerror=alert(1)>"),
    ("link", '<a href="https://evil.example/">click</a>', '<a href="https://evil.example/">click</a>'),
    ("bold", "<b>bold</b><script>alert(2)</script>", "<b>bold</b><script>alert(2)</script>"),
    ("markdown-string", "`**strong** _em_`", "`**strong** _em_`"),
    ("label-escape", '"] --> x[("pwned', '"] --> x[("pwned'),
    ("entity-code", "#60;b#62; &lt;i&gt;", "#60;b#62; &lt;i&gt;"),
    ("mermaid-comment", "%% click a href", "%% click a href"),
    ("ansi-colour", "\x1b[31mred\x1b[0m", "␛[31mred␛[0m"),
    ("bell-vt-ff-del", "a\x07b\x0bc\x0cd\x7fe", "a␇b␋c␌d␡e"),
    ("nul-and-c1", "x\x00y\x9bz", "x␀y\\x9bz"),
]
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

SNIPPET = "print('data')\n"
CONF = f'''
import sys
sys.path.insert(0, {str(REPO)!r})
extensions = ["myst_parser", "sphinx_design", "capture.sphinxext", "capture.sphinxext.site.mermaid"]
myst_enable_extensions = ["colon_fence"]
book_root = {{root!r}}
book_platforms = ["{PLAT}"]
book_local_platform = "none"
book_mermaid_npm_dir = {str(REPO / "docs" / "_mermaid")!r}
show_warning_types = True
'''


def rec(rid: str) -> str:
    """The record's name (a name in an expression has no '-')."""
    return "data." + rid.replace("-", "_")


def page() -> str:
    parts = ["---", f"book_platform: {PLAT}", "---", "# 数据", ""]
    for rid, _, _ in ROWS:
        name = rec(rid)
        parts += [f"(row-{rid})=", f"## {rid}", "", f"值：{{num}}`first(data@cpu:{name})`。", "",
                  ":::{datachart}", "flowchart LR",
                  f'  n["{{{{ value(\'first(data@cpu:{name})\') }}}}"] -->|"{{{{ value(\'first(data@cpu:{name})\') }}}}"| m["固定"]',
                  ":::", ""]
    parts += ["(data-table)=", "## 表", "", "```{records-table} 数据", ":rows: 数据 = data@cpu",
              ":columns: " + "; ".join(f"{rid} = first({{row}}:{rec(rid)})" for rid, _, _ in ROWS), "```", "",
              "## 输出", "", "```{output} data@cpu", "```", ""]
    return "\n".join(parts)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("site-data")
    root = tmp / "book"
    write(root / "snippets/data.py", SNIPPET)
    write(root / "docs/experiments.toml", '[[experiment]]\nid = "data"\nscript = "snippets/data.py"\n')
    layout = Layout(root)
    exp = load(layout.manifest).get("data")
    records = [{"name": rec(rid), "value": value, "unit": "", "tags": {}} for rid, value, _ in ROWS]
    text = "".join(f"{rid}: {value}\n" for rid, value, _ in ROWS)
    Store(layout.fragments).write(PLAT, "data@cpu", text, {"inputs_hash": inputsmod.inputs_hash(exp, "cpu", layout),
                                                          "inputs": inputsmod.inputs(exp, "cpu", layout), "records": records,
                                                          "experiment": "data", "role": "cpu", "device": "cpu"})
    write(root / "docs/index.md", page())
    write(root / "conf.py", CONF.format(root=str(root)))
    before = snapshot(layout)
    env = {"BOOK_CHART_CACHE": str(tmp / "charts")}
    import os

    r = subprocess.run([sys.executable, "-m", "sphinx", "-n", "--keep-going", "-b", "html", "-c", str(root), str(root / "docs"),
                        str(tmp / "html")], capture_output=True, text=True, timeout=600, env={**os.environ, **env})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert snapshot(layout) == before, "the build changed the fragment store"
    return {"html": (tmp / "html" / "index.html").read_text(encoding="utf-8"), "log": r.stderr}


def section(built, rid: str) -> str:
    """The HTML of one row's section: from its label to the next label."""
    h = built["html"]
    start = h.index(f'id="row-{rid}"')
    ends = [i for i in (h.find('id="row-', start + 10), h.find('id="data-table"', start)) if i > 0]
    return h[start:min(ends)]


def shown_text(fragment: str) -> str:
    """What a reader sees of some HTML or SVG: its text, entities decoded, <style> left out."""
    body = re.sub(r"<style\b.*?</style>", "", fragment, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def tags(fragment: str) -> set[str]:
    return {t.lower() for t in re.findall(r"<([A-Za-z][\w-]*)", fragment)}


@pytest.mark.parametrize("rid, value, shown", ROWS, ids=[r[0] for r in ROWS])
def test_a_value_shows_as_text(built, rid, value, shown):
    part = section(built, rid)
    assert not CONTROL.search(part), "a raw control character reached the HTML"
    markup = {"img", "script", "b", "strong", "em", "i", "iframe", "object"}
    assert not tags(part) & markup, tags(part) & markup
    assert not re.search(r"<a\b[^>]*evil\.example", part)
    assert shown in shown_text(part), f"{shown!r} not shown in the {rid} section"
    svgs = re.findall(r"<svg\b.*?</svg>", part, flags=re.S)
    if svgs:  # drawn at build time: the node label shows the value exactly, and nothing in it is markup
        for svg in svgs:
            assert not tags(svg) & {"img", "a", "script", "b", "strong", "em", "i"}, tags(svg)
            labels = shown_text(svg)
            assert shown.replace("\n", " ") in labels.replace("\n", " ") or shown in labels, labels
    else:
        pre = re.findall(r'<pre [^>]*class="mermaid[^"]*"[^>]*>(.*?)</pre>', part, flags=re.S)
        assert pre and not re.search(r'["<>`]', html.unescape(pre[0]).split('n["', 1)[1].split('"]', 1)[0])


def test_outputs_and_tables_show_controls_as_symbols(built):
    h = built["html"]
    assert not CONTROL.search(h)
    rest = h[h.index('id="data-table"'):]
    table, output = rest[:rest.index("book-output")], rest[rest.index("book-output"):]
    for _, _, shown in ROWS:  # in the records table, and in the output (`rid: value` lines)
        assert shown in shown_text(table), shown
    out = shown_text(output)
    assert "ansi-colour: ␛[31mred␛[0m" in out and "bell-vt-ff-del: a␇b␋c␌d␡e" in out and "nul-and-c1: x␀y\\x9bz" in out


def test_no_warning_about_the_data(built):
    assert "Traceback" not in built["log"]
    assert "mermaid cannot draw" not in built["log"], built["log"]


def test_chart_text_unit():
    from capture.sphinxext.charts import chart_text

    assert chart_text('<a href="x">`y`</a> #60; a\x1bb\nc&d') == \
        "#lt;a href=#quot;x#quot;#gt;#grave;y#grave;#lt;/a#gt; #num;60; a␛b c#amp;d"
