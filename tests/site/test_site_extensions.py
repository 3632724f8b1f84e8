"""The site's Sphinx extensions, each on a throwaway project built with the real sphinx-build.

anchors (labels, docs/anchors.txt), volumes ({vol}), zh_text (line breaks in Chinese),
rust_api (incremental builds with sphinx-rust).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from site_helpers import ParsedPage, build

pytest.importorskip("sphinx")
pytest.importorskip("myst_parser")


def inventory(path: Path) -> dict:
    from sphinx.util.inventory import InventoryFile

    with open(path, "rb") as fh:
        return InventoryFile.load(fh, "", lambda _base, loc: loc)


# -- anchors --------------------------------------------------------------------------------

ANCHORS_CONF = 'book_anchors_file = "anchors.txt"\nbook_label_exempt = ["gen/*"]\n'
LABELLED = """\
(p-top)=
# 页面

(p-old)=
(p-new)=
## 改过名的一节
"""


def test_labelled_page_with_complete_anchor_list_builds(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "anchors.txt").write_text("# comment\nindex#p-top\nindex#p-old\nindex#p-new\n")
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.anchors"], ANCHORS_CONF, {"index.md": LABELLED})
    assert rc == 0, log
    page = ParsedPage(tmp_path / "out" / "index.html")
    assert {"p-top", "p-old", "p-new"} <= page.ids  # the old label stays an id after the rename
    labels = inventory(tmp_path / "out" / "objects.inv")["std:label"]
    assert labels["p-old"][2] == "index.html#p-old"
    assert labels["p-new"][2] == "index.html#p-new"


@pytest.mark.parametrize(
    ("page", "listed", "message"),
    [
        (LABELLED + "\n## 没有标签\n", "index#p-top\nindex#p-old\nindex#p-new\n", "section 「没有标签」 has no label"),
        (LABELLED + "\n(p_under)=\n## 下划线\n", "index#p-top\nindex#p-old\nindex#p-new\nindex#p_under\n",
         "label 'p_under' becomes the HTML id 'p-under'"),
        (LABELLED.replace("(p-old)=\n", ""), "index#p-top\nindex#p-old\nindex#p-new\n",
         "public anchor index#p-old is gone"),
        (LABELLED, "index#p-top\nindex#p-new\n", "1 label(s) not listed yet; add these lines (they become public):\nindex#p-old"),
    ],
    ids=["unlabelled-section", "underscore-label", "listed-anchor-gone", "label-not-listed"],
)
def test_label_rules_fail_the_strict_build(tmp_path, page, listed, message):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "anchors.txt").write_text(listed)
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.anchors"], ANCHORS_CONF, {"index.md": page})
    assert rc != 0
    assert message in log


def test_exempt_pages_need_no_labels(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "anchors.txt").write_text("index#p-top\nindex#p-old\nindex#p-new\n")
    pages = {"index.md": LABELLED + "\n```{toctree}\ngen/api\n```\n", "gen/api.md": "# 生成的页面\n\n## 小节\n"}
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.anchors"], ANCHORS_CONF, pages)
    assert rc == 0, log


# -- volumes --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def burn_inventory(tmp_path_factory) -> Path:
    """objects.inv of a tiny stand-in for the burn volume."""
    tmp = tmp_path_factory.mktemp("burn")
    page = "(burn-home)=\n# burn 卷\n\n(fusion-decorator)=\n## Fusion 装饰器\n"
    rc, log = build(tmp / "src", tmp / "out", [], "", {"index.md": page})
    assert rc == 0, log
    return tmp / "out" / "objects.inv"


VOL_PAGES = {
    "index.md": """\
    # 首页

    见 {vol}`burn:fusion-decorator` 和 {vol}`这一节 <burn:fusion-decorator>`。

    ```{toctree}
    sub/page
    ```
    """,
    "sub/page.md": "# 子页\n\n见 {vol}`burn:fusion-decorator`。\n",
}


def vol_conf(inventory: str, url: str = "https://burn.example/book/", about: str = "另一本书，专讲 burn") -> str:
    return (f'book_volumes = {{"burn": {{"title": "burn 卷", "url": {url!r}, "inventory": {inventory!r}, '
            f'"about": {about!r}}}}}\n')


def test_vol_links_when_the_inventory_resolves(tmp_path, burn_inventory):
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.volumes"], vol_conf(str(burn_inventory)), VOL_PAGES)
    assert rc == 0, log
    index = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    href = 'href="https://burn.example/book/index.html#fusion-decorator"'
    assert f"{href}>burn 卷「Fusion 装饰器」</a>" in index  # title from the inventory
    assert f"{href}>burn 卷「这一节」</a>" in index  # title written in the reference
    assert "未链接" not in index


def test_vol_relative_url_is_relative_to_the_site_root(tmp_path, burn_inventory):
    conf = vol_conf(str(burn_inventory), url="../burn/")
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.volumes"], conf, VOL_PAGES)
    assert rc == 0, log
    assert 'href="../burn/index.html#fusion-decorator"' in (tmp_path / "out" / "index.html").read_text()
    assert 'href="../../burn/index.html#fusion-decorator"' in (tmp_path / "out" / "sub" / "page.html").read_text()


def test_vol_degrades_to_text_when_the_inventory_is_missing(tmp_path):
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.volumes"], vol_conf("missing/burn.inv"), VOL_PAGES)
    assert rc == 0, log  # strict build, offline: not an error
    index = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "burn 卷「这一节」" in index and "burn.example" not in index
    # the page says once what the volume is and that the references become links when it is published
    assert index.count("book-vol-note") == 1 and "burn 卷是另一本书，专讲 burn。它还没有上线。" in index
    assert index.count('title="burn 卷还没有上线，上线以后这里会变成链接"') == 2  # each reference says it too
    assert (tmp_path / "out" / "sub" / "page.html").read_text(encoding="utf-8").count("book-vol-note") == 1
    assert "3 处引用写成了纯文本" in log  # the build log says why


def test_vol_inventory_defaults_to_the_published_address(tmp_path, burn_inventory):
    """A volume given only its address (BOOK_BURN_URL) is read from objects.inv there."""
    from capture.sphinxext.site.volumes import load_volume

    vol = load_volume("burn", {"url": burn_inventory.parent.as_uri() + "/"}, str(tmp_path))
    assert vol.source == burn_inventory.parent.as_uri() + "/objects.inv"
    assert load_volume("burn", {"url": "../burn/"}, str(tmp_path)).source == ""  # a relative address: no guess


def test_vol_label_missing_from_an_available_inventory_is_an_error(tmp_path, burn_inventory):
    pages = {"index.md": "# 首页\n\n见 {vol}`burn:no-such-section`。\n"}
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.volumes"], vol_conf(str(burn_inventory)), pages)
    assert rc != 0
    assert "no-such-section" in log


def test_vol_unknown_volume_is_an_error(tmp_path, burn_inventory):
    pages = {"index.md": "# 首页\n\n见 {vol}`torch:fusion-decorator`。\n"}
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.volumes"], vol_conf(str(burn_inventory)), pages)
    assert rc != 0
    assert "volume one of burn" in log


def test_vol_pages_are_rewritten_when_the_inventory_appears(tmp_path, burn_inventory):
    conf = vol_conf("burn.inv")  # relative to the configuration directory
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.volumes"], conf, VOL_PAGES)
    assert rc == 0, log
    assert "burn.example" not in (tmp_path / "out" / "index.html").read_text()
    (tmp_path / "src" / "burn.inv").write_bytes(burn_inventory.read_bytes())
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.volumes"], conf)  # no page changed
    assert rc == 0, log
    index = (tmp_path / "out" / "index.html").read_text()
    assert "burn.example/book/index.html#fusion-decorator" in index


# -- zh_text --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "joined"),
    [
        ("合在一起、\n出了错", "合在一起、出了错"),
        ("算出来？\n  算在哪", "算出来？算在哪"),
        ("PyTorch\n和 burn", "PyTorch\n和 burn"),  # Latin on one side: the break stays a space
        ("张量\nTensor", "张量\nTensor"),
        ("第一行\n\n第二段", "第一行\n\n第二段"),  # only single breaks between two CJK characters
    ],
)
def test_join_cjk_lines(text, joined):
    from capture.sphinxext.site.zh_text import join_cjk_lines

    assert join_cjk_lines(text) == joined


def test_zh_text_joins_paragraph_lines_but_not_code(tmp_path):
    page = "# 页\n\n第一行的结尾\n**第二行**的开头\n和第三行。\n\n```text\n代码\n不变\n```\n"
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.zh_text"], "", {"index.md": page})
    assert rc == 0, log
    html = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "第一行的结尾<strong>第二行</strong>的开头和第三行。" in html
    assert "代码\n不变" in html


# -- rust_api -------------------------------------------------------------------------------


def test_sphinx_rust_pages_are_not_reread_when_nothing_changed(tmp_path):
    pytest.importorskip("sphinx_rust")
    crate = tmp_path / "crate"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n\n[lib]\npath = "src/lib.rs"\n')
    (crate / "src" / "lib.rs").write_text("//! 演示。\n\n/// 加一。\npub fn inc(x: u32) -> u32 {\n    x + 1\n}\n")
    conf = f'rust_crates = [{str(crate)!r}]\nrust_doc_formats = {{"demo": "markdown"}}\n'
    pages = {"index.md": "# API\n\n```{toctree}\napi/crates/demo/index\n```\n"}
    exts = ["sphinx_rust", "capture.sphinxext.site.rust_api"]
    rc, log = build(tmp_path / "src", tmp_path / "out", exts, conf, pages)
    assert rc == 0, log
    rc, log = build(tmp_path / "src", tmp_path / "out", exts, conf)
    assert rc == 0, log
    assert "0 added, 0 changed, 0 removed" in log
    (crate / "src" / "lib.rs").write_text("//! 演示。\n\n/// 加一（改过）。\npub fn inc(x: u32) -> u32 {\n    x + 1\n}\n")
    rc, log = build(tmp_path / "src", tmp_path / "out", exts, conf)
    assert rc == 0, log
    assert "加一（改过）" in (tmp_path / "out" / "api" / "crates" / "demo" / "functions" / "demo::inc.html").read_text()


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("显存不够：256 GiB 的张量", "显存不够：256\u00a0GiB 的张量"),
        ("快 3 倍，用了 4 核和 12 ms", "快 3\u00a0倍，用了 4\u00a0核和 12\u00a0ms"),
        ("3 steps, 2 samples", "3 steps, 2 samples"),  # not units
    ],
)
def test_a_number_keeps_its_unit(text, kept):
    from capture.sphinxext.site.zh_text import keep_units

    assert keep_units(text) == kept


# -- fences ---------------------------------------------------------------------------------

SPILL = """\
# 动脑筋

::::::{admonition} 动脑筋
:class: puzzle

题目。

::::{dropdown} 动脑筋答案
::::{per-platform} gpu
答案的一部分。
::::
答案的其余部分。
::::
::::::
"""


def test_an_inner_fence_as_long_as_its_directives_is_found():
    from capture.sphinxext.site.fences import problems

    found = problems(SPILL)
    assert [(inner, outer) for inner, outer, _ in found] == [(9, 8)]
    assert "make the outer fence longer than 4 (e.g. :::::{dropdown})" in found[0][2]
    assert problems(SPILL.replace("::::{dropdown}", ":::::{dropdown}").replace("::::\n::::::", ":::::\n::::::")) == []


def test_fences_inside_code_blocks_are_text():
    from capture.sphinxext.site.fences import problems

    text = "````md\n::::{dropdown} x\n::::{per-platform} gpu\n::::\n::::\n````\n\n```{snippet} a.py#r\n```\n"
    assert problems(text) == []


def test_a_directive_closed_by_an_inner_fence_fails_the_strict_build(tmp_path):
    rc, log = build(tmp_path / "src", tmp_path / "out", ["sphinx_design", "capture.sphinxext.site.fences"],
                    'myst_enable_extensions = ["colon_fence"]\n', {"index.md": SPILL.replace("::::{per-platform} gpu", "::::{note}")})
    assert rc != 0
    assert "index.md:9" in log and "{note} opens with :::: inside {dropdown} (line 8" in log


def test_the_books_pages_have_no_spilling_fence():
    from capture.sphinxext.site.fences import problems
    from site_helpers import DOCS

    found = {str(p.relative_to(DOCS)): problems(p.read_text(encoding="utf-8"))
             for p in DOCS.rglob("*.md") if "node_modules" not in p.parts and "_build" not in p.parts}
    assert not {k: v for k, v in found.items() if v}


# -- glossary: the terms file ---------------------------------------------------------------------------

TERMS = """\
[[term]]
zh = "延迟执行"
en = "deferred execution"
at = "p-lazy"
says = "调用时只记下来。"
avoid = ["惰性执行", "re:懒(?:执行|加载)"]

[[term]]
zh = "算子"
en = "op"
at = "p-nowhere"
says = "一次操作。"
"""


def test_the_terms_file_makes_the_glossary_and_warns_about_avoided_words(tmp_path):
    conf = 'book_terms = "terms.toml"\nbook_scope_pages = ["index"]\n'
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "terms.toml").write_text(TERMS, encoding="utf-8")
    pages = {"index.md": "# 首页\n\n(p-lazy)=\n## 延迟执行\n\n这叫惰性执行，也叫懒加载；代码里的 `惰性执行` 不算。\n\n"
                         "```{toctree}\nglossary\n```\n",
             "glossary.md": "# 术语表\n\n```{glossary-table}\n```\n"}
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.glossary"], conf, pages)
    assert rc != 0
    assert "index.md:6" in log and "«惰性执行» is not a word this book uses" in log and "«懒加载»" in log
    assert log.count("is not a word this book uses") == 2  # the code span is left out
    assert "term '算子': at = 'p-nowhere' is not a label" in log
    table = (tmp_path / "out" / "glossary.html").read_text(encoding="utf-8")
    assert "<strong>延迟执行</strong>" in table and 'lang="en"' in table and 'href="index.html#p-lazy"' in table


def test_a_term_must_appear_where_it_is_introduced(tmp_path):
    conf = 'book_terms = "terms.toml"\n'
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "terms.toml").write_text(TERMS.split("[[term]]\nzh = \"算子\"")[0].replace('avoid = ["惰性执行", "re:懒(?:执行|加载)"]\n', ""),
                                                 encoding="utf-8")
    pages = {"index.md": "# 首页\n\n(p-lazy)=\n## 别的话题\n\n这里不提那个词。\n"}
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.glossary"], conf, pages)
    assert rc != 0 and "term '延迟执行' does not appear on 'index'" in log


# -- evidence: a section's one fold ------------------------------------------------------------------

FOLD_CONF = 'import os\nmyst_enable_extensions = ["colon_fence"]\nhtml_search_scorer = os.path.join(os.path.dirname(__file__), "scorer.js")\n'
FOLD_PAGE = """\
# Page

## Point

The point first, in the reading path.

:::{evidence} Summaryword
Foldedword is evidence, one click away.
:::
"""


def fold_build(tmp_path, page: str):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "scorer.js").write_text("")
    return build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.evidence", "capture.sphinxext.site.search"],
                 FOLD_CONF, {"index.md": page})


def test_evidence_is_one_closed_fold_searched_without_its_summary(tmp_path):
    import json

    rc, log = fold_build(tmp_path, FOLD_PAGE)
    assert rc == 0, log
    html = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert '<details class="book-fold"><summary class="book-no-search">Summaryword</summary>' in html
    assert "<details class=\"book-fold\" open" not in html
    text = (tmp_path / "out" / "searchindex.js").read_text(encoding="utf-8")
    terms = json.loads(text[text.index("(") + 1: text.rindex(")")])["terms"]
    assert "foldedword" in terms, "the fold's content must stay searchable"
    assert "summaryword" not in terms, "the fold's summary line is not the page's text"


def test_a_second_fold_in_one_section_is_a_located_warning(tmp_path):
    rc, log = fold_build(tmp_path, FOLD_PAGE + "\n:::{evidence}\nMore.\n:::\n")
    assert rc != 0
    assert "index.md:11: WARNING: a second {evidence} fold in this section (the first is at line 7)" in log


def test_a_fold_names_what_it_holds():
    from docutils import nodes

    from capture.sphinxext.site.evidence import fold_label

    def box(*classes):
        return nodes.container(classes=list(classes))

    tabs = box("sd-tab-set", "book-platform-tabs")
    tabs += box("book-output-wrapper", "book-output")
    assert fold_label([tabs, box("book-records-table"), box("book-claim")]) == "各台机器的输出、表和核对"
    assert fold_label([box("book-output-wrapper", "book-output")]) == "输出"
    assert fold_label([box("book-claim")]) == "核对"
    assert fold_label([nodes.paragraph("", "text")]) == "更多"


def test_one_fold_per_machine_tab_is_not_a_second_fold(tmp_path):
    """A fold in each machine's tab (a {per-platform} block renders its content once per machine) is one fold each."""
    page = FOLD_PAGE + "\n## Tabs\n\n::::{tab-set}\n:::{tab-item} A\nx\n\n```{evidence}\nIn A.\n```\n:::\n" \
                       ":::{tab-item} B\ny\n\n```{evidence}\nIn B.\n```\n:::\n::::\n"
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "scorer.js").write_text("")
    rc, log = build(tmp_path / "src", tmp_path / "out", ["sphinx_design", "capture.sphinxext.site.evidence",
                                                          "capture.sphinxext.site.search"], FOLD_CONF, {"index.md": page})
    assert rc == 0, log


VARIANTS = """\
[[term]]
zh = "即时执行"
en = "eager execution"
at = "p-eager"
says = "调用时就执行。"
variants = ["eager"]
"""


@pytest.mark.parametrize("pending", [False, True])
def test_one_term_per_idea_a_variant_only_in_parentheses_after_the_term(tmp_path, pending):
    conf = 'book_terms = "terms.toml"\nbook_scope_pages = ["index"]\n' + ('book_words_pending = ["index"]\n' if pending else "")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "terms.toml").write_text(VARIANTS, encoding="utf-8")
    pages = {"index.md": "# 首页\n\n(p-eager)=\n## 即时执行\n\n即时执行（eager）：别处这样叫它。代码 `eager` 不算，eagerly 也不算。\n\n"
                         "这一句又写 eager，是同一个意思的第二个名字。\n"}
    rc, log = build(tmp_path / "src", tmp_path / "out", ["capture.sphinxext.site.glossary"], conf, pages)
    assert log.count("is another name for «即时执行»") == 1, log  # the parenthesis, the code span, eagerly: not findings
    assert "index.md:8" in log and "write «即时执行»" in log
    if pending:  # a page being rewritten: reported in the log, the build passes
        assert rc == 0 and "words pending (index)" in log and "index has 1 finding(s)" in log, log
    else:
        assert rc != 0 and "WARNING: «eager» is another name" in log, log
