"""The local site with the reader's machine (BOOK_YOURS=1, capture/machines/yours.py): the real pages, built
from a copy of the book (with -n) with a reader's platform under .capture/yours/<key>/, written through the store the way
`nox -s yours` writes it on this host (its fingerprint, its key).

The reader's machine is the book's CPU box as this host would have captured it, with four changes a real reader's
machine can bring: PyTorch's call returns before the work is done (a claim that does not hold there, a verdict-matrix
row and a finding that differ from the book), one fragment from an older version of the code (stale), one whose
publish was cut between its two renames (torn), and one Rust experiment skipped for want of cargo. Then:

- every chapter offers 「你的机器」 beside the book's machines: output tabs, records tables, the verdict matrix, the
  per-platform prose with its {cmp}, the claims' marks; the skipped experiment says why;
- the page 「你的机器和本书的机器」 lists the findings with the reader's answers, the differing ones first, linked to
  their sections; a headless Chromium reads that page and a {cmp} in the reader's tab of a chapter;
- the reader's machine adds no build warning, and nothing under docs/_fragments changes.
On the book's own CPU box this host is that platform: the same build shows it as 「你的机器」 and the page says so.
"""

from __future__ import annotations

import copy
import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from site_helpers import ROOT

from capture.machines import yours
from capture.machines.identity import of_machine, write as write_identity
from capture.machines.platform import detect, machine_record
from capture.storage import atomic
from capture.storage.paths import Layout
from capture.storage.store import Store

sys.path.insert(0, str(ROOT))
from tests.docs.dom import parse  # noqa: E402

CPU = "linux-x86_64-cpu"
SKIPPED = "burn-oob@cpu"
STALE = "torch-drop@cpu"
TORN = "torch-oob@cpu"
HALF = "HALF-WRITTEN-BY-AN-INTERRUPTED-CAPTURE"
NO_CARGO = ("needs cargo to build its Rust program (crate exec-gpu); none on PATH here: install Rust with rustup "
            "(https://rustup.rs) and run the command again")


def tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def make_reader(root: Path) -> yours.Reader:
    """The reader's platform, as `nox -s yours` on this host writes it (see the module's docstring)."""
    layout = Layout(root)
    me = yours.find(layout, yours.here())
    if me.book_platform:
        return me
    here = detect()
    machine = machine_record(here)
    store = Store(me.root)
    src = Store(layout.fragments)
    for key in src.keys(CPU):
        frag = src.read(CPU, key)
        if key == SKIPPED:
            store.write_skip(me.key, key, NO_CARGO)
            continue
        meta = copy.deepcopy({k: v for k, v in frag.meta.items() if k not in ("schema", "text_sha256")})
        meta.update(platform=me.key, machine=machine, host=yours.here())
        if key == "torch-ret@cpu":  # here the call returns at once: the work is left to the sync
            for rec in meta["records"]:
                if rec["name"] == "ret.returned":
                    rec["value"] = rec["value"] / 100
        if key == STALE:
            meta["inputs_hash"] = "0" * 64  # captured by an older checkout
        store.write(me.key, key, frag.text, meta)
        if key == TORN:  # a publish cut between its two renames: the old text kept, half of a new one in place
            txt = me.folder / f"{key}.txt"
            shutil.copy(txt, atomic.temp_name(txt, atomic.OLD))
            txt.write_text(frag.text + HALF, encoding="utf-8")
    write_identity(me.root, replace(of_machine(replace(here, key=me.key, gpu=None, gpu_name=None), machine)))
    return me


PARTS = ("conf.py", "uv.lock", "rust-toolchain.toml", "capture", "snippets", "crates", "docs")


def copy_book(root: Path) -> None:
    """The book's files as they are in this checkout: those git knows (a half-written page someone has not added
    yet is left out), else every file of the book's parts."""
    listed = subprocess.run(["git", "ls-files", "-z", "--", *PARTS], cwd=ROOT, capture_output=True)
    names = [n for n in listed.stdout.decode().split("\0") if n] if listed.returncode == 0 else []
    if names:
        for name in names:
            src = ROOT / name
            if src.is_file():
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, root / name)
        return
    ignore = shutil.ignore_patterns("_build", "node_modules", "target", "__pycache__", "api")
    for part in PARTS:
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, root / part, ignore=ignore)
        elif src.is_file():
            shutil.copy(src, root / part)


@pytest.fixture(scope="module")
def yours_site(tmp_path_factory):
    try:
        import sphinx  # noqa: F401
    except ImportError:
        pytest.skip("Sphinx is not installed")
    root = tmp_path_factory.mktemp("yours") / "book"
    root.mkdir(parents=True)
    copy_book(root)
    nm = ROOT / "docs/_mermaid/node_modules"
    if nm.is_dir():
        (root / "docs/_mermaid/node_modules").symlink_to(nm)
    me = make_reader(root)
    before = tree(root / "docs/_fragments")
    out = root / "_build/yours/html"
    env = {**os.environ, "BOOK_YOURS": "1", "BOOK_LOCAL_PLATFORM": CPU}
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-n", "--keep-going", "-q", "-b", "html", "-c", str(root),
                           "-d", str(root / "_build/yours/doctrees"), str(root / "docs"), str(out)],
                          cwd=root, env=env, capture_output=True, text=True)
    return root, out, me, proc, before


def page(out: Path, name: str):
    return parse((out / name).read_text(encoding="utf-8"))


def own(me) -> bool:
    return not me.book_platform


def test_your_machine_adds_no_warning_and_the_fragments_stay(yours_site):
    """Nothing the reader's machine brings is a warning (its failed claims, stale or skipped fragments, unlike
    comparisons are said on the page and logged as notes); warnings of pages being written meanwhile are not its."""
    root, out, me, proc, before = yours_site
    assert (out / "appendix/yours.html").is_file(), proc.stdout[-3000:] + proc.stderr[-6000:]
    warnings = [ln for ln in proc.stderr.splitlines() if "WARNING" in ln or "ERROR" in ln]
    mine = [w for w in warnings if me.key in w or "appendix/yours" in w or "yours.py" in w or "Traceback" in w]
    assert not mine, "\n".join(mine)
    assert tree(root / "docs/_fragments") == before
    if own(me):
        assert (out / "_fragments" / me.key / "torch-ret@cpu.json").is_file()  # its figures link to its fragments
        assert not (root / "docs/_fragments" / me.key).exists()


@pytest.mark.parametrize("name", ["eager.html", "design.html"])
def test_every_chapter_offers_your_machine(yours_site, name):
    root, out, me, proc, _ = yours_site
    doc = page(out, name)
    tabs = [e for e in doc.find_all("label", "sd-tab-label") if e.attrs.get("data-sync-id") == me.key]
    assert tabs and all("你的机器" in t.text() for t in tabs)
    # outputs, in tabs named for the reader's machine
    outputs = [e for e in doc.find_all("div", "book-output-wrapper") if f"book-plat-{me.key}" in e.classes]
    assert outputs, f"{name}: no output of your machine"
    # records tables and the verdict matrix: a row or a column of its own
    cells = [e for e in doc.find_all(cls="book-machine") if e.text().startswith("你的机器")]
    assert cells, f"{name}: no table row of your machine"
    matrix = doc.find_all("table", "book-verdict-matrix")
    assert matrix and any("你的机器" in th.text() for m in matrix for th in m.find_all("th"))
    # a comparison in words, read from its records
    cmps = [c for c in doc.find_all(cls="book-cmp")
            if any(f"book-plat-{me.key}" in a.classes for a in c.ancestors())]
    assert cmps, f"{name}: no {{cmp}} in your machine's tab"
    # the chart: drawn from its data, or (a machine without the GPU side) a tab that says why not
    charts = [e for e in doc.find_all(cls="book-chart-tabs")]
    if name == "eager.html":
        assert charts and any(f"book-plat-{me.key}" in d.classes or "画不出来" in d.text()
                              for c in charts for d in c.iter() if isinstance(d, type(c)))
    # claims are checked on it
    marks = [m for m in doc.find_all(cls="book-claim-marks") if "你的机器" in m.text()]
    assert marks, f"{name}: no claim says what it is on your machine"


def test_a_claim_that_fails_on_your_machine_says_so_and_the_skipped_experiment_says_why(yours_site):
    root, out, me, proc, _ = yours_site
    if not own(me):
        pytest.skip("this host is the book's CPU box: its answers are the book's")
    text = page(out, "eager.html").text()
    assert "✗ 你的机器 的数据不支持" in text  # torch-ret: the call returns before the work is done
    assert "你的机器：" in text and "要用 cargo，这台机器上没有" in text  # burn-oob was skipped for want of cargo
    assert "（旧）" in text
    # the torn pair: neither its half-written text nor its records reach the page, which says it is not whole
    assert HALF not in text and "文件不完整（写入时被打断）" in text


def test_the_page_of_your_machine_lists_the_findings(yours_site):
    root, out, me, proc, _ = yours_site
    doc = page(out, "appendix/yours.html")
    tables = doc.find_all("table", "book-yours-table")
    assert len(tables) == 2  # eager and design
    for t in tables:
        head = [th.text() for th in t.find_all("th")]
        assert "你的机器" in head and "和本书比" in head
    if not own(me):
        assert "你的机器就是本书的" in doc.text()
        return
    assert "和本书不同的地方" in doc.text()
    different = doc.find_all("ul", "book-yours-different")[0]
    links = [a.attrs.get("href", "") for a in different.find_all("a")]
    assert any(h.startswith("../eager.html#eager-ret") for h in links), links
    assert "调用先返回，同步时才等它算完（PyTorch）（CPU 一侧）" in different.text()
    rows = [r for t in tables for r in t.find_all("tr")]
    compared = [r for r in rows if "和" in r.text() and "哪个" in r.text() and any("book-yours-same" in c.classes or "book-yours-different"
                                                              in c.classes for c in r.iter())]
    assert compared, "no {cmp} row compared with the book"


@pytest.mark.browser
def test_chromium_reads_your_machine(yours_site, probe):
    from conftest import serve

    root, out, me, proc, _ = yours_site
    with serve(out, "/book/") as base:
        p = probe()
        p.goto(base + "appendix/yours.html")
        header = p.page.locator("table.book-yours-table th", has_text="你的机器").first
        assert header.is_visible()
        answered = p.page.locator(".book-yours-mine:not(.book-yours-untested)")
        cmp_row = p.page.locator("table.book-yours-table tr", has=answered).filter(has_text="哪个").first
        cmp_row.scroll_into_view_if_needed()
        assert cmp_row.is_visible()
        mine = cmp_row.locator(".book-yours-mine").inner_text()
        assert mine and mine != "未测", mine
        assert cmp_row.locator("a").first.get_attribute("href").startswith(("../eager.html#", "../design.html#"))
        p.goto(base + "eager.html")
        p.page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
        block = p.page.locator(".sd-tab-set", has=p.page.locator(f".book-plat-{me.key} .book-cmp")).first
        block.locator(f"label[data-sync-id='{me.key}']").click()
        clause = block.locator(f".book-plat-{me.key} .book-cmp").first
        assert clause.is_visible()
        assert any(w in clause.inner_text() for w in ("快", "慢", "差不多", "说不清")), clause.inner_text()
        # the chain8 comparison, on the reader's machine, in the page's words
        words = [c.inner_text() for c in p.page.locator(f".book-plat-{me.key} .book-cmp").all()]
        assert any("torch.compile 之后" in w and "即时执行" in w for w in words), words
        assert not p.problems, p.problems
