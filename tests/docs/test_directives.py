"""A strict Sphinx build of a throwaway book that uses every capture directive (real Sphinx, real fragments)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.dom import parse
from tests.engine.book import run, write

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # every build here captures a torch-framework experiment (imports torch)

MEASURE = '''\
import sys
import bookrec
# ANCHOR: body
dev, scale = sys.argv[1], float(sys.argv[2])
for i in range(3):
    bookrec.record("t.returned", scale * 1e-6 * (i + 1), "s", run=i)
    bookrec.record("t.synced", scale * 1e-3 * (i + 1), "s", run=i)
    print(f"{dev} run {i}: returned after {bookrec.fmt_duration(scale * 1e-6)}")
bookrec.record("returns_early", True, device=dev)
# ANCHOR_END: body
bookrec.record("verdict", "silent", device=dev)
'''

EXTRA = '''
[[experiment]]
id = "measure"
framework = "torch"
script = "snippets/measure.py"
args = ["{device}", "2"]
'''

CONF = f'''
import sys
sys.path.insert(0, {str(REPO)!r})
extensions = ["myst_parser", "sphinx_design", "sphinxcontrib.mermaid", "capture.sphinxext"]
myst_enable_extensions = ["colon_fence"]
book_root = {{root!r}}
book_platforms = []
book_local_platform = "linux-x86_64-cpu"
book_volumes = {{{{}}}}
nitpicky = True
'''

PAGE = '''\
# 测试页

(sec-code)=
## 代码

```{snippet} snippets/measure.py#body
```

```{output} measure@cpu
:lines: 1, 3
```

(sec-numbers)=
## 数字

::::{per-platform} all
返回约 {num}`median(measure@cpu:t.returned)`，同步后 {num}`range(measure@cpu:t.synced)`，
相差 {num}`median(measure@cpu:t.synced) / median(measure@cpu:t.returned) | ratio`。
::::

:::{claim} median(measure@cpu:t.synced) > 100 * median(measure@cpu:t.returned)
同步后的时间远大于返回的时间。
:::

```{records-table} 比较
:rows: 测量 = measure@cpu; 你好 = hello@gpu
:columns: 返回 = median({row}:t.returned); 比 = median({row}:t.synced) / median({row}:t.returned) | ratio
```

```{datachart}
flowchart LR
  a["调用"] --> b{% if holds("first(measure@cpu:returns_early)") %}["立即返回 {{ value("median(measure@cpu:t.returned)") }}"]{% else %}["算完才返回"]{% endif %}
```

:::{verdict-matrix} 结论
:rows: 立即返回 = first(measure@{role}:returns_early)
:roles: cpu
:::

:::{platform-table}
:experiments: measure
:::
'''


def text_of(html: str) -> str:
    import html as h
    import re

    return h.unescape(re.sub(r"<[^>]+>", "", html))


def build(root: Path, tmp: Path):
    out = tmp / "html"
    r = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-n", "--keep-going", "-q", "-b", "html", "-c", str(root), str(root / "docs"), str(out)],
        capture_output=True, text=True,
    )
    return r.returncode, r.stderr, out


@pytest.fixture
def site(book, tmp_path):
    write(book.root / "snippets/measure.py", MEASURE)
    book.manifest.write_text(book.manifest.read_text() + EXTRA)
    run(book, only=["measure", "hello"], roles=["cpu"])
    write(book.root / "conf.py", CONF.format(root=str(book.root)))
    write(book.root / "docs/index.md", PAGE)
    return book


def page(out: Path):
    return parse((out / "index.html").read_text())


def cell(table, header: str, row: int):
    """The text of the cell under `header` in body row `row` of a records table."""
    heads = [th.text().strip() for th in table.find_all("th")]
    rows = [tr for tr in table.find_all("tr") if tr.find_all("td")]
    return rows[row].find_all("td")[heads.index(header)].text().strip()


def test_every_directive_builds_strictly(site, tmp_path):
    code, err, out = build(site.root, tmp_path)
    assert code == 0, err
    doc = page(out)
    html = text_of((out / "index.html").read_text())
    assert "dev, scale = sys.argv[1]" in html  # snippet region
    assert "ANCHOR" not in html
    outputs = doc.find_all("div", "book-output-wrapper")
    assert len(outputs) == 1
    lines = outputs[0].find_all("pre")[0].text().splitlines()
    assert lines == ["cpu run 0: returned after 2.000µs", "...", "cpu run 2: returned after 2.000µs"]  # :lines: + elision
    caption = outputs[0].find_all(cls="caption-text")[0].text()
    assert "PyTorch · cpu" in caption  # the caption: framework and device; the machine is the tab
    more = outputs[0].find_all("details", "book-output-more")[0].text()
    assert "Linux x86_64 纯 CPU" in more and "设备 cpu" in more and "重现：" in more  # one click away
    # each {num} sits in its sentence, tagged with the platform it came from
    para = next(p for p in doc.find_all("p") if "返回约" in p.text())
    nums = para.find_all(cls="book-num")
    nbsp = "\u00a0"  # a number and its unit are joined by a no-break space (capture/evidence/fmt.py)
    assert [n.text() for n in nums] == [f"4{nbsp}µs", f"2–6{nbsp}ms", f"1000{nbsp}倍"]
    assert all("book-plat-linux-x86_64-cpu" in n.classes for n in nums)
    cores = __import__("os").cpu_count()
    assert f"✓ {cores} 核 CPU" in doc.find_all(cls="book-claim-marks")[0].text()  # the machine's short name
    table = doc.find_all("table", "book-records-table")[0]
    assert cell(table, "返回", 0) == f"4{nbsp}µs" and cell(table, "比", 0) == f"1000{nbsp}倍"
    assert cell(table, "机器", 0) == f"{cores} 核 CPU"
    assert "Linux x86_64 纯 CPU" in table.find_all(cls="book-machine")[0].attrs.get("title", "")  # full name: the tooltip
    assert cell(table, "返回", 1) == "本平台未测"  # the gpu row on a CPU-only book
    assert f"立即返回 4{nbsp}µs" in html  # chart branch and label from records
    matrix = doc.find_all("table", "book-verdict-matrix")[0]
    assert cell(matrix, f"{cores} 核 CPU", 0).startswith("是")
    assert doc.find_all("table", "book-platform-table")
    assert (out / "_fragments/linux-x86_64-cpu/measure@cpu.json").is_file()
    assert (out / "_fragments/linux-x86_64-cpu/platform.json").is_file()
    assert (out / "_code/snippets/measure.py.txt").is_file()


def test_num_outside_any_platform_is_an_error_not_a_guess(site, tmp_path):
    (site.root / "docs/index.md").write_text("# 页\n\n返回约 {num}`median(measure@cpu:t.returned)`。\n")
    code, err, out = build(site.root, tmp_path)
    assert code != 0 and "index.md:3" in err and "{num} names no platform" in err
    assert "（未指明平台）" in (out / "index.html").read_text()


def test_num_reads_only_its_platform_and_says_when_not_measured(site, tmp_path):
    (site.root / "docs/index.md").write_text(
        "---\nbook_platform: linux-x86_64-cpu\n---\n# 页\n\n设备上 {num}`median(hello@gpu:hello.elapsed)`。\n")
    code, err, out = build(site.root, tmp_path)
    assert code == 0, err  # a gpu role on a CPU-only machine: a notice, not an error
    assert "（此平台未测）" in (out / "index.html").read_text()


def test_one_named_machine_in_the_reading_path_and_the_others_elsewhere(site, tmp_path):
    """:platform: shows that machine's output, its short name leading the caption (full name in the tooltip);
    :except: leaves those machines out (here the only one: the block and the table's rows disappear)."""
    (site.root / "docs/index.md").write_text(
        "# 页\n\n```{output} measure@cpu\n:platform: linux-x86_64-cpu\n```\n\n"
        "```{output} measure@cpu\n:except: linux-x86_64-cpu\n```\n\n"
        "```{records-table} 别的机器\n:rows: 测量 = measure@cpu\n:columns: 返回 = median({row}:t.returned)\n"
        ":except: linux-x86_64-cpu\n```\n")
    code, err, out = build(site.root, tmp_path)
    assert code == 0, err
    doc = page(out)
    outputs = doc.find_all("div", "book-output-wrapper")
    assert len(outputs) == 1, "the :except: block must show nothing: its only machine is shown above"
    machine = outputs[0].find_all(cls="book-output-machine")[0]
    cores = __import__("os").cpu_count()
    assert machine.text() == f"{cores}\u00a0核 CPU" or machine.text() == f"{cores} 核 CPU", machine.text()
    assert "Linux x86_64 纯 CPU" in machine.attrs.get("title", "")
    assert outputs[0].find_all(cls="caption-text")[0].text().startswith(machine.text() + "：PyTorch · cpu")
    table = doc.find_all("table", "book-records-table")[0]
    assert not [tr for tr in table.find_all("tr") if tr.find_all("td")], "the table kept the machine left out"


def test_table_cell_without_record_says_not_captured(site, tmp_path):
    page_md = site.root / "docs/index.md"
    page_md.write_text(page_md.read_text().replace("你好 = hello@gpu", "你好 = hello@cpu"))
    code, err, out = build(site.root, tmp_path)
    # hello@cpu has no t.returned record: the cell stays, says so, and the build warns
    assert code != 0 and "no such record" in err
    assert cell(page(out).find_all("table", "book-records-table")[0], "返回", 1) == "本平台未测"


def test_flipping_one_record_fails_the_right_claim_and_shows_both_sides(site, tmp_path):
    frag = site.fragments / "linux-x86_64-cpu/measure@cpu.json"
    meta = json.loads(frag.read_text())
    for r in meta["records"]:
        if r["name"] == "t.synced":
            r["value"] = 1e-9
    frag.write_text(json.dumps(meta))
    code, err, out = build(site.root, tmp_path)
    assert code != 0
    assert "index.md:" in err and "claim not supported on linux-x86_64-cpu" in err
    assert "median(measure@cpu:t.synced) = 1e-09 s > 100 * median(measure@cpu:t.returned) = 0.0004 s" in err and ": no" in err
    assert "✗" in page(out).find_all(cls="book-claim-marks")[0].text()


@pytest.mark.parametrize(
    "directive, expected",
    [
        ("```{snippet} snippets/nope.py#body\n```", "snippet file snippets/nope.py not found (page index, line 3)"),
        ("```{snippet} snippets/measure.py#nope\n```", "no region 'nope' (regions in this file: body) (page index, line 3)"),
        ("```{output} measure@gpu\n```", "measure has no role 'gpu'"),
        ("```{output} hello@gpu\n:platform: linux-x86_64-cpu\n```", None),  # not applicable: notice, no warning
        ("```{output} sleeper@cpu\n```", "sleeper@cpu on linux-x86_64-cpu is missing (no captured platform has it); regenerate it with: nox -s regenerate -- --only sleeper --device cpu"),
        ("```{output} measure@cpu\n:platform: ../../etc\n```", "is not a valid platform key"),
        ("```{output} measure@cpu\n:platform: linux-x86_64-cpu\n:except: linux-x86_64-cpu\n```", ":platform: and :except: together"),
        ("```{output} measure@cpu\n:except: linux-x86_64-cpu, ../x\n```", "is not a valid platform key"),
        (":::{claim} median(measure@cpu:t.synced) > 0\n:where: cudaa\nx\n:::", "'cudaa' is not a place a claim can be scoped to"),
        (":::{claim} median(measure@cpu:t.synced >\nx\n:::", "fix the claim in the page"),
        ("```python\nprint('typed by hand')\n```", "code block not drawn from a real file"),
    ],
)
def test_errors_name_page_line_and_fix(site, tmp_path, directive, expected):
    (site.root / "docs/index.md").write_text(f"# 页\n\n{directive}\n")
    code, err, out = build(site.root, tmp_path)
    if expected is None:
        assert code == 0, err
        assert "不运行这一项" in (out / "index.html").read_text()
    else:
        assert code != 0
        assert "index.md:3" in err and expected in err, err


def test_own_stale_fragment_fails_with_the_command(site, tmp_path):
    src = site.root / "snippets/measure.py"
    src.write_text(src.read_text().replace("scale * 1e-6 * (i + 1)", "scale * 2e-6 * (i + 1)"))
    code, err, out = build(site.root, tmp_path)
    assert code != 0
    assert "measure@cpu on linux-x86_64-cpu is stale" in err and "nox -s regenerate -- --only measure --device cpu" in err
    assert "较早的版本" in (out / "index.html").read_text()


def test_comment_and_blank_line_edits_change_nothing(site, tmp_path):
    src = site.root / "snippets/measure.py"
    src.write_text("# a new first comment\n\n" + src.read_text().replace("# ANCHOR: body", "# ANCHOR: body  (edited)") + "\n# trailing\n")
    code, err, out = build(site.root, tmp_path)
    assert code == 0, err


def test_another_machines_stale_fragment_is_shown_with_a_note(site, tmp_path):
    import shutil

    other = site.fragments / "linux-x86_64-nvidia-other"
    shutil.copytree(site.fragments / "linux-x86_64-cpu", other)
    for f in other.glob("*@*.json"):
        meta = json.loads(f.read_text())
        meta["inputs_hash"] = "0000000000000000"
        meta["inputs"]["files"] = {k: "old" for k in meta["inputs"]["files"]}
        f.write_text(json.dumps(meta))
    ident = json.loads((other / "platform.json").read_text())
    ident.update(key="linux-x86_64-nvidia-other", display_name="Other GPU · Linux", route="bundle",
                 bundle={"env": {}, "args": []})
    (other / "platform.json").write_text(json.dumps(ident))
    code, err, out = build(site.root, tmp_path)
    assert code == 0, err  # another machine's stale fragments do not fail this machine's build
    doc = page(out)
    tabs = [t.text().strip() for t in doc.find_all("label", "sd-tab-label")]
    assert any("Other GPU" in t for t in tabs) and any("纯 CPU" in t for t in tabs)
    other = [w for w in doc.find_all("div", "book-output-wrapper") if "book-plat-linux-x86_64-nvidia-other" in w.classes]
    assert other and other[0].find_all(cls="book-stale-mark")  # the caption says 旧; what changed is one click away
    more = other[0].find_all("details", "book-output-more")[0].text()
    assert "Other GPU · Linux" in more and "较早的版本" in more and "bash .device/run.sh --only measure --device cpu" in more
    assert len(doc.find_all(cls="book-stale-mark")) > 1  # figures from it carry the mark
    rows = doc.find_all("table", "book-platform-table")[0].find_all("tr")
    other_row = next(r.text() for r in rows if "Other GPU" in r.text())
    assert "还没有重跑的数标着（旧）" in other_row  # the machine table says once what （旧） means
    assert not any("（旧）" in r.text() for r in rows if "纯 CPU" in r.text())  # not on the fresh machine's row
    assert not any("（2 核 CPU）" in r.text() or "核 CPU）" in r.text() for r in rows)  # no short name repeating the full one


def test_verdict_matrix_shows_recorded_words_through_its_labels(site, tmp_path):
    page_text = PAGE + '''
:::{verdict-matrix} 复现了吗
:rows: `copy()` 的副本共享 = first(measure@{role}:verdict)
:roles: cpu
:labels: silent = 复现（不报错）; correct = 未复现
:::
'''
    (site.root / "docs/index.md").write_text(page_text)
    code, err, out = build(site.root, tmp_path)
    assert code == 0, err
    matrix = page(out).find_all("table", "book-verdict-matrix")[1]
    cells = matrix.find_all("td")
    assert [td.text().strip() for td in cells][1].startswith("复现（不报错）")
    # the question is inline markup: `copy()` is code, not backticks
    assert cells[0].find_all("code") and "`" not in cells[0].text()
    # a word the labels do not name is a build warning that names the page and the word
    (site.root / "docs/index.md").write_text(page_text.replace("silent = 复现（不报错）; ", ""))
    code, err, _ = build(site.root, tmp_path / "again")
    assert code != 0 and "gives 'silent'" in err and "labels: correct" in err and "index.md" in err


def test_per_platform_captured_keeps_only_the_platforms_holding_the_fragment(site, tmp_path):
    (site.root / "docs/index.md").write_text(
        "# 页\n\n::::{per-platform} all\n:captured: measure@cpu\n有数据 {num}`median(measure@cpu:t.returned)`。\n::::\n\n"
        "::::{per-platform} all\n:captured: hello@gpu\n没有数据的机器不显示这一段。\n::::\n")
    code, err, out = build(site.root, tmp_path)
    text = text_of((out / "index.html").read_text())
    assert code == 0, err
    assert "有数据 4 µs" in text.replace("\xa0", " ")
    assert "没有数据的机器不显示这一段" not in text


def test_per_platform_captured_names_an_unknown_experiment(site, tmp_path):
    (site.root / "docs/index.md").write_text("# 页\n\n::::{per-platform} all\n:captured: nosuch@cpu\n文字。\n::::\n")
    code, err, _ = build(site.root, tmp_path)
    assert code != 0 and "index.md:3" in err and "per-platform" in err and "nosuch" in err, err


UNDECIDED = "median(measure@cpu:t.synced) > 600 * median(measure@cpu:t.returned)"  # 1000x, spreads 2-6 ms and 2-6 µs


def test_cannot_tell_is_shown_as_such_and_does_not_fail_the_build(site, tmp_path):
    (site.root / "docs/index.md").write_text(f"""# 页

:::{{claim}} {UNDECIDED}
同步后的时间是返回时的六百倍以上。
:::

:::{{verdict-matrix}} 结论
:rows: 六百倍以上 = {UNDECIDED.replace("@cpu", "@{role}")}
:roles: cpu
:::

```{{datachart}}
flowchart LR
  a["调用"] --> b["{{% if holds('{UNDECIDED}') %}}是{{% elif fails('{UNDECIDED}') %}}否{{% else %}}说不清{{% endif %}}"]
```
""")
    code, err, out = build(site.root, tmp_path)
    assert code == 0, err
    doc = page(out)
    mark = doc.find_all(cls="book-claim-undecided")[0]
    assert "说不清" in mark.text() and "依据" in mark.text()  # the reasons one click away (a details box)
    assert doc.find_all("table", "book-verdict-matrix")[0].find_all("td")[1].text().strip().startswith("说不清")
    assert "这台机器的数据说不清" in doc.find_all(cls="book-chart-caption")[0].text()
    assert len(doc.find_all(cls="book-chart-caption")) == 1  # the caption once (issue 28: it was printed twice)
    # a chart that prints no figure does not promise numbers (issue 42)
    assert "图中的分支来自" in doc.find_all(cls="book-chart-caption")[0].text()


def test_until_captured_and_the_awaiting_notice(site, tmp_path):
    site.manifest.write_text(site.manifest.read_text() + '''
[[experiment]]
id = "maconly"
framework = "torch"
script = "snippets/measure.py"
args = ["{device}", "1"]
platforms = ["macos"]
''')
    (site.root / "docs/index.md").write_text("""# 页

::::{until-captured} macos
Mac 的记录到来之前，这一段在。
::::

::::{until-captured} linux
这台 Linux 已经捕获过，这一段不该出现。
::::

```{output} maconly@cpu
```
""")
    code, err, out = build(site.root, tmp_path)
    assert code == 0, err
    text = text_of((out / "index.html").read_text())
    assert "Mac 的记录到来之前" in text and "不该出现" not in text
    assert "等 Mac 捕获" in text and "nox -s regenerate -- --only maconly --device cpu" in text


def test_unlike_comparisons_warn_unless_declared(site, tmp_path):
    site.manifest.write_text(site.manifest.read_text() + '''
[[experiment]]
id = "measure-warm"
framework = "torch"
script = "snippets/measure.py"
args = ["{device}", "2"]
caches = "warm"
''')
    run(site, only=["measure-warm"], roles=["cpu"])
    body = "::::{per-platform} all\n比 {num}`median(measure@cpu:t.synced) / median(measure-warm@cpu:t.synced) | ratio%s`。\n::::\n"
    (site.root / "docs/index.md").write_text("# 页\n\n" + body % "")
    code, err, _ = build(site.root, tmp_path)
    assert code != 0 and "compares unlike things" in err and "differ in caches: default vs warm" in err and "index.md" in err
    (site.root / "docs/index.md").write_text("# 页\n\n" + body % ", differs=caches")
    code, err, _ = build(site.root, tmp_path / "declared")
    assert code == 0, err


def test_machine_specific_sentences_must_be_scoped_or_listed(site, tmp_path):
    conf = site.root / "conf.py"
    conf.write_text(conf.read_text() + 'book_scope_allow = "scope-allow.toml"\nbook_scope_pages = ["index"]\n')
    page_md = site.root / "docs/index.md"
    page_md.write_text("# 页\n\n这是一句普通的话。CUDA 上调用先返回。\n\n::::{per-platform} all\nCUDA 在这里可以提。\n::::\n")
    code, err, _ = build(site.root, tmp_path)
    assert code != 0 and "index.md:3" in err and "sentence names CUDA" in err and "CUDA 在这里" not in err
    allow = site.root / "scope-allow.toml"
    allow.write_text('[[allow]]\npage = "index"\ntext = "CUDA 上调用先返回"\nwhy = "测试用的一条"\n')
    code, err, _ = build(site.root, tmp_path / "listed")
    assert code == 0, err
    allow.write_text(allow.read_text() + '\n[[allow]]\npage = "index"\ntext = "早就删掉的一句"\nwhy = "过时"\n')
    code, err, _ = build(site.root, tmp_path / "stale-entry")
    assert code != 0 and "matches no sentence any more" in err


CMP_PAGE = """# 页

::::{per-platform} all
快：{cmp}`median(measure@cpu:t.returned) vs median(measure@cpu:t.synced) | a=返回, b=同步`。
慢：{cmp}`median(measure@cpu:t.synced) vs median(measure@cpu:t.returned) | a=sync, b=return`。
百分比：{cmp}`median(measure@cpu:t.returned) vs 8 * median(measure@cpu:t.returned) | a=一次, b=八次`。
说不清：{cmp}`measure@cpu:t.returned{run=0} vs measure@cpu:t.returned{run=1} | a=第一次, b=第二次`。
个数：{cmp}`count(measure@cpu:t.returned) vs count(measure@cpu:t.synced) | a=返回, b=同步, kind=count`。
重叠：{cmp}`median(measure@cpu:t.returned) vs measure@cpu:t.returned{run=1} | a=中位, b=第二次`。
::::
"""


def test_cmp_says_direction_and_size_from_the_verdict_engine(site, tmp_path):
    (site.root / "docs/index.md").write_text(CMP_PAGE)
    code, err, out = build(site.root, tmp_path)
    assert code == 0, err
    doc = page(out)
    clauses = [c.text().replace("\xa0", " ") for c in doc.find_all(cls="book-cmp")]
    # returned 2-6 µs against synced 2-6 ms: decided; under 10% the ratio is said the other way round
    assert clauses[0] == "返回比同步快，同步的用时是返回的 1000 倍", clauses
    assert clauses[1] == "sync 比 return 慢，用时是 return 的 1000 倍", clauses
    assert clauses[2] == "一次比八次快，用时是八次的 12%", clauses  # 1/8, two significant digits
    # 2 µs against 4 µs: without a drift table two timings need more than 2x between them, so the engine cannot
    # tell; one record each, so this capture does order them, and the words say that and why it stays open
    assert clauses[3] == "这次第一次比第二次快，但差距没有超出前后几次运行之间的波动（说不清）", clauses
    assert clauses[4] == "返回和同步一样多", clauses  # exact values: equal is a verdict too
    # 2-6 µs (three runs) against 4 µs: the repeats themselves overlap, so no order is named
    assert clauses[5] == "分不出中位和第二次哪个快（说不清）", clauses
    undecided = doc.find_all(cls="book-cmp")[3]
    assert "说不清" in undecided.attrs.get("title", "") and "依据" in undecided.attrs.get("title", "")
    # the size is a figure from the records: a link to the fragment, like {num}
    assert doc.find_all(cls="book-cmp")[0].find_all("a", "book-num")


def test_cmp_follows_the_records_when_they_flip(site, tmp_path):
    frag = site.fragments / "linux-x86_64-cpu/measure@cpu.json"
    meta = json.loads(frag.read_text())
    for r in meta["records"]:
        if r["name"] == "t.synced":
            r["value"] = r["value"] * 1e-6  # synced now 1000x shorter than returned
    frag.write_text(json.dumps(meta))
    (site.root / "docs/index.md").write_text(CMP_PAGE)
    code, err, out = build(site.root, tmp_path)
    assert code == 0, err
    first = page(out).find_all(cls="book-cmp")[0].text().replace("\xa0", " ")
    assert first == "返回比同步慢，用时是同步的 1000 倍"


@pytest.mark.parametrize(
    "role, expected",
    [
        ("{cmp}`median(measure@cpu:t.returned) vs median(measure@cpu:t.synced) | a=x, b=y`", "{cmp} names no platform"),
        ("::::{per-platform} all\n{cmp}`median(measure@cpu:t.returned) median(measure@cpu:t.synced) | a=x, b=y`\n::::",
         "separated by ' vs '"),
        ("::::{per-platform} all\n{cmp}`median(measure@cpu:t.returned) vs median(measure@cpu:t.synced) | a=x`\n::::",
         "name side b"),
        ("::::{per-platform} all\n{cmp}`median(measure@cpu:t.nope) vs median(measure@cpu:t.synced) | a=x, b=y`\n::::",
         "no such record"),
    ],
)
def test_cmp_mistakes_fail_the_strict_build(site, tmp_path, role, expected):
    (site.root / "docs/index.md").write_text(f"# 页\n\n{role}\n")
    code, err, _ = build(site.root, tmp_path)
    assert code != 0 and "index.md" in err and expected in err, err


def build_log(root: Path, tmp: Path):
    """A strict build that keeps the info lines (the pending pages' findings are printed there)."""
    r = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-n", "--keep-going", "-b", "html", "-c", str(root), str(root / "docs"),
         str(tmp / "html")], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def reader_page(site, body: str, pending: bool = False) -> None:
    conf = site.root / "conf.py"
    conf.write_text(CONF.format(root=str(site.root)) + 'book_scope_pages = ["index"]\n'
                    + ('book_words_pending = ["index"]\n' if pending else ""))
    (site.root / "docs/index.md").write_text(f"# 页\n\n::::{{per-platform}} all\n{body}\n::::\n")


RETURNED, SYNCED = "{num}`median(measure@cpu:t.returned)`", "{num}`median(measure@cpu:t.synced)`"


@pytest.mark.parametrize("sentence", [
    f"同步用了 {SYNCED}，比返回的 {RETURNED} 还长。",
    f"返回只要 {RETURNED}，同步要 {SYNCED}，慢了三个数量级。",
    f"返回 {RETURNED} 不到同步 {SYNCED} 的一半。",
])
def test_a_hand_written_comparison_beside_two_measured_figures_fails(site, tmp_path, sentence):
    reader_page(site, sentence)
    code, err, _ = build(site.root, tmp_path)
    assert code != 0 and "index.md" in err and "hand-written comparison" in err and "{cmp}" in err, err


def test_comparisons_from_cmp_and_single_figures_pass(site, tmp_path):
    reader_page(site, f"返回用了 {RETURNED}，同步用了 {SYNCED}：{{cmp}}`median(measure@cpu:t.returned) vs "
                      f"median(measure@cpu:t.synced) | a=返回, b=同步`。\n\n同步比返回慢，要 {SYNCED}。")
    code, err, _ = build(site.root, tmp_path)
    assert code == 0, err  # words inside {cmp} come from the records; one figure is not a comparison of two


def test_a_pending_page_only_reports_in_the_log(site, tmp_path):
    reader_page(site, f"同步用了 {SYNCED}，比返回的 {RETURNED} 还长。", pending=True)
    code, log = build_log(site.root, tmp_path)
    assert code == 0, log
    assert "words pending (index): hand-written comparison «比返回的" in log
    assert "index has 1 finding(s)" in log


def test_a_claim_that_the_data_cannot_tell_must_not_assert_on_a_reader_page(site, tmp_path):
    reader_page(site, f":::{{claim}} {UNDECIDED}\n:where: cpu\n同步后的时间是返回时的六百倍以上。\n:::")
    code, err, _ = build(site.root, tmp_path)
    assert code != 0 and "index.md" in err and "claim asserts what the data cannot tell on linux-x86_64-cpu" in err, err
    reader_page(site, f":::{{claim}} {UNDECIDED}\n:where: cpu\n同步后的时间是返回时的六百倍以上。\n:::", pending=True)
    code, log = build_log(site.root, tmp_path / "pending")
    assert code == 0 and "words pending (index): claim asserts what the data cannot tell" in log, log
    # what the data decide may be asserted
    reader_page(site, ":::{claim} median(measure@cpu:t.synced) > 100 * median(measure@cpu:t.returned)\n"
                      ":where: cpu\n同步后的时间是返回时的一百倍以上。\n:::")
    code, err, _ = build(site.root, tmp_path / "decided")
    assert code == 0, err


def test_a_table_cell_and_the_claims_evidence_round_one_value_alike(site, tmp_path):
    frag = site.fragments / "linux-x86_64-cpu/measure@cpu.json"
    meta = json.loads(frag.read_text())
    for r in meta["records"]:
        if r["name"] == "t.returned":
            r["value"] = 0.00023949  # 239.49 µs: rounded to 4 digits first it became 240 µs
    frag.write_text(json.dumps(meta))
    (site.root / "docs/index.md").write_text("""# 页

```{records-table} 比较
:rows: 测量 = measure@cpu
:columns: 返回 = median({row}:t.returned)
```

:::{claim} median(measure@cpu:t.returned) < 0.5 * median(measure@cpu:t.synced)
返回得早。
:::
""")
    code, err, out = build(site.root, tmp_path)
    assert code == 0, err
    doc = page(out)
    shown = cell(doc.find_all("table", "book-records-table")[0], "返回", 0)
    evidence = doc.find_all(cls="book-claim-marks")[0].text()
    assert shown == "239\u00a0µs" and shown in evidence and "240" not in evidence, evidence


def test_evidence_speaks_the_readers_language(site, tmp_path):
    conf = site.root / "conf.py"
    conf.write_text(CONF.format(root=str(site.root)) + 'book_recorded_words = {"silent": "静默算错"}\n')
    (site.root / "docs/index.md").write_text("""# 页

::::{per-platform} all
在这台机器上，返回要 {num}`median(measure@cpu:t.returned)`，这一次的结论是 {num}`measure@cpu:verdict`。
::::

:::{claim} not (median(measure@cpu:t.synced) < 0.25 * median(measure@cpu:t.returned))
同步后的时间不比返回的短。
:::

```{output} sleeper@cpu
```
""")
    code, err, out = build(site.root, tmp_path)
    doc = page(out)
    head = doc.find_all(cls="book-platform-note")[0].text()
    assert "在" in head and "上，返回要" in head and "这台机器" not in head  # the machine said once, not twice
    note = doc.find_all(cls="book-platform-note")[0]
    assert "静默算错" in note.text() and "silent" not in note.text()  # a recorded word in the reader's words
    assert any("程序记下的是「silent」" in (a.attrs.get("title") or "") for a in note.find_all("a"))
    tip = note.find_all("a", "book-num")[0].attrs.get("title", "")
    assert "设备" not in tip and "跑在 CPU 上" in tip, tip
    marks = doc.find_all(cls="book-claim-marks")[0].text()
    assert "（cpu" not in marks and "已乘" not in marks and "反面" not in marks and "？" not in marks, marks
    assert "超过" in marks and "的四分之一" in marks, marks
    # a missing fragment's command is in 「来历」, behind a closed fold, not in the reading path
    box = doc.find_all(cls="book-notice")[0]
    fold = box.find_all("details", "book-output-more")[0]
    assert "nox -s regenerate" in fold.text() and "nox" not in box.text().replace(fold.text(), "")
    assert "open" not in fold.attrs


def test_a_claim_that_holds_only_because_the_step_was_skipped_is_not_marked_as_supported(site, tmp_path):
    frag = site.fragments / "linux-x86_64-cpu/measure@cpu.json"
    meta = json.loads(frag.read_text())
    for r in meta["records"]:
        if r["name"] == "verdict":
            r["value"] = "skipped"
    frag.write_text(json.dumps(meta))
    (site.root / "docs/index.md").write_text("""# 页

:::{claim} measure@cpu:verdict == "skipped" or measure@cpu:verdict == "silent"
这一步静默算错。
:::
""")
    code, err, out = build(site.root, tmp_path)
    assert code == 0, err
    marks = page(out).find_all(cls="book-claim-marks")[0].text()
    assert "跳过了这一步" in marks and "✓" not in marks and "数据支持" not in marks, marks


def test_a_one_machine_block_names_the_machine_once_in_its_own_sentence(site, tmp_path):
    (site.root / "docs/index.md").write_text("""# 页

::::{per-platform} all
这台机器的 CPU 上，返回要 {num}`median(measure@cpu:t.returned)`。
::::
""")
    code, err, out = build(site.root, tmp_path)
    assert code == 0, err
    note = page(out).find_all(cls="book-platform-note")[0].text()
    assert "那台机器的 CPU 上，返回要" in note and "这台机器" not in note and "上：" not in note, note
