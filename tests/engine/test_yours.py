"""Your machine in the book (capture/machines/yours.py, capture/commands/yours.py): the reader's own platform,
captured outside the committed book, end to end in a throwaway book.

- it is named from the fingerprint, stored under .capture/yours/<key>/, and nothing under docs/_fragments changes;
- a second run captures only what is stale;
- a host without cargo skips the Rust experiments with the reason, and the book says it (not applicable, why);
- an interrupted capture and a torn pair show nothing half-written;
- a reader's folder from an older checkout (stale inputs, a removed experiment, a platform.json without a
  fingerprint) and another machine's folder are read without harm;
- on the machine of a book platform nothing is captured, and that platform is 「你的机器」;
- --promote turns the capture into a book platform.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from capture.commands import yours as cmd
from capture.evidence.book import NOTE, YOURS, Book
from capture.machines import fingerprint as fpmod
from capture.machines import yours
from capture.machines.identity import of_machine, write as write_identity
from capture.machines.platform import detect, machine_record
from capture.storage import atomic
from capture.storage.keys import FragmentKey, check_platform_key
from capture.storage.store import Store
from tests.engine.book import make_book

REPO = Path(__file__).resolve().parents[2]

SMALL = '''\
[defaults]
timeout = 60

[[experiment]]
id = "hello"
framework = "torch"
script = "snippets/hello.py"
args = ["{device}"]
roles = ["cpu", "gpu"]

[[experiment]]
id = "sleeper"
script = "snippets/sleeper.py"
args = ["slow", "0"]

[[experiment]]
id = "tiny"
framework = "burn"
crate = "tiny"
args = ["{device}"]
'''


def tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()} if root.is_dir() else {}


@pytest.fixture
def book(tmp_path, cargo_target, monkeypatch):
    monkeypatch.setenv("CARGO_TARGET_DIR", str(cargo_target))
    monkeypatch.delenv("BOOK_PLATFORM", raising=False)
    monkeypatch.setenv("BOOK_NO_GPU", "1")  # the same on a GPU host: the CPU role only
    return make_book(tmp_path / "book", SMALL)


def capture(layout, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    only = list(args) or None
    rc = cmd.run(layout, only, None, None, False, sys.executable, out=out)
    return rc, out.getvalue()


def reader(layout):
    return yours.find(layout, yours.here())


def test_the_key_comes_from_the_fingerprint():
    fp = fpmod.of_machine({"arch": "x86_64", "cpu": "AMD EPYC 7B13", "cores": 2, "memory_gib": 31.3,
                           "os_pretty": "Debian GNU/Linux 12 (bookworm)"})
    key = yours.key_of(fp)
    assert check_platform_key(key) == key and key.startswith(fpmod.suggest_key(fp) + "-")
    assert yours.key_of(dict(fp)) == key  # the same machine, the same key
    assert yours.key_of({**fp, "cores": 4}) != key  # another machine (same CPU model), a folder of its own
    assert len(yours.key_of({**fp, "cpu": "x" * 200})) <= 80


def test_a_capture_goes_to_the_readers_folder_and_only_what_is_stale_runs_again(book):
    before = tree(book.fragments)
    rc, out = capture(book, "hello", "sleeper")
    me = reader(book)
    assert rc == 0, out
    assert not me.book_platform and me.root == book.root / ".capture" / "yours"
    assert f"platform {me.key}" in out and "estimate" in out and "left]" in out
    assert sorted(Store(me.root).keys(me.key)) == ["hello@cpu", "sleeper@cpu"]
    assert tree(book.fragments) == before  # docs/_fragments is untouched
    rc, out = capture(book, "hello", "sleeper")
    assert rc == 0 and "0 to run here, 2 already captured and fresh" in out, out
    (book.root / "snippets/helper.py").write_text('def greet(device):\n    return f"hi from {device}"\n')
    rc, out = capture(book, "hello", "sleeper")
    assert "1 to run here, 1 already captured and fresh" in out and "ok" in out and "hello@cpu" in out, out
    assert tree(book.fragments) == before

    b = Book(book.root, reader=me)
    assert b.reader == me.key and me.key in b.platforms() and b.book_platforms() == []
    assert b.short_label(me.key) == YOURS and b.label(me.key).startswith(f"{YOURS}：")
    st = b.state(me.key, FragmentKey("hello", "cpu"))
    assert st.state == "fresh" and st.fragment.text.startswith("hi from cpu")
    assert Book(book.root).platforms() == []  # without asking, the book has no reader's machine


def test_without_cargo_the_rust_experiments_say_why(book, monkeypatch):
    from capture.sphinxext.reader import detail_words

    bare = book.root / "bin"
    bare.mkdir()
    (bare / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(bare))  # no cargo on it
    rc, out = capture(book)
    me = reader(book)
    assert rc == 0, out
    assert "skipped" in out and "needs cargo to build its Rust program (crate tiny)" in out
    store = Store(me.root)
    assert "tiny@cpu" not in store.keys(me.key) and "hello@cpu" in store.keys(me.key)
    assert "needs cargo" in store.skip_reason(me.key, "tiny@cpu")
    b = Book(book.root, reader=me)
    st = b.state(me.key, FragmentKey("tiny", "cpu"))
    assert st.state == "not-applicable" and st.severity == NOTE and "needs cargo" in st.detail
    assert detail_words(st.detail) == "要用 cargo，这台机器上没有"


def test_an_interrupted_capture_shows_nothing_half_written(book):
    (book.root / "docs/experiments.toml").write_text(SMALL.replace('args = ["slow", "0"]', 'args = ["slow", "30"]'))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "capture", "--root", str(book.root), "yours", "--only", "hello",
                             "sleeper"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    me = reader(book)
    deadline = time.time() + 60
    while time.time() < deadline and "hello@cpu" not in Store(me.root).keys(me.key):
        time.sleep(0.2)
    time.sleep(1.0)  # the sleeper is running now
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert "interrupted" in out
    store = Store(me.root)
    assert store.keys(me.key) == ["hello@cpu"]  # the finished one, whole
    assert not atomic.leftovers(store.root / me.key / "sleeper@cpu.txt")
    b = Book(book.root, reader=me)
    st = b.state(me.key, FragmentKey("sleeper", "cpu"))
    assert st.state == "missing" and st.fragment is None and st.detail.startswith("the run failed there: interrupted")
    assert b.state(me.key, FragmentKey("hello", "cpu")).usable

    # a publish cut between its two renames: the pair is torn, and the pages do not use it
    txt = store.root / me.key / "hello@cpu.txt"
    old = txt.read_text()
    shutil.copy(txt, atomic.temp_name(txt, atomic.OLD))
    txt.write_text(old + "half of a new text")
    b = Book(book.root, reader=me)
    st = b.state(me.key, FragmentKey("hello", "cpu"))
    assert st.state == "torn" and not st.usable
    assert b.answer("hello@cpu:hello.elapsed", me.key).value is None


def test_a_readers_folder_from_an_older_checkout(book):
    rc, out = capture(book, "hello", "sleeper")
    assert rc == 0, out
    me = reader(book)
    folder = me.folder
    # an older checkout: its platform.json had no fingerprint, it knew an experiment this one does not
    ident = json.loads((folder / "platform.json").read_text())
    ident.pop("fingerprint")
    ident["schema"] = 1
    ident["a_field_from_elsewhere"] = True
    (folder / "platform.json").write_text(json.dumps(ident))
    for suffix in (".txt", ".json"):
        shutil.copy(folder / f"sleeper@cpu{suffix}", folder / f"gone@cpu{suffix}")
    (book.root / "snippets/sleeper.py").write_text((book.root / "snippets/sleeper.py").read_text() + "\n# changed\nx = 1\n")
    # and another machine's folder beside it
    shutil.copytree(folder, me.root / "linux-x86_64-cpu-some-other-cpu-abcdef")

    b = Book(book.root, reader=me)
    assert b.platforms() == [me.key]  # the other machine's folder is not shown
    assert b.state(me.key, FragmentKey("sleeper", "cpu")).state == "stale"
    assert b.state(me.key, FragmentKey("sleeper", "cpu")).severity == NOTE
    assert b.state(me.key, FragmentKey("hello", "cpu")).state == "fresh"
    assert b.identity(me.key).has_gpu is False and b.short_label(me.key) == YOURS

    rc, out = capture(book, "hello", "sleeper")
    assert rc == 0, out
    assert "1 to run here, 1 already captured and fresh" in out
    assert "linux-x86_64-cpu-some-other-cpu-abcdef is another machine's" in out
    assert Book(book.root, reader=me).state(me.key, FragmentKey("sleeper", "cpu")).state == "fresh"


def test_on_a_book_platforms_machine_nothing_is_captured(book):
    here = detect()
    ident = of_machine(here, machine_record(here))
    write_identity(book.fragments, ident)  # the book's platform is this very machine
    before = tree(book.root)
    rc, out = capture(book, "hello")
    assert rc == 0
    assert f"this machine is the book's {here.key}" in out
    assert tree(book.root) == before and not (book.root / ".capture" / "yours").exists()
    me = reader(book)
    assert me.book_platform and me.key == here.key
    b = Book(book.root, reader=me)
    assert b.reader == here.key and b.reader_is_book and b.short_label(here.key) == YOURS
    assert b.book_platforms() == [here.key]


def test_promote_makes_the_capture_a_platform_of_the_book(book):
    rc, out = capture(book, "hello", "sleeper")
    assert rc == 0, out
    me = reader(book)
    err = io.StringIO()
    assert cmd.promote(book, "linux-x86_64-cpu-mine", out=err) == 0, err.getvalue()
    store = Store(book.fragments)
    assert sorted(store.keys("linux-x86_64-cpu-mine")) == ["hello@cpu", "sleeper@cpu"]
    assert store.read("linux-x86_64-cpu-mine", "hello@cpu").meta["platform"] == "linux-x86_64-cpu-mine"
    assert "BOOK_PLATFORM=linux-x86_64-cpu-mine nox -s regenerate" in err.getvalue()
    b = Book(book.root)
    assert b.platforms() == ["linux-x86_64-cpu-mine"]
    assert b.state("linux-x86_64-cpu-mine", FragmentKey("hello", "cpu")).state == "fresh"
    # from now on this host is that book platform's machine: nothing more to promote
    assert yours.find(book, yours.here()).key == "linux-x86_64-cpu-mine" != me.key
    again = io.StringIO()
    assert cmd.promote(book, "another-key", out=again) == 2
    assert "already is the book's linux-x86_64-cpu-mine" in again.getvalue()


def test_a_chapter_selects_the_experiments_its_page_names():
    from capture.evidence.findings import chapters
    from capture.plan.manifest import ManifestError, load
    from capture.storage.paths import Layout

    layout = Layout(REPO)
    manifest = load(layout.manifest)
    assert chapters(REPO / "docs") == ["eager", "design"]
    eager = cmd.chapter_experiments(layout, manifest, ["eager"])
    assert {"torch-ret", "burn-ret", "torch-drop", "burn-oob"} <= set(eager)
    assert not any(e.startswith("candle-") for e in eager)
    design = cmd.chapter_experiments(layout, manifest, ["design.md"])
    assert "candle-matmul" in design and "torch-ret" not in design
    with pytest.raises(ManifestError, match="chapters: eager, design"):
        cmd.chapter_experiments(layout, manifest, ["nosuch"])


def test_the_findings_are_the_ones_the_share_counts():
    """The page 「你的机器和本书的机器」 lists exactly the expressions capture/evidence/share.py counts for the chapters."""
    from capture.evidence import findings, share

    docs = REPO / "docs"
    mine = {(f"{f.page}.md", f.line, f.expr) for items in findings.of_chapters(docs).values() for f in items}
    chapters = {f"{p}.md" for p in findings.chapters(docs)}
    theirs = set()
    for where, expr in share.verdict_expressions(docs):
        page, _, rest = where.partition(":")
        if page in chapters:
            theirs.add((page, int(rest.split()[0]), expr))
    assert mine == theirs
    kinds = {f.kind for items in findings.of_chapters(docs).values() for f in items}
    assert kinds == {"claim", "matrix", "chart", "cmp", "table"}
    eager = findings.of_page(docs, "eager")
    ret = next(f for f in eager if f.kind == "claim" and "torch-ret@cpu" in f.expr)
    assert ret.section == "eager-ret" and ret.what.startswith("CPU 上两边最快一次返回时")
