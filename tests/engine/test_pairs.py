"""Both sides of a comparison come from one sitting, or `status` says so (issue 41): a one-sided re-capture
(`--only` one side, `--force`) splits the pair, and the share of timing verdicts names it with the one command
that captures the two together again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from capture.evidence.book import Book
from capture.evidence.share import shares
from tests.engine.book import make_book, run, write

REPO = Path(__file__).resolve().parents[2]
MANIFEST = '''\
[defaults]
timeout = 60

[[experiment]]
id = "fast"
framework = "torch"
script = "snippets/timed.py"
args = ["0.001"]

[[experiment]]
id = "slow"
framework = "torch"
script = "snippets/timed.py"
args = ["0.05"]
'''

TIMED = '''\
import sys, time
import bookrec
# ANCHOR: main
t = time.perf_counter()
time.sleep(float(sys.argv[1]))
# ANCHOR_END: main
bookrec.record("nap.elapsed", time.perf_counter() - t, "s")
print("napped")
'''

PAGE = '''\
# Pairs

::::{per-platform} all
{cmp}`fast@cpu:nap.elapsed vs slow@cpu:nap.elapsed | a=fast, b=slow`
::::

:::{claim} fast@cpu:nap.elapsed < 1 and slow@cpu:nap.elapsed < 1
两次都不到一秒。
:::
'''


def _book(tmp_path):
    layout = make_book(tmp_path, MANIFEST)
    write(tmp_path / "snippets/timed.py", TIMED)
    write(tmp_path / "docs/pairs.md", PAGE)
    return layout


def test_a_one_sided_recapture_splits_the_pair_and_status_names_it_with_the_command_that_repairs_it(tmp_path,
                                                                                                     monkeypatch):
    monkeypatch.delenv("BOOK_PLATFORM", raising=False)
    layout = _book(tmp_path)
    first, _ = run(layout)
    assert {k: o.status for k, o in first.items()} == {"fast@cpu": "ok", "slow@cpu": "ok"}
    (together,) = [s for s in shares(Book(layout.root), layout.root / "docs") if s.platform == "linux-x86_64-cpu"]
    assert together.total == 2 and together.split == []  # one regenerate: one run, nothing split

    again, _ = run(layout, force=True, only=["fast"])
    assert list(again) == ["fast@cpu"]
    book = Book(layout.root)
    assert book.runs("linux-x86_64-cpu")["fast@cpu"] != book.runs("linux-x86_64-cpu")["slow@cpu"]
    (split,) = [s for s in shares(book, layout.root / "docs") if s.platform == "linux-x86_64-cpu"]
    # the claim states two things, each about one side: a sitting apiece splits nothing
    assert [sp.where for sp in split.split] == ["pairs.md:4 cmp"]
    (sp,) = split.split
    assert sorted(k for _, keys in sp.runs for k in keys) == ["fast@cpu", "slow@cpu"]
    assert sp.command.endswith("--only fast slow --device cpu --force"), sp.command

    # the command line says it too
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "capture", "status"], cwd=layout.root, capture_output=True, text=True,
                         timeout=120, env=env)
    assert "split pair  pairs.md:4 cmp" in out.stdout and "--only fast slow --device cpu --force" in out.stdout, out

    # the command that status names puts them back into one sitting
    run(layout, force=True, only=["fast", "slow"])
    (repaired,) = [s for s in shares(Book(layout.root), layout.root / "docs") if s.platform == "linux-x86_64-cpu"]
    assert repaired.split == []
