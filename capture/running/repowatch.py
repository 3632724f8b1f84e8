"""A run may change nothing in the repository outside its own scratch folder.

Before each run `take` notes the repository: every file git sees (tracked, and untracked ones git does
not ignore) by its stat signature (mode, size, mtime, ctime, inode: a write changes ctime even when it
puts the old mtime back), and every file of the fragment store by its bytes. After the run `changes`
looks again. A run that changed anything fails with the list, and `restore` puts the fragment store
back byte for byte (a file the run added there is removed): the last good fragments survive whatever
a snippet wrote. Other files are named, not restored (their bytes were not kept); git restores them.

Without git (a tarball, a copy, or git refusing the folder), every file outside the usual generated
folders (SKIP) is watched instead.

A concurrent regenerate publishing into the store is not the run's doing: the store's lock file is
rewritten with the holder's pid on every lock (capture/storage/store.py), so when another live process wrote
it, or it changed during the run, the store is left out of that run's comparison.

Cost per run: one `git ls-files`, one lstat per file (about 450) and one read of the store (1.4 MB):
milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from capture.storage import atomic
from capture.system import reaper, regular
from capture.storage.paths import Layout

# generated or private folders the walk without git leaves out (they are all in .gitignore)
SKIP = {".git", ".capture", ".nox", ".device", ".whl", ".gl", "__pycache__", "node_modules", "_build", "target", "mutants"}
LOCK = ".lock"


def _signature(path: str) -> tuple | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _git_files(root: Path) -> list[str] | None:
    """Files git sees under `root` (relative), or None when git cannot say."""
    if not (root / ".git").exists():
        return None
    try:
        r = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    return [p for p in r.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


def _walk_files(root: Path) -> list[str]:
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP and not d.startswith(".venv")]
        rel = os.path.relpath(folder, root)
        out += [f if rel == "." else f"{rel}/{f}" for f in files]
    return out


def _store_files(store: Path) -> dict[str, bytes | tuple]:
    """Every file under the store: its bytes, or ("link", target) for a symlink (never followed)."""
    out: dict[str, bytes | tuple] = {}

    def walk(d: Path, rel: str) -> None:
        try:
            entries = list(os.scandir(d))
        except OSError:
            return
        for e in entries:
            r = f"{rel}{e.name}"
            if r == LOCK:
                continue
            if e.is_symlink():
                with contextlib.suppress(OSError):
                    out[r] = ("link", os.readlink(e.path))
            elif e.is_dir():
                walk(Path(e.path), r + "/")
            else:
                with contextlib.suppress(OSError):  # a FIFO or socket is compared by kind, never opened
                    out[r] = regular.read_bytes(e.path) if e.is_file() else ("special", regular.kind(e.stat().st_mode))

    walk(store, "")
    return out


def _lock_state(store: Path) -> tuple:
    """(signature of the lock file, whether another live process wrote it last).

    Only looked at, never taken: even a shared flock for a moment would make a regenerate starting at that
    moment report "another regenerate is running". A holder that has finished but still lives (a test
    process) counts as holding: the store is then left out, which can only miss damage, never blame a run."""
    path = store / LOCK
    sig = _signature(str(path))
    try:
        text = os.pread(fd := os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)), 100, 0).decode("ascii", "replace")
        os.close(fd)
    except OSError:
        return sig, False
    words = text.split()
    pid = int(words[1].rstrip(",")) if len(words) > 1 and words[0] == "pid" and words[1].rstrip(",").isdigit() else 0
    return sig, bool(pid) and pid != os.getpid() and reaper.alive(pid)


@dataclass
class Snapshot:
    files: dict[str, tuple | None]
    store: dict[str, bytes | tuple]
    lock: tuple
    own_lock: bool  # this process holds the store's lock (a regenerate into it)
    extra: dict = field(default_factory=dict)


def _repo_files(layout: Layout) -> dict[str, tuple | None]:
    root = layout.root
    names = _git_files(root)
    if names is None:
        names = _walk_files(root)
    store = layout.rel(layout.fragments) + "/"
    scratch = layout.rel(layout.scratch) + "/"
    return {n: _signature(str(root / n)) for n in names if not n.startswith((store, scratch))}


def take(layout: Layout, own_lock: bool) -> Snapshot:
    """The repository before a run; `own_lock`: this process holds the fragment store's lock."""
    return Snapshot(_repo_files(layout), _store_files(layout.fragments), _lock_state(layout.fragments), own_lock)


def changes(layout: Layout, before: Snapshot) -> tuple[list[str], list[str]]:
    """(changed repository files, changed store files), paths relative to the repository; a store a concurrent
    regenerate held or locked during the run is not compared."""
    now = _repo_files(layout)
    files = sorted(n for n in set(before.files) | set(now) if before.files.get(n) != now.get(n))
    lock_sig, held = _lock_state(layout.fragments)
    if not before.own_lock and (before.lock[1] or held or lock_sig != before.lock[0]):
        return files, []
    after = _store_files(layout.fragments)
    store = layout.rel(layout.fragments)
    changed = sorted(f"{store}/{n}" for n in set(before.store) | set(after) if before.store.get(n) != after.get(n))
    return files, changed


def restore(layout: Layout, before: Snapshot, changed: list[str]) -> list[str]:
    """Put the store's changed files back as they were before the run; the paths that could not be."""
    failed = []
    root = layout.fragments
    prefix = layout.rel(root) + "/"
    if changed and (root.is_symlink() or (os.path.lexists(root) and not root.is_dir())):
        root.unlink()  # the store itself was replaced by a link or a file
    root.mkdir(parents=True, exist_ok=True)
    for name in changed:
        rel = name.removeprefix(prefix)
        path = root / rel
        try:
            _real_folders(root, path.parent)
            old = before.store.get(rel)
            if old is None:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                elif os.path.lexists(path):
                    path.unlink()
            elif isinstance(old, tuple):
                if os.path.lexists(path):
                    path.unlink()
                os.symlink(old[1], path)
            else:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                atomic.write_file(path, old)  # replaces a symlink put there, never follows it
        except OSError:
            failed.append(name)
    return failed


def _real_folders(root: Path, folder: Path) -> None:
    """Make every folder from `root` down to `folder` a real folder again (a symlink or file put there goes)."""
    parts = folder.relative_to(root).parts
    d = root
    for p in parts:
        d = d / p
        if d.is_symlink() or (os.path.lexists(d) and not d.is_dir()):
            d.unlink()
        if not d.exists():
            d.mkdir()
