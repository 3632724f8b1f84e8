"""Reading a file the machinery did not write itself: regular files only, never blocking.

A FIFO, a socket or a device in place of a fragment, a manifest or a source would block a plain
`open` (a FIFO with no writer waits forever) or read something that is no file at all. `read_bytes`
looks first (stat), opens without blocking (O_NONBLOCK: a FIFO opens at once) and checks again on the
open file (fstat), so nothing but a regular file is read. What it refuses is an OSError whose message
names the path, what is there instead and the fix.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder"))
LOOP = "a symlink loop (it points back to itself)"


def kind(mode: int) -> str:
    """What a file of this mode is, in words ("a FIFO (named pipe)"); "a regular file" for one."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


class NotRegular(OSError):
    """Something other than a regular file where one is read; str() is the located one-line message."""

    def __init__(self, path: Path | str, what: str):
        super().__init__(f"{path} is {what}, not a regular file; remove it (rm {path}) and restore the file "
                         "(git checkout, or the command that makes it)")
        self.path, self.what = str(path), what

    def __str__(self) -> str:
        return self.args[0]


def check(path: Path | str) -> None:
    """Raise NotRegular when `path` (followed) is there but is not a regular file; OSError when it cannot be looked at."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        if e.errno == errno.ELOOP:  # a link to itself, or links in a circle: no file at all
            raise NotRegular(path, LOOP) from None
        raise
    if not stat.S_ISREG(mode):
        raise NotRegular(path, kind(mode))


def read_bytes(path: Path | str) -> bytes:
    """The bytes of a regular file; NotRegular for anything else, OSError as the system reports it."""
    check(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # replaced between the look and the open
            raise NotRegular(path, kind(mode))
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: Path | str) -> str:
    """read_bytes decoded as UTF-8 (UnicodeDecodeError for the caller to name)."""
    return read_bytes(path).decode("utf-8")
