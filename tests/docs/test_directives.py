"""A strict Sphinx build of a throwaway book that uses every capture directive (real Sphinx, real fragments)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.book import run, write

REPO = Path(__file__).resolve().parents[2]

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
book_platforms = ["linux-x86_64-cpu"]
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

返回约 {num}`median(measure@cpu:t.returned)`，同步后 {num}`range(measure@cpu:t.synced)`，
相差 {num}`median(measure@cpu:t.synced) / median(measure@cpu:t.returned) | ratio`。

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


def test_every_directive_builds_strictly(site, tmp_path):
    code, err, out = build(site.root, tmp_path)
    assert code == 0, err
    raw = (out / "index.html").read_text()
    html = text_of(raw)
    assert "dev, scale = sys.argv[1]" in html  # snippet region
    assert "ANCHOR" not in html
    assert "cpu run 0: returned after" in html and "cpu run 1:" not in html and "..." in html  # :lines: + elision
    assert "Linux x86_64 纯 CPU" in html and "设备 cpu" in html  # provenance caption
    assert "4 µs" in html  # median of 2, 4, 6 µs
    assert "2–6 ms" in html  # range
    assert "1000 倍" in html
    assert "✓ 数据核对" in html
    assert "本平台未测" in html  # the gpu row on a CPU-only book
    assert "立即返回 4 µs" in html  # chart branch and label from records
    assert (out / "_fragments/linux-x86_64-cpu/measure@cpu.json").is_file()
    assert (out / "_code/snippets/measure.py.txt").is_file()


def test_table_cell_without_record_says_not_captured(site, tmp_path):
    page = site.root / "docs/index.md"
    page.write_text(page.read_text().replace("你好 = hello@gpu", "你好 = hello@cpu"))
    code, err, out = build(site.root, tmp_path)
    # hello@cpu has no t.returned record: the cell stays, says so, and the build warns
    assert code != 0 and "no such record" in err
    assert "本平台未测" in (out / "index.html").read_text()


def test_flipping_one_record_fails_the_right_claim(site, tmp_path):
    frag = site.fragments / "linux-x86_64-cpu/measure@cpu.json"
    meta = json.loads(frag.read_text())
    for r in meta["records"]:
        if r["name"] == "t.synced":
            r["value"] = 1e-9
    frag.write_text(json.dumps(meta))
    code, err, out = build(site.root, tmp_path)
    assert code != 0
    assert "index.md:" in err and "claim not supported by the data: median(measure@cpu:t.synced) > 100" in err
    assert "这句话没有得到数据支持" in (out / "index.html").read_text()


@pytest.mark.parametrize(
    "directive, expected",
    [
        ("```{snippet} snippets/nope.py#body\n```", "snippet file snippets/nope.py not found (page index, line 3)"),
        ("```{snippet} snippets/measure.py#nope\n```", "no region 'nope' (regions in this file: body) (page index, line 3)"),
        ("```{output} measure@gpu\n```", "measure has no role 'gpu'"),
        ("```{output} hello@gpu\n:platform: linux-x86_64-cpu\n```", None),  # not applicable: notice, no warning
        ("```{output} sleeper@cpu\n```", "sleeper@cpu is missing (never captured on any listed platform); regenerate it with: nox -s regenerate -- --only sleeper --device cpu"),
        ("```python\nprint('typed by hand')\n```", "code block not drawn from a real file"),
    ],
)
def test_errors_name_page_line_and_fix(site, tmp_path, directive, expected):
    (site.root / "docs/index.md").write_text(f"# 页\n\n{directive}\n")
    code, err, out = build(site.root, tmp_path)
    if expected is None:
        assert code == 0, err
        assert "本平台未测" in (out / "index.html").read_text()
    else:
        assert code != 0
        assert "index.md:3" in err and expected in err, err


def test_stale_fragment_shows_notice_and_warns_with_command(site, tmp_path):
    (site.root / "snippets/measure.py").write_text((site.root / "snippets/measure.py").read_text() + "\n# changed\n")
    code, err, out = build(site.root, tmp_path)
    assert code != 0
    assert "measure@cpu on linux-x86_64-cpu is stale" in err and "nox -s regenerate -- --only measure --device cpu" in err
    assert "此输出已过期" in (out / "index.html").read_text()
