"""What to say when the file system refuses: one message per kind of refusal, naming the path and the fix."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path

FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG)
READ_ONLY = (errno.EACCES, errno.EPERM, errno.EROFS)


def fix(e: OSError, reading: bool = False) -> str:
    if e.errno in READ_ONLY and reading:
        return "make it readable (chmod u+r, u+rx for a folder), or leave it out of this checkout, then run the command again"
    if e.errno in READ_ONLY:
        return "make it writable (chmod u+w, or a writable checkout), then run the command again"
    if e.errno in FULL:
        return "the disk is full: free space there, then run the command again"
    if e.errno == errno.ENAMETOOLONG:
        return "the name is too long for the file system: shorten it, then run the command again"
    return "fix that path, then run the command again"


def path_of(e: OSError, default: Path | str) -> str:
    """The path an error names; for one of our temporary files (.<name>.<pid>.<random>.tmp) its folder."""
    name = e.filename2 or e.filename or default  # a rename names its target second
    p = Path(name)
    if p.name.startswith(".") and p.name.endswith(".tmp"):
        return str(p.parent)
    return str(p)


def plain(e: OSError, reading: bool = False) -> str:
    """`<path>: <reason>; <fix>` for an error of any operation (a read's fix with `reading`)."""
    from capture.system.regular import NotRegular

    if isinstance(e, NotRegular):  # its message names the path and the fix
        return str(e)
    where = e.filename2 or e.filename
    return f"{where}: {e.strerror or e}; {fix(e, reading)}" if where else f"{e.strerror or e}; {fix(e, reading)}"


def explain(e: OSError, what: str, default: Path | str = "") -> str:
    """`cannot write to <what>: <path>: <reason>; <fix>`."""
    return f"cannot write to {what}: {path_of(e, default)}: {e.strerror or e}; {fix(e)}"


def full(folder: Path, probe: int = 64 * 1024) -> bool:
    """Whether `folder` cannot take `probe` more bytes (disk full or over quota), found by writing them."""
    p = folder / f".space-probe.{os.getpid()}.{secrets.token_hex(3)}.tmp"
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        return e.errno in FULL
    try:
        if os.write(fd, b"\0" * probe) < probe:
            return True
        os.fsync(fd)
        return False
    except OSError as e:
        return e.errno in FULL
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(p)
