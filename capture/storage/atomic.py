"""Files replaced atomically: one file, or a pair of files as a unit.

`write_file`: the new bytes go to a fresh temporary file beside the target (created with O_EXCL and
O_NOFOLLOW, so no file or symlink already there is opened), are synced, and the temporary file is
renamed over the target. A rename replaces a symlink itself, never the file it points to.

`write_pair` (a fragment's .txt and the .json that vouches for it): both new files are written and
synced first, then the old first file is kept under a hard link, then the two renames. An error at
any step (a full disk, a file system that refuses a rename) leaves the old pair: before the first
rename nothing has changed, and an error at the second rename puts the kept file back. Only a process
killed between the two renames (SIGKILL, power loss) can leave them mixed; the kept old file it leaves
behind is the evidence that capture.storage.store's Store.interrupted finds and Store.repair puts back.

Every temporary name is `.<name>.<pid>.<random>.tmp` (`.old.tmp` for a kept file), gitignored, and
belongs to the live process `pid`; `sweep` removes those of dead processes. All I/O goes through `os`
calls of this module, so a test can make any one of them fail.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from pathlib import Path

from capture.system import reaper, regular

OLD = ".old.tmp"  # suffix of a kept old file
TMP = ".tmp"


def temp_name(path: Path, suffix: str = TMP) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(3)}{suffix}")


def _write_new(path: Path, data: bytes) -> None:
    """Create `path` (it must not exist, not even as a symlink), write `data`, sync."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_folder(folder: Path) -> None:
    """Make the renames in `folder` durable where the platform allows; never fails (the files are in place)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    with contextlib.suppress(OSError):
        os.fsync(fd)
    with contextlib.suppress(OSError):
        os.close(fd)


def _discard(*paths: Path | None) -> None:
    for p in paths:
        if p is not None:
            with contextlib.suppress(OSError):
                os.unlink(p)


def _bytes(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


def write_file(path: Path, data: str | bytes) -> None:
    """Replace `path` with `data` (text is written as UTF-8, newlines as given)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = _bytes(data)  # an unencodable text fails here, before any file exists
    tmp = temp_name(path)
    try:
        _write_new(tmp, raw)
        os.replace(tmp, path)
    finally:
        _discard(tmp)
    _sync_folder(path.parent)


def write_pair(first: Path, first_data: str | bytes, second: Path, second_data: str | bytes) -> None:
    """Replace `first` and `second` (same folder) together: after an error, the old pair is in place."""
    first.parent.mkdir(parents=True, exist_ok=True)
    raw1, raw2 = _bytes(first_data), _bytes(second_data)
    t1, t2, kept = temp_name(first), temp_name(second), None
    rolled_back = True
    try:
        _write_new(t1, raw1)
        _write_new(t2, raw2)
        if os.path.lexists(first) and not first.is_dir():
            kept = temp_name(first, OLD)
            os.link(first, kept, follow_symlinks=False)
        os.replace(t1, first)
        try:
            os.replace(t2, second)
        except BaseException:
            rolled_back = False
            if kept is not None:
                os.replace(kept, first)
                kept = None
            else:
                os.unlink(first)
            rolled_back = True
            raise
    finally:
        # a failed roll-back keeps the old first file: the evidence of an interrupted publish, and what repair restores
        _discard(t1, t2, kept if rolled_back else None)
    _sync_folder(first.parent)


# -- after a process died between the two renames ---------------------------------------------------

def _parts(name: str) -> list[str]:
    """[.<file>, pid, random] of a temporary name .<file>.<pid>.<random>[.old].tmp"""
    return name.removesuffix(TMP).removesuffix(".old").rsplit(".", 2)


def target_name(name: str) -> str:
    """The file a temporary file was made for."""
    return _parts(name)[0][1:]


def owner_alive(name: str) -> bool:
    """Whether the process that made temporary file `name` still runs."""
    parts = _parts(name)
    if len(parts) != 3 or not parts[1].isdigit():
        return False
    return int(parts[1]) == os.getpid() or reaper.alive(int(parts[1]))


def leftovers(path: Path, suffix: str = TMP) -> list[Path]:
    """Temporary files made for `path` (kept old files with suffix=OLD), newest first."""
    try:
        found = [p for p in path.parent.glob(f".{_glob_escape(path.name)}.*{suffix}")
                 if p.name.count(".") >= 3 and (suffix == OLD or not p.name.endswith(OLD))]
    except OSError:
        return []
    return sorted(found, key=_mtime, reverse=True)


def _glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def _mtime(p: Path) -> int:
    try:
        return p.lstat().st_mtime_ns
    except OSError:
        return 0


def sha256_file(path: Path) -> str | None:
    try:
        if path.is_symlink():
            return None
        return hashlib.sha256(regular.read_bytes(path)).hexdigest()
    except OSError:
        return None


def dead_leftovers(folder: Path, suffix: str = TMP) -> list[Path]:
    """Temporary files in `folder` (ending in `suffix`) whose process no longer runs."""
    try:
        return sorted(p for p in folder.iterdir()
                      if p.name.startswith(".") and p.name.endswith(suffix) and not owner_alive(p.name))
    except OSError:
        return []


def sweep(folder: Path) -> list[Path]:
    """Remove the temporary files of processes that no longer run; returns what was removed."""
    gone = dead_leftovers(folder)
    _discard(*gone)
    return gone
