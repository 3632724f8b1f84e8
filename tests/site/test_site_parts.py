"""The site's parts, each checked on its own: the 'pages that depend on X' helper, chart drawing and its
cache, the datachart/mermaid collision, the search index, the ran-where page, the reproduce lines, the
precision rule, compare, and that every warning of the site's code is typed and located."""

from __future__ import annotations

import ast
import json
import re
from html import unescape
from pathlib import Path
from types import SimpleNamespace

import pytest
from site_helpers import ROOT, build, html_pages

pytest.importorskip("sphinx")


# -- depends: one helper for "re-read the pages that depend on X" ---------------------------------------


def test_dependency_rereads_noted_pages_only_when_the_fingerprint_changes():
    from capture.sphinxext.site.depends import Dependency

    state = {"fp": 1}
    dep = Dependency("thing", lambda app: state["fp"])
    env, app = SimpleNamespace(docname="a"), None
    dep.note(env)
    dep.note(env, "b")
    assert dep._outdated(app, env, set(), set(), set()) == []  # the first build only records
    assert dep._outdated(app, env, set(), set(), set()) == []  # unchanged
    state["fp"] = 2
    assert dep._outdated(app, env, set(), set(), {"b"}) == ["a"]  # changed: noted pages, minus removed ones
    dep._purge(app, env, "a")
    state["fp"] = 3
    assert dep._outdated(app, env, set(), set(), set()) == ["b"]


def test_dependency_merges_parallel_readers_and_can_name_its_pages():
    from capture.sphinxext.site.depends import Dependency

    dep = Dependency("thing", lambda app: 0)
    main, worker = SimpleNamespace(docname=""), SimpleNamespace(docname="x")
    dep.note(worker)
    dep.note(worker, "y")
    dep._merge(None, main, {"x"}, worker)
    assert dep.dependents(None, main) == {"x"}  # only the docs that worker read
    named = Dependency("other", lambda app: 0, pages=lambda app, env: ["index"])
    assert named.dependents(None, main) == {"index"}


def test_an_edited_style_sheet_reaches_the_site_without_a_page_edit(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    conf = 'html_theme = "sphinx_book_theme"\nhtml_static_path = ["_static"]\nhtml_css_files = ["x.css"]\n'
    (src / "_static").mkdir(parents=True)
    (src / "_static" / "x.css").write_text("p { color: red; }\n")
    rc, log = build(src, out, ["capture.sphinxext.site.theme"], conf, {"index.md": "# 首页\n\n文字。\n"})
    assert rc == 0, log
    (src / "_static" / "x.css").write_text("p { color: blue; }\n")
    rc, log = build(src, out, ["capture.sphinxext.site.theme"], conf)
    assert rc == 0, log
    assert (out / "_static" / "x.css").read_text() == "p { color: blue; }\n"


# -- charts ---------------------------------------------------------------------------------------------


def test_chart_cache_key_follows_what_makes_the_drawing(tmp_path):
    from capture.sphinxext.site import render

    k = render.job_key("flowchart LR\n a --> b", "light", "11.17.2")
    assert k == render.job_key("flowchart LR\n a --> b", "light", "11.17.2")
    assert len({k, render.job_key("flowchart LR\n a --> c", "light", "11.17.2"),
                render.job_key("flowchart LR\n a --> b", "dark", "11.17.2"),
                render.job_key("flowchart LR\n a --> b", "light", "11.18.0")}) == 4
    drawing = render.Drawing("<svg id='x'></svg>", 800.0, 200.0, 16.0)
    render.store(k, drawing, tmp_path)
    assert render.cached(k, tmp_path) == drawing
    assert render.cached("absent", tmp_path) is None
    (tmp_path / "broken.json").write_text("{")
    assert render.cached("broken", tmp_path) is None  # unreadable: drawn again, never an exception
    assert drawing.min_width(11) == pytest.approx(550.0)  # 16 px text shrinks to 11 px at 550 of 800 px


def test_svg_markup_gets_a_page_unique_id_and_its_size_limits():
    from capture.sphinxext.site import mermaid, render

    svg = ('<svg id="bookchart-k" width="100%" class="flowchart" style="max-width: 800px;" viewBox="0 0 800 200">'
           '<style>#bookchart-k .node{fill:red}</style><g id="bookchart-k-edge"></g></svg>')
    out = mermaid.svg_markup(render.Drawing(svg, 800.0, 200.0, 16.0), "bookchart-k", "bookchart-k-2", "book-chart-dark")
    assert "bookchart-k-2 .node" in out and 'id="bookchart-k-2-edge"' in out and 'id="bookchart-k"' not in out
    assert 'class="book-chart-dark flowchart"' in out
    assert 'style="max-width: 800px; min-width: 550px"' in out


@pytest.fixture(scope="module")
def chromium():
    from capture.sphinxext.site import render

    exe = render.find_browser()
    if exe is None:
        from conftest import GET_CHROMIUM, unavailable

        unavailable(f"no Chromium to draw charts at build time: {GET_CHROMIUM}")
    return exe


MERMAID_CONF = 'html_theme = "sphinx_book_theme"\nshow_warning_types = True\nbook_mermaid_npm_dir = {npm!r}\n'


def test_a_chart_mermaid_cannot_draw_fails_the_strict_build_at_its_line(tmp_path, chromium, monkeypatch):
    monkeypatch.setenv("BOOK_CHART_CACHE", str(tmp_path / "cache"))
    page = "# 图\n\n文字。\n\n```{mermaid}\nflowchart LR\n  a --> \n```\n"
    conf = MERMAID_CONF.format(npm=str(ROOT / "docs" / "_mermaid"))
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.mermaid"], conf, {"index.md": page})
    assert rc != 0
    assert re.search(r"index\.md:5: WARNING: mermaid cannot draw this chart \(light\): Parse error", log), log
    assert "[book.mermaid]" in log


def test_charts_become_inline_svg_without_scripts(tmp_path, chromium, monkeypatch):
    monkeypatch.setenv("BOOK_CHART_CACHE", str(tmp_path / "cache"))
    page = '# 图\n\n```{mermaid}\nflowchart LR\n  a["调用"] --> b{"返回？"}\n```\n'
    conf = MERMAID_CONF.format(npm=str(ROOT / "docs" / "_mermaid"))
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.mermaid"], conf, {"index.md": page})
    assert rc == 0, log
    html = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert html.count("<svg") == 2 and "book-chart-light" in html and "book-chart-dark" in html
    assert "mermaid.min.js" not in html and "book-mermaid.js" not in html and 'type="module"' not in html
    assert list((tmp_path / "cache").glob("*.json")), "the drawings are cached"
    # a second build of a changed page draws nothing new: the cache has both drawings
    (tmp_path / "src" / "index.md").write_text(page + "\n另一段。\n", encoding="utf-8")
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.mermaid"], conf)
    assert rc == 0 and "drawing" not in log, log


def test_mermaid_is_configured_with_a_value_sphinxcontrib_mermaid_accepts(tmp_path):
    """sphinxcontrib-mermaid 2.1.1 accepts raw, png and svg; the book draws SVG at build time."""
    import sphinxcontrib.mermaid as scm

    conf = MERMAID_CONF.format(npm=str(ROOT / "docs" / "_mermaid")) + 'book_charts = "browser"\n'
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.mermaid"], conf,
                    {"index.md": "# 图\n\n```{mermaid}\nflowchart LR\n  a --> b\n```\n"})
    assert rc == 0, log
    source = Path(scm.__file__).read_text()
    assert "must be one of 'raw', 'png', 'svg'" in source  # what 2.1.1 accepts
    from capture.sphinxext.site import mermaid

    assert "svg" in re.findall(r'mermaid_output_format = "(\w+)"', Path(mermaid.__file__).read_text())
    html = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert '<pre class="mermaid">' in html and "book-mermaid.js" in html  # the browser fallback
    assert "cdn.jsdelivr" not in html and 'type="module"' not in html


@pytest.mark.parametrize(
    ("template", "clashes"),
    [
        ('flowchart LR\n  a["{{ value(\'x@cpu:y\') }}"] --> b', []),
        ('flowchart LR\n  a["{{ platform }}"]', []),
        ('flowchart LR\n  a["{{ value(\'x@cpu:y\', \'ratio\') }}"]', []),
        ('flowchart LR\n  a{{"六边形"}} --> b', [2]),
        ('flowchart LR\n  a --> b\n  c{{ 1 + 1 }}', [3]),
        ('flowchart LR\n  a{% raw %}{{"六边形"}}{% endraw %} --> b', []),  # the escape the message gives
    ],
    ids=["value", "platform", "value-style", "hexagon", "constant", "raw-hexagon"],
)
def test_datachart_refuses_expressions_that_read_no_record(template, clashes):
    from capture.sphinxext.charts import collisions

    assert [line for line, _ in collisions(template)] == clashes


def test_datachart_hexagon_is_a_located_build_error(tmp_path):
    page = "# 图\n\n文字。\n\n:::{datachart}\nflowchart LR\n  a{{\"六边形\"}} --> b\n:::\n"
    conf = 'show_warning_types = True\nbook_local_platform = "none"\nbook_root = {root!r}\nmyst_enable_extensions = ["colon_fence"]\n'
    (tmp_path / "book" / "docs").mkdir(parents=True)
    (tmp_path / "book" / "docs" / "experiments.toml").write_text("")
    rc, log = build(tmp_path / "src", tmp_path / "out", ["sphinxcontrib.mermaid", "capture.sphinxext"],
                    conf.format(root=str(tmp_path / "book")), {"index.md": page})
    assert rc != 0
    assert re.search(r"index\.md:7: WARNING: datachart: `\{\{ … \}\}` here is not value\(\.\.\.\) or platform", log), log
    assert "{% raw %}" in log and "[capture.template]" in log


# -- the built site ------------------------------------------------------------------------------------


def search_index(site: Path) -> dict:
    text = (site / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1 : text.rindex(")")])


def pages_with(index: dict, term: str) -> set[str]:
    """Pages whose text or titles hold the term."""
    found = set()
    for table in ("terms", "titleterms"):
        hits = index[table].get(term, [])
        found |= {index["docnames"][i] for i in ([hits] if isinstance(hits, int) else hits)}
    return found


def test_search_index_leaves_out_source_listings_and_tables_of_contents(site):
    index = search_index(site)
    code_pages = {i for i, d in enumerate(index["docnames"]) if re.fullmatch(r"api/crates/[^/]+/code/.*", d)}
    assert code_pages, "no sphinx-rust source page: the test would prove nothing"
    indexed = {i for hits in index["terms"].values() for i in ([hits] if isinstance(hits, int) else hits)}
    assert not code_pages & indexed, "Rust source listings are in the search index"
    # index.md lists the chapters in its toctree; their titles' words are not the front page's words
    assert "index" not in pages_with(index, "bookrec"), "the front page matches the appendix title it only lists"
    assert "eager" in pages_with(index, "延迟执行")


def test_pages_for_authors_are_neither_in_the_readers_sidebar_nor_in_the_search(site):
    """docs/dev (book_author_pages): reached from dev/index, which the front page links once; no reader page's sidebar
    lists them, and the search index holds none of their words or titles."""
    index = search_index(site)
    dev = {i for i, d in enumerate(index["docnames"]) if d.startswith("dev/")}
    assert dev, "no page for authors built: the test would prove nothing"
    indexed = {i for table in ("terms", "titleterms") for hits in index[table].values()
               for i in ([hits] if isinstance(hits, int) else hits)}
    assert not dev & indexed, sorted(index["docnames"][i] for i in dev & indexed)
    assert all(not index["titles"][i] for i in dev)
    for page in ("index.html", "eager.html", "design.html", "appendix/glossary.html", "dev/site.html"):
        text = (site / page).read_text(encoding="utf-8")
        nav = text[text.index("bd-sidebar-primary"): text.index("</nav>", text.index("bd-links"))]
        assert not re.search(r'href="(?:\.\./)?dev/', nav), f"{page}: the sidebar links a page for authors"
    front = (site / "index.html").read_text(encoding="utf-8")
    assert front.count('href="dev/index.html"') == 1, "the front page links the notes for authors once"
    assert (site / "dev" / "index.html").is_file() and (site / "dev" / "coverage.html").is_file()


def test_search_ranks_chapters_above_notes_and_the_api(site):
    scorer = (site / "_static" / "language_data.js").read_text(encoding="utf-8")
    assert 'docname.startsWith("api/")' in scorer, "the book's Scorer is not in language_data.js"


def test_ran_where_page_agrees_with_status(site):
    from capture.evidence.book import Book
    from capture.storage.keys import FragmentKey
    from capture.sphinxext.site.ranwhere import STATE_WORDS
    from capture.evidence.status import collect

    b = Book(ROOT)
    plats = b.platforms()
    entries = {(e.platform, e.key): e.state for e in collect(b, plats)}
    html = (site / "appendix" / "ran-where.html").read_text(encoding="utf-8")
    table = html[html.index("book-ran-where-experiments") :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)
    header, body = rows[0], rows[1:]
    heads = re.findall(r"<th[^>]*>(.*?)</th>", header, re.S)[1:]
    # each machine by its short name, its full name in the tooltip
    assert [unescape(re.sub(r"<[^>]+>", "", h)).strip().replace("\u00a0", " ") for h in heads] == [b.short_label(p) for p in plats]
    assert [unescape(m.group(1)).replace("\u00a0", " ") for h in heads for m in [re.search(r'title="([^"]*)"', h)]] == \
        [b.label(p) for p in plats]
    keys = [str(FragmentKey(e.id, r)) for e in b.manifest.experiments for r in e.roles]
    assert len(body) == len(keys)
    for key, row in zip(keys, body):
        cells = [unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        assert key in re.sub(r"<[^>]+>", "", cells[0])  # a long key is cut into parts that break apart (codewrap.py)
        for plat, cell in zip(plats, cells[1:]):
            assert STATE_WORDS[entries[(plat, key)]] in re.sub(r"<[^>]+>", "", cell), (key, plat, cell[:200])


def test_every_output_says_how_to_reproduce_it(site):
    """Under every output, one click away (「来历」, behind the caption's icon): in Chinese, the steps of capture/machines/identity.py, each
    command as code, on the machine that must run it."""
    from capture.evidence.book import Book
    from capture.storage.keys import FragmentKey

    b = Book(ROOT)
    checked = 0
    for page in html_pages(site):
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r'class="[^"]*book-output-wrapper book-plat-([a-z0-9_-]+) book-frag-([a-z0-9_-]+?)--(cpu|gpu)[ "]', text):
            plat, key = m.group(1), FragmentKey(m.group(2), m.group(3))
            after = text[m.end() : m.end() + 20000]
            # 「来历」 behind an icon: the summary shows ⓘ, its name (tooltip, aria-label) says 来历
            more = re.search(r'<details class="book-output-more[^"]*">\s*<summary aria-label="来历[^"]*"[^>]*>ⓘ</summary>(.*?)</details>',
                             after, re.S)
            assert more, f"{page.name}: no 「来历」 after {key} on {plat}"
            repro = re.search(r"<p[^>]*>重现：(.*?)</p>", more.group(1), re.S)
            assert repro, f"{page.name}: no reproduce line after {key} on {plat}"
            cmds = [re.sub(r"[\s\u00a0]+", " ", unescape(re.sub(r"<[^>]+>", "", c))).strip()
                    for c in re.findall(r"<code[^>]*>(.*?)</code>", repro.group(1), re.S)]
            steps = b.identity(plat).regenerate_steps([key.exp], [key.role])
            assert cmds == [cmd for _, cmd in steps], (page.name, key, plat, cmds)
            words = unescape(re.sub(r"<code[^>]*>.*?</code>", "", repro.group(1), flags=re.S))
            assert b.label(plat) in words.replace("\u00a0", " ") and not re.search(r"\b(?:on|then|with)\b", words), words
            checked += 1
    assert checked > 10


def test_an_unpublished_volume_is_explained_once_per_page(site):
    """While a volume's inventory is absent, its references are plain text with a tooltip, and each page that
    refers to it says once what the volume is and that the references become links when it is published."""
    refs = 0
    for page in html_pages(site):
        text = page.read_text(encoding="utf-8")
        refs += text.count("vol-ref")
        for vol in ("burn", "candle"):
            unlinked = len(re.findall(rf'class="vol-ref vol-unlinked"[^>]*>{vol} 卷', text))
            notes = len(re.findall(rf'book-vol-note[^>]*>\s*<p[^>]*>{vol} 卷是', text))
            assert notes == (1 if unlinked else 0), (page.name, vol, unlinked, notes)
    assert refs > 0, "no {vol} reference on the site: the test would prove nothing"


# -- numbers -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "style", "expected"),
    [
        ((0.0094, "s"), "", "9.4 ms"),
        ((0.99996, "s"), "", "1 s"),  # rounded first, then scaled: never "1000 ms"
        ((1.234567e-4, "s"), "", "123 µs"),
        ((103055.2, ""), "ratio", "10.3 万倍"),
        ((2108.2, ""), "ratio", "2110 倍"),  # 3 significant digits from 10 on
        ((4.66, ""), "ratio", "4.7 倍"),  # 2 under 10
        ((0.0163, ""), "ratio", "0.016 倍"),
        ((0.1234, ""), "percent", "12%"),
        ((1048576.0, ""), "", "1048576"),  # a count: exact
        ((1.5e9 * 1024, "B"), "", "1430 GiB"),  # the largest unit is GiB
    ],
)
def test_one_precision_rule(value, style, expected):
    from capture.evidence.fmt import NBSP, fmt_value
    from capture.evidence.query import Value

    assert fmt_value(Value(*value), style=style) == expected.replace(" ", NBSP)


# -- compare -----------------------------------------------------------------------------------------


def fragment(records: list[dict]):
    from capture.storage.store import Fragment

    return Fragment(platform="p", key="x@cpu", text="", meta={"records": records})


def rec(name, value, unit="s", **tags):
    return {"name": name, "value": value, "unit": unit, "tags": tags}


def test_compare_lines_up_records_across_machines_with_ratios():
    from capture.commands.compare import Column, table

    mine = fragment([rec("t", 0.002, device="mps", run="0"), rec("flag", True, "", device="mps"), rec("only.mine", 1.0)])
    theirs = fragment([rec("t", 0.001, device="cuda", run="0"), rec("flag", False, "", device="cuda"), rec("only.theirs", 3.0)])
    lines = table("x@gpu", mine, [Column("H200", theirs), Column("Mac", None)])
    text = "\n".join(lines)
    assert re.search(r"t\{run=0\}\s+2 ms\s+1 ms \(2×\)\s+—", text), text  # device tags differ, the record matches
    assert re.search(r"flag\s+是\s+否\s", text)
    assert re.search(r"only\.mine\s+1 s\s+—", text) and re.search(r"only\.theirs\s+—\s+3 s", text)
    assert "Mac (not captured)" in lines[0]


@pytest.mark.slow
def test_compare_runs_into_a_scratch_store_and_leaves_the_fragments_alone(tmp_path, monkeypatch):
    import io

    from capture.commands.compare import compare
    from tests.engine.book import make_book, run

    monkeypatch.setenv("CARGO_TARGET_DIR", str(tmp_path / "cargo-target"))
    monkeypatch.delenv("BOOK_PLATFORM", raising=False)
    layout = make_book(tmp_path / "book")
    outcomes, _ = run(layout, only=["hello"], roles=["cpu"])
    assert outcomes["hello@cpu"].status == "ok"
    before = {p: p.read_bytes() for p in layout.fragments.rglob("*") if p.is_file()}
    out, err = io.StringIO(), io.StringIO()
    assert compare(layout, ["hello"], ["cpu"], out=out, err=err) == 0, err.getvalue()
    assert {p: p.read_bytes() for p in layout.fragments.rglob("*") if p.is_file()} == before
    assert not any((layout.scratch / "compare").rglob("*.json")), "the scratch store is removed"
    assert re.search(r"hello\.elapsed\s+\S+ \S+\s+\S+ \S+ \(\S+×\)", out.getvalue()), out.getvalue()


# -- warnings -------------------------------------------------------------------------------------------

SITE_CODE = sorted((ROOT / "capture" / "sphinxext").rglob("*.py"))


@pytest.mark.parametrize("path", SITE_CODE, ids=[p.relative_to(ROOT).as_posix() for p in SITE_CODE])
def test_every_warning_is_typed_and_located(path):
    """logger.warning names a type, a subtype (so it can be suppressed) and a location; warn() gets all three."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        name = getattr(call.func, "attr", None) or getattr(call.func, "id", None)
        where = f"{path.relative_to(ROOT)}:{call.lineno}"
        if name == "warning" and getattr(call.func.value, "id", "") == "logger":
            assert {"type", "subtype", "location"} <= {k.arg for k in call.keywords}, where
        elif name == "warn" and isinstance(call.func, ast.Name):
            assert len(call.args) + len(call.keywords) == 3, f"{where}: warn(message, location, subtype)"
    assert "reporter.warning" not in path.read_text(encoding="utf-8"), path


# -- search: jieba's dictionary, loaded faster, the same -------------------------------------------------


def test_jieba_preload_gives_the_tokenizer_jiebas_own_dictionary(tmp_path):
    jieba = pytest.importorskip("jieba")
    from capture.sphinxext.site.zhsearch import preload

    own = jieba.Tokenizer()
    own.initialize()
    for attempt in ("built", "loaded"):  # the first call builds and keeps the pickle, the second reads it
        tok = jieba.Tokenizer()
        preload(tok, tmp_path)
        assert tok.initialized and tok.total == own.total and tok.FREQ == own.FREQ, attempt
        assert list(tmp_path.glob("prefix-*.pickle"))
    text = "调用一个张量运算之后，结果什么时候真正算出来？延迟执行和同步"
    assert list(tok.cut_for_search(text)) == list(own.cut_for_search(text))


# -- reader pages (issue 22) ------------------------------------------------------------------------------

READER_PAGES = ("index.html", "eager.html", "design.html", "appendix/ran-where.html", "appendix/glossary.html", "404.html")


def test_a_puzzle_keeps_its_whole_answer_in_its_dropdown(site):
    """Nothing of a 「动脑筋」 box follows its closed answer: the answer cannot show before it is opened
    (the fence guard, capture/sphinxext/site/fences.py, keeps the source that way)."""
    puzzles = 0
    for page in ("eager.html", "design.html"):
        text = (site / page).read_text(encoding="utf-8")
        for m in re.finditer(r'<div class="puzzle admonition">(.*?)</details>\s*</div>', text, re.S):
            puzzles += 1
            box = m.group(1)
            assert "<details" in box and " open" not in box[box.index("<details"):box.index(">", box.index("<details"))]
        # the box ends right after its dropdown: no block of the answer after it
        for m in re.finditer(r'<div class="puzzle admonition">', text):
            rest = text[m.end():]
            depth, i = 1, 0
            for t in re.finditer(r"<(/?)div\b", rest):
                depth += -1 if t.group(1) else 1
                if depth == 0:
                    i = t.start()
                    break
            inner = rest[:i]
            after = inner[inner.rindex("</details>") + len("</details>"):]
            assert not re.sub(r"<[^>]+>", "", after).strip(), (page, after[:200])
    assert puzzles >= 2


INTERNAL = ["不在这句话说的范围内", "on a machine with cargo", "id burn-shape", "page 004", "has no GPU", "none on PATH",
            "crate feature", "本书作者", "Copyright", "依据：median(", "依据：min(", "张量主线", "没人用的结果"]


def test_reader_pages_carry_no_internal_notes(site):
    found = {}
    for page in READER_PAGES:
        path = site / page
        if path.is_file():
            text = unescape(path.read_text(encoding="utf-8"))
            hits = [w for w in INTERNAL if w in text]
            if hits:
                found[page] = hits
    assert not found, found


def test_the_glossary_lists_every_term_with_the_section_that_introduces_it(site):
    import tomllib

    terms = tomllib.loads((ROOT / "docs" / "terms.toml").read_text(encoding="utf-8"))["term"]
    text = (site / "appendix" / "glossary.html").read_text(encoding="utf-8")
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", text[text.index("book-glossary"):], re.S)[1:]
    assert len(rows) == len(terms)
    for term, row in zip(terms, rows):
        assert f"<strong>{term['zh']}</strong>" in row
        assert 'href="../' in row and f"#{term['at']}" in row, (term["zh"], row[:300])


# -- the reader's words (capture/sphinxext/reader.py) and the machines' short names --------------------------


def test_machines_have_short_unique_names_from_their_platform_json():
    from capture.evidence.book import Book

    b = Book(ROOT)
    plats = b.platforms()
    names = [b.short_label(p) for p in plats]
    assert len(set(names)) == len(names) and all(len(n) <= 12 for n in names), names
    assert b.short_label("linux-x86_64-nvidia-h200", "gpu") == "H200 · GPU"
    assert b.short_label("linux-x86_64-cpu", "cpu") == "2 核 CPU"  # a machine without a GPU has one role


def test_reasons_read_as_sentences_with_formatted_values():
    from capture.sphinxext.reader import detail_words, figure_tip, reason

    why = ("median(candle-matmul@cpu:matmul.first) = 0.01321 s [0.01222–0.01367] < median(burn-matmul@cpu:matmul.first)"
           " = 0.0123 s [0.01182–0.01395]: cannot tell (the repeats themselves overlap and the spreads widened by their"
           " drift overlap: [0.0107–0.0168] (x1.23) vs [0.0104–0.0171] (x1.23))")
    text = reason(why)
    assert "13.2\u00a0ms" in text and "说不清" in text and "几次重复本身就有重叠" in text and "x1.23" not in text
    # repeats that agree, held open only by the drift between captures: the reason names that drift
    apart = reason("median(a@gpu:x) = 7.2e-05 s [7.17e-05–7.86e-05] < median(b@gpu:x) = 0.0001175 s "
                   "[0.0001085–0.0001267]: cannot tell (the repeats alone say yes, but the spreads widened by their drift "
                   "overlap: [5.136e-05–0.0001097] (x1.4) vs [7.643e-05–0.0001798] (x1.42))")
    assert "这次捕获里隔得开" in apart and "（×1.4、×1.42）" in apart and "说不清" in apart, apart
    assert "median" not in text and "@" not in text  # no expression, no record name
    assert reason("all(): yes — {round=0}: a@cpu:x = 0.02 s > 0.25 * a@cpu:y = 0.004903 s: yes").startswith("每一轮都成立。第 0 轮：")
    # two all()s joined by `and`: each reads as its own sentence, every round of both said
    both = reason("all(): yes — {round=0}: a@cpu:x = 0.02 s > 0.25 * a@cpu:y = 0.004903 s: yes; "
                  "all(): yes — {round=0}: b@cpu:x = 0.09 s > 0.25 * b@cpu:y = 0.0087 s: yes; "
                  "{round=1}: b@cpu:x = 0.08 s > 0.25 * b@cpu:y = 0.0085 s: yes")
    assert both.count("每一轮都成立。第 0 轮：") == 2 and "第 1 轮：80" in both and "成立；" not in both, both
    said = {"raised at next op": "到下一个算子才报错", "raised at call": "调用时就报错", "silent: read 0": "不报错，读出来的是 0"}
    assert reason("torch-oob@gpu:oob.outcome = 'raised at next op' == 'raised at call': no", said) == \
        "记下的是「到下一个算子才报错」，不是「调用时就报错」"
    # a recorded word ruled out several times is said once, with the words it is not
    ruled_out = reason("burn-oob@gpu:oob.outcome = 'silent: read 0' != 'raised at call': yes; "
                       "burn-oob@gpu:oob.outcome = 'silent: read 0' != 'raised at next op': yes", said)
    assert ruled_out == "记下的是「不报错，读出来的是 0」，不是「调用时就报错」「到下一个算子才报错」中的任何一种", ruled_out
    assert reason("a@cpu:w = 'silent: read 0' == 'silent: read 0': yes; b@cpu:w = 'silent: read 0' == 'silent: read 0': yes",
                  said) == "记下的是「不报错，读出来的是 0」"  # the same clause twice is said once
    # the fact the data show, as a person writes it: the recorded figures (the factor said, not applied), no
    # question-and-answer, no «这里问的是它的反面» for a claim put the other way round
    fact = reason("not (median(a@cpu:x) = 0.00366 s < 0.25 * median(b@cpu:y) = 0.000916 s: no)")
    assert fact == "3.66\u00a0ms 超过 3.66\u00a0ms 的四分之一", fact
    assert reason("a@cpu:kernel.count = 3 == 1: no") == "记下的是 3，不是 1"
    # a history's closest gap: between the two figures, or, when the claim draws a line (0.25 * B), to that line
    from capture.evidence.query import HISTORY_AGREE
    history = f" [history: 5 captures {HISTORY_AGREE}, the closest x2.01]"
    plain = reason("median(a@gpu:x) = 0.000265 s < median(b@gpu:y) = 0.00107 s: yes" + history)
    assert plain.endswith("两者之比最小的一次也有 2.01\u00a0倍"), plain
    line = reason("median(a@gpu:x) = 0.000265 s < 0.25 * median(b@gpu:y) = 0.0002675 s: yes" + history)
    assert "四分之一" in line and line.endswith("离这个界限最近的一次也隔着 2.01\u00a0倍") and "两者之比" not in line, line
    assert reason("median(a@cpu:x) = 25.1 s > 100 * median(b@cpu:y) = 0.283 s: yes") == "25.1\u00a0s 超过 2.83\u00a0ms 的 100\u00a0倍"
    assert detail_words("Linux x86_64 纯 CPU（2 核） has no GPU") == "Linux x86_64 纯 CPU（2 核） 没有 GPU"
    assert "cargo" in detail_words("needs cargo (it reads the pinned crates' source from cargo's registry); none on PATH here")
    tip = figure_tip("NVIDIA H200 · Linux", "cuda", "median(a@gpu:x) / median(b@gpu:y)")
    assert tip.startswith("两个记录之比，在 NVIDIA H200 · Linux 上测得，用 CUDA 跑在 GPU 上。"), tip
    tip = figure_tip("Linux x86_64 纯 CPU（2 核）", "cpu、flex", "median(a@cpu:x)")
    assert tip.startswith("几次重复的中位数，在 Linux x86_64 纯 CPU（2 核）上测得，跑在 CPU 上。"), tip  # no «（设备 cpu）»


def test_bytes_quoted_from_an_output_keep_its_decimal_unit():
    from capture.evidence.fmt import fmt_value
    from capture.evidence.query import Value

    assert fmt_value(Value(9699730.0, "B")) == "9.25\u00a0MiB"
    assert fmt_value(Value(9699730.0, "B"), style="decimal") == "9.7\u00a0MB"


def test_each_chart_has_one_caption(site):
    """A data chart's caption (what it shows, from which machine) is printed once, above its 「图中的数据来自哪些实验」."""
    checked = 0
    for page in html_pages(site):
        text = page.read_text(encoding="utf-8")
        for chart in re.split(r'<div class="book-datachart ', text)[1:]:
            body = chart[: chart.find("</details>") + len("</details>")]
            tail = chart[len(body): len(body) + 400]
            checked += 1
            assert body.count('class="book-chart-caption"') == 1, f"{page.name}: {body.count('book-chart-caption')} captions"
            assert 'class="book-chart-caption"' not in tail.split("</div>")[0], f"{page.name}: a caption after the chart's details"
    assert checked >= 1, "no data chart built: the test would prove nothing"  # the rewritten chapters draw one (eager)


@pytest.mark.parametrize("value, unit, cell", [
    (0.00023949, "s", "239\u00a0µs"),  # rounded twice (4 digits, then 3) it read 240 µs beside the table's 239 µs
    (0.0496449, "s", "49.6\u00a0ms"),
    (0.0368501, "s", "36.9\u00a0ms"),
    (6.41499e-05, "s", "64.1\u00a0µs"),
    (0.00134949, "s", "1.35\u00a0ms"),
    (4.56499e-07, "s", "456\u00a0ns"),
    (1048576.0, "", "1048576"),  # a count: exact, never «1049000»
])
def test_a_table_cell_and_its_evidence_print_one_value_the_same_way(value, unit, cell):
    from capture.evidence.query import Evaluator
    from capture.sphinxext.numbers import render_value
    from capture.sphinxext.reader import reason

    recs = {"x": [{"name": "x", "value": value, "unit": unit}], "y": [{"name": "y", "value": value * 100, "unit": unit}]}
    ev = Evaluator(lambda ref: recs[ref.name])
    shown = render_value(ev.eval("median(a@cpu:x)"), {})  # how {num} and a {records-table} cell print it
    assert shown == cell
    question = "median(a@cpu:x) < 2 * median(a@cpu:y)"
    evidence = reason(ev.eval(question).why)  # how a claim's evidence prints the same value
    assert shown in evidence, evidence
