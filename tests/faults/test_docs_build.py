"""A docs build interrupted at any moment leaves the next build correct, and builds started together into one
folder take turns (capture/sphinxext/site/buildguard.py).

A throwaway project of a few pages; a small extension sends the build a real SIGINT at a chosen moment (while
reading, while writing the pages, just before the search index is written). The next strict build must pass
without a warning and index every page, and so must the one after it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.faults.faultbook import REPO, write

PAGES = 6
CONF = f'''
import os, sys
sys.path.insert(0, {str(REPO)!r})
sys.path.insert(0, os.path.dirname(__file__))
extensions = ["myst_parser", "capture.sphinxext.site.buildguard", "stopper"]
language = "en"
'''
STOPPER = '''\
"""Test helper: SIGINT to this build at the n-th time an event fires (BOOK_STOP=event:n), or a pause there."""
import os, signal, time

def setup(app):
    event, _, n = os.environ.get("BOOK_STOP", ":").partition(":")
    pause = float(os.environ.get("BOOK_PAUSE", "0"))
    seen = [0]

    def hook(*args):
        seen[0] += 1
        if pause:
            time.sleep(pause)
        if event and seen[0] == int(n):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the KeyboardInterrupt lands here

    for name in ("source-read", "doctree-read", "env-updated", "html-page-context", "html-collect-pages"):
        if name == event or (pause and name == "html-page-context"):
            app.connect(name, hook)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
'''


def make(src):
    write(src / "conf.py", CONF)
    write(src / "stopper.py", STOPPER)
    toc = "\n".join(f"page{i}" for i in range(PAGES))
    write(src / "index.md", f"# Book\n\nfront page, word frontword\n\n```{{toctree}}\n{toc}\n```\n")
    for i in range(PAGES):
        write(src / f"page{i}.md", f"# Page {i}\n\nText of page {i}: uniqueword{i}.\n")


def sphinx(src, out, env=None, strict=True):
    cmd = [sys.executable, "-m", "sphinx", *(["-W", "--keep-going"] if strict else []), "-b", "html", str(src), str(out)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **(env or {})})


def indexed_pages(out) -> set[str]:
    """The pages the search index finds by their own word (uniquewordN)."""
    text = (out / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(text[text.index("(") + 1: text.rindex(")")])
    found = set()
    for term, hits in index["terms"].items():
        if term.startswith("uniqueword"):
            found |= {index["docnames"][i] for i in ([hits] if isinstance(hits, int) else hits)}
    return found


# (where the build is stopped, the event and the n-th time it fires)
STOPS = [
    ("reading-first-page", "source-read:1"),
    ("reading-last-page", f"source-read:{PAGES}"),
    ("after-reading", "env-updated:1"),
    ("writing-first-page", "html-page-context:1"),
    ("writing-middle", f"html-page-context:{PAGES // 2}"),
    ("before-the-search-index", "html-collect-pages:1"),
]


@pytest.mark.parametrize("name, stop", STOPS, ids=[s[0] for s in STOPS])
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_an_interrupted_build_leaves_the_next_one_whole(tmp_path, name, stop, warm):
    src, out = tmp_path / "src", tmp_path / "out"
    make(src)
    if warm:  # a complete build first, then every page changes, then the interrupted build
        first = sphinx(src, out)
        assert first.wait(timeout=300) == 0, first.stdout.read()
        for i in range(PAGES):
            write(src / f"page{i}.md", f"# Page {i}\n\nText of page {i}, changed: uniqueword{i}.\n")
    stopped = sphinx(src, out, {"BOOK_STOP": stop}, strict=False)
    log = stopped.communicate(timeout=300)[0]
    assert stopped.returncode != 0, log  # it was interrupted
    for attempt in ("next", "the one after"):
        proc = sphinx(src, out)
        log = proc.communicate(timeout=300)[0]
        assert proc.returncode == 0 and "WARNING" not in log, f"{attempt} build after {name}:\n{log}"
        assert indexed_pages(out) == {f"page{i}" for i in range(PAGES)}, f"{attempt} build after {name}: incomplete index"
        assert all((out / f"page{i}.html").is_file() for i in range(PAGES))


def test_builds_started_together_take_turns(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    make(src)
    slow = {"BOOK_PAUSE": "0.3"}
    a = sphinx(src, out, slow)
    time.sleep(0.2)
    b = sphinx(src, out, slow)
    logs = [p.communicate(timeout=300)[0] for p in (a, b)]
    assert a.returncode == 0 and b.returncode == 0, logs
    assert any("waiting for another docs build" in log for log in logs), logs
    assert indexed_pages(out) == {f"page{i}" for i in range(PAGES)}
    assert not list(out.glob("*.tmp")) and not list((out / "_static").glob("*.tmp"))


def test_the_mermaid_copy_uses_a_name_of_its_own(tmp_path, monkeypatch):
    """Two builds copying mermaid.min.js at once never write the same temporary file."""
    from capture.toolchains import assets

    src = tmp_path / "mermaid.min.js"
    src.write_text("js")
    names = []
    real = assets.shutil.copyfile
    monkeypatch.setattr(assets.shutil, "copyfile", lambda a, b: (names.append(b.name), real(a, b))[1])
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mermaid.min.js.tmp").mkdir()  # the old fixed name, taken
    assert assets.copy_if_changed(src, tmp_path / "out" / "mermaid.min.js")
    (tmp_path / "out" / "mermaid.min.js").unlink()
    assert assets.copy_if_changed(src, tmp_path / "out" / "mermaid.min.js")
    assert len(set(names)) == 2 and all(str(os.getpid()) in n for n in names)
    assert (tmp_path / "out" / "mermaid.min.js").read_text() == "js"
