"""A fragment pair is replaced as a unit: after a failure at any step the store holds the old pair or the new one.

Two ways to fail: every write, sync, link, rename and close of capture/storage/atomic.py made to fail in turn (a small
fake `os`), and a real file system that is full (a tmpfs of a few pages, filled to each size in turn; Linux,
needs `unshare --mount`). In both, the other fragments never change.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from capture.storage import atomic
from capture.storage.store import Store
from tests.faults.faultbook import REPO

PLAT = "linux-x86_64-cpu"
KEY, OTHER = "e@cpu", "good@cpu"
OLD_TEXT, NEW_TEXT = "old output\n" * 50, "new output\n" * 80
STEPS = ("open", "write", "fsync", "close", "link", "replace", "unlink")


class FailingOs:
    """`os` whose n-th call among STEPS raises OSError(err); with `after`, every later `replace` fails too
    (a roll-back that cannot complete)."""

    def __init__(self, fail_at: int, err: int, after: bool = False):
        self.calls, self.fail_at, self.err, self.after, self.failed = 0, fail_at, err, after, False
        self.failed_step = ""

    def __getattr__(self, name):
        real = getattr(os, name)
        if name not in STEPS:
            return real

        def call(*args, **kw):
            self.calls += 1
            if self.calls == self.fail_at or (self.after and self.failed and name == "replace"):
                self.failed, self.failed_step = True, self.failed_step or name
                raise OSError(self.err, os.strerror(self.err), str(args[0]))
            return real(*args, **kw)

        return call


def fresh_store(tmp_path) -> Store:
    s = Store(tmp_path / "store")
    s.write(PLAT, KEY, OLD_TEXT, {"inputs_hash": "old"})
    s.write(PLAT, OTHER, "good\n", {"inputs_hash": "g"})
    s.write_failure(PLAT, KEY, "old failure\n", {"inputs_hash": "old", "failure": "old"})
    return s


def files(s: Store) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (s.root / PLAT).iterdir() if p.is_file()}


def count_steps(tmp_path, method: str) -> int:
    s = fresh_store(tmp_path / "count")
    fake = FailingOs(0, 0)
    mp = pytest.MonkeyPatch()
    mp.setattr(atomic, "os", fake)
    try:
        publish(s, method)
    finally:
        mp.undo()
    return fake.calls


def publish(s: Store, method: str) -> None:
    if method == "write":
        s.write(PLAT, KEY, NEW_TEXT, {"inputs_hash": "new"})
    else:
        s.write_failure(PLAT, KEY, "new failure\n", {"inputs_hash": "new", "failure": "new"})


TEXTS = {("write", "old"): OLD_TEXT, ("write", "new"): NEW_TEXT,
         ("write_failure", "old"): "old failure\n", ("write_failure", "new"): "new failure\n"}


def pair_is_old_or_new(s: Store, method: str, raised: bool) -> None:
    """A whole pair: the old one after an error, the new one after success."""
    frag = s.read(PLAT, KEY, failed=method == "write_failure")
    assert frag is not None and not frag.torn and not frag.corrupt, frag
    want = "old" if raised else "new"
    assert frag.meta["inputs_hash"] == want and frag.text == TEXTS[(method, want)], (raised, frag.meta["inputs_hash"])


CASES = [(m, e) for m in ("write", "write_failure") for e in (errno.ENOSPC, errno.EIO, errno.EROFS)]


@pytest.mark.parametrize("method, err", CASES, ids=[f"{m}-{errno.errorcode[e]}" for m, e in CASES])
def test_a_failure_at_every_step_leaves_the_old_pair_or_the_new(tmp_path, monkeypatch, method, err):
    total = count_steps(tmp_path, method)
    assert total >= 10
    for n in range(1, total + 1):
        s = fresh_store(tmp_path / f"s{n}")
        before = files(s)
        fake = FailingOs(n, err)
        monkeypatch.setattr(atomic, "os", fake)
        try:
            publish(s, method)
            raised = False
        except OSError as e:
            raised = True
            assert e.errno == err
        finally:
            monkeypatch.setattr(atomic, "os", os)
        assert fake.failed, n
        pair_is_old_or_new(s, method, raised)
        after = files(s)
        if raised and method == "write":
            assert after == before, f"step {n}: a failed publish changed the store"
        assert {k: v for k, v in after.items() if k.startswith(OTHER)} == \
            {k: v for k, v in before.items() if k.startswith(OTHER)}
        left = [p for p in after if p.endswith(".tmp")]
        if fake.failed_step == "unlink":  # a clean-up failed: any leftover is swept by the next regenerate
            monkeypatch.setattr(atomic, "owner_alive", lambda name: False)
            assert len(atomic.sweep(s.root / PLAT)) == len(left) and not [p for p in files(s) if p.endswith(".tmp")]
            monkeypatch.undo()
        else:
            assert not left, f"step {n} ({fake.failed_step}): temporary files left: {sorted(after)}"


@pytest.mark.parametrize("method", ["write", "write_failure"])
def test_a_roll_back_that_fails_too_is_torn_then_repaired(tmp_path, monkeypatch, method):
    """The second rename fails and so does putting the kept old text back: `read` says torn (not edited), and
    the next regenerate's repair restores the old pair."""
    total = count_steps(tmp_path, method)
    torn_seen = 0
    for n in range(1, total + 1):
        s = fresh_store(tmp_path / f"s{n}")
        before = files(s)
        monkeypatch.setattr(atomic, "os", FailingOs(n, errno.EIO, after=True))
        try:
            publish(s, method)
            raised = False
        except OSError:
            raised = True
        finally:
            monkeypatch.setattr(atomic, "os", os)
        frag = s.read(PLAT, KEY, failed=method == "write_failure")
        assert frag is not None and not frag.corrupt, f"step {n}: {frag.corrupt}"
        if frag.torn:
            torn_seen += 1
            monkeypatch.setattr(atomic, "owner_alive", lambda name: False)  # as the next process sees it
            assert s.repair(PLAT)
            monkeypatch.undo()
        else:
            pair_is_old_or_new(s, method, raised)
            continue
        pair_is_old_or_new(s, method, True)
        if method == "write":
            assert files(s) == before
    assert torn_seen >= 1


TMPFS_SCRIPT = r'''
import json, os, subprocess, sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from capture.storage.store import Store
mnt, pages = sys.argv[1], int(sys.argv[2])
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dk" % (4 * pages), "tmpfs", mnt], check=True)
OLD, NEW = "old output\n" * 50, "new output\n" * 800  # NEW needs 3 pages
results = []
for free_pages in range(0, pages):
    for name in os.listdir(mnt):
        subprocess.run(["rm", "-rf", os.path.join(mnt, name)], check=True)
    s = Store(Path(mnt, "store"))
    s.write("linux-x86_64-cpu", "e@cpu", OLD, {{"inputs_hash": "old"}})
    s.write("linux-x86_64-cpu", "good@cpu", "good\n", {{"inputs_hash": "g"}})
    fill = os.path.join(mnt, "fill")
    fd = os.open(fill, os.O_WRONLY | os.O_CREAT)  # fill the disk, then give back free_pages pages
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        os.close(fd)
    os.truncate(fill, max(0, os.path.getsize(fill) - free_pages * 4096))
    error = None
    try:
        s.write("linux-x86_64-cpu", "e@cpu", NEW, {{"inputs_hash": "new"}})
    except OSError as e:
        error = e.strerror
    frag, good = s.read("linux-x86_64-cpu", "e@cpu"), s.read("linux-x86_64-cpu", "good@cpu")
    left = sorted(n for n in os.listdir(os.path.join(mnt, "store", "linux-x86_64-cpu")) if n.endswith(".tmp"))
    results.append({{"free": free_pages, "error": error, "torn": frag.torn, "corrupt": frag.corrupt,
                    "hash": frag.meta.get("inputs_hash"), "good": good.text, "left": left}})
print(json.dumps(results))
'''


def test_a_full_tmpfs_at_every_size(tmp_path):
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        pytest.skip("a real full file system needs Linux and unshare")
    script = tmp_path / "fill.py"
    script.write_text(textwrap.dedent(TMPFS_SCRIPT.format(repo=str(REPO))))
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    cmd = ["unshare", "--mount"] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "--mount"]
    r = subprocess.run([*cmd, sys.executable, str(script), str(mnt), "12"], capture_output=True, text=True, timeout=120)
    if r.returncode != 0 and ("Operation not permitted" in r.stderr or "mount" in r.stderr and not r.stdout):
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()[-200:]}")
    assert r.returncode == 0, r.stderr
    results = json.loads(r.stdout)
    assert any(x["error"] for x in results) and any(not x["error"] for x in results), results  # both outcomes seen
    for x in results:
        assert not x["torn"] and not x["corrupt"] and x["good"] == "good\n", x
        assert x["hash"] == ("old" if x["error"] else "new"), x
        assert x["left"] == [], x
