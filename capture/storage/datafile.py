"""Data files the machinery keeps in the repository beside the fragment store (docs/drift.json): one way to
read them and one way to write them, on the same rules as the fragments (capture/storage/store.py).

Reading (`read_json`): the path must stay inside the repository (a symlink out of it is refused, never
followed: capture/storage/paths.py), only a regular file is read and never with a blocking open (a FIFO, a
device, a folder is refused: capture/system/regular.py), it must be UTF-8 JSON, and the caller's `check` says
what its content must be. Whatever is wrong is a DataFileError: one line naming the path (and the line of the
file, where there is one) and the command that makes the file again. An absent file is None: the caller says
what that means.

Writing (`write_json`): the data is serialised first (NaN and infinities are refused: they are not JSON, and
no reader could use them), then the file is replaced atomically (capture/storage/atomic.py: a fresh temporary
name beside it, synced, renamed over it), so a full disk or a kill leaves the old file whole. A symlink, FIFO
or device in its place is replaced, never followed or opened (the note returned says so); a folder there, or a
folder above it that leaves the repository, is refused. Temporary files that a killed writer left for this
file are removed first.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from capture.storage import atomic
from capture.storage.paths import PathError, contained
from capture.storage.store import StoreUnusable
from capture.system import oserror, regular


class DataFileError(StoreUnusable):
    """A data file that cannot be used or written: str() is one line, `<path>[:<line>]: <why>; <fix>`."""

    def __init__(self, path: Path | str, why: str, fix: str, line: int | None = None):
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {why}; {fix}")
        self.path, self.line, self.why, self.fix = str(path), line, why, fix

    def __str__(self) -> str:
        return self.args[0]


@dataclass(frozen=True)
class Problem:
    """What a check found wrong in a file's content: where (the keys leading to it), why, and a fix when the
    usual one (the command that rebuilds the file) is not the right one."""
    keys: tuple
    why: str
    fix: str = ""


def show(value: object) -> str:
    """A JSON value in a message, never longer than a line (a 400-digit number is said as one)."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        digits = len(str(abs(value)))
        return f"a {digits}-digit number" if digits > 20 else str(value)
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:37]) + "..."
    return f"a JSON {'object' if isinstance(value, dict) else 'list' if isinstance(value, list) else type(value).__name__}"


def finite(value: object) -> float | None:
    """The number as a finite float, or None (not a number, a bool, NaN, an infinity, an int past the doubles)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        f = float(value)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def line_of(text: str, keys: tuple) -> int | None:
    """The line of `text` (JSON) where the value at `keys` (object keys and list indexes, outermost first) is, found
    by looking for each key after the one before it; the line of the last key found (None for the whole file)."""
    pos, found = 0, None
    for key in keys:
        if isinstance(key, int):
            continue  # a list index: the line of the key above it is near enough
        m = re.compile(re.escape(json.dumps(key, ensure_ascii=False)) + r"\s*:").search(text, pos)
        if m is None:
            m = re.compile(re.escape(json.dumps(key)) + r"\s*:").search(text, pos)  # written with \u escapes
        if m is None:
            break
        pos, found = m.end(), text.count("\n", 0, m.start()) + 1
    return found


def _too_many_digits(text: str) -> int | None:
    m = re.search(r"\d{4000,}", text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def read_json(path: Path, root: Path, fix: str, check: Callable[[object], Problem | None] | None = None,
              what: str = "data file") -> object | None:
    """The parsed content of a data file of the repository at `root`, checked by `check`; None when nothing is
    there. `fix`: what makes the file again ("rebuild it with: python -m capture drift"), said in every error."""
    if not os.path.lexists(path):
        return None
    try:
        contained(path, root, what)
    except PathError as e:
        raise DataFileError(path, _link_why(path, e), fix + " (it replaces the link, never the file it points to)") from None
    try:
        raw = regular.read_bytes(path)
    except regular.NotRegular as e:
        if e.what == "a folder":
            raise DataFileError(path, "a folder, not a file", f"move it away, then {fix}") from None
        raise DataFileError(path, f"{e.what}, not a regular file", fix + " (it replaces what is there)") from None
    except FileNotFoundError:  # a symlink inside the repository to nothing
        target = os.readlink(path) if os.path.islink(path) else "?"
        raise DataFileError(path, f"a symlink to a missing file ({target})", fix) from None
    except OSError as e:
        raise DataFileError(path, f"cannot be read ({e.strerror or e})",
                            oserror.fix(e, reading=True) if e.errno in oserror.READ_ONLY else fix) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataFileError(path, f"not UTF-8 (byte {raw[e.start]:#04x} at offset {e.start})", fix,
                            raw.count(b"\n", 0, e.start) + 1) from None
    if not text.strip():
        raise DataFileError(path, "empty (a write that was cut short, or an edit)", fix)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataFileError(path, f"not valid JSON ({e.msg} at column {e.colno})", fix, e.lineno) from None
    except ValueError as e:  # an integer past Python's digit limit
        raise DataFileError(path, f"not usable JSON ({e})", fix, _too_many_digits(text)) from None
    except RecursionError:
        raise DataFileError(path, "nested too deeply to be read", fix) from None
    problem = check(data) if check else None
    if problem is not None:
        raise DataFileError(path, problem.why, problem.fix or fix, line_of(text, problem.keys) if problem.keys else None)
    return data


def _link_why(path: Path, e: PathError) -> str:
    try:
        target = os.readlink(path)
    except OSError:  # not the file but a folder above it is the link
        return f"leaves the repository through a symlink ({e})"
    return f"a symlink leaving the repository (to {target})"


def _what_is_there(path: Path) -> tuple[str | None, bool]:
    """(a note on what a write replaces when it is not a regular file, whether it is a folder)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None, False
    if stat.S_ISLNK(mode):
        return f"{path} was a symlink (to {os.readlink(path)}); it is replaced by the file, and the file it pointed to is untouched", False
    if stat.S_ISDIR(mode):
        return None, True
    if not stat.S_ISREG(mode):
        return f"{path} was {regular.kind(mode)}; it is replaced by the file", False
    return None, False


def write_json(path: Path, root: Path, data: object, fix: str = "then run the command again", **dumps) -> str | None:
    """Replace the data file `path` of the repository at `root` with `data` as JSON (json.dumps with `dumps`, then a
    newline); atomically, never through a symlink. Returns a note when what it replaced was not a regular file.
    DataFileError (nothing written, the old file as it was) when it cannot."""
    try:
        text = json.dumps(data, allow_nan=False, **dumps) + "\n"
    except ValueError as e:  # NaN or an infinity: a bug of the caller, but never a file no reader can use
        raise DataFileError(path, f"not written: the data holds a number JSON cannot hold ({e})",
                            "nothing was written; report it (capture/storage/datafile.py refused it)") from None
    try:
        contained(path.parent, root, "folder of a data file")
    except PathError as e:
        raise DataFileError(path, f"not written: {e}", "make that folder a real folder of the repository, then run the command again") from None
    note, folder = _what_is_there(path)
    if folder:
        raise DataFileError(path, "a folder, not a file: not written", f"move it away, {fix}")
    for left in atomic.leftovers(path):  # what a writer killed before its rename left
        if not atomic.owner_alive(left.name):
            with contextlib.suppress(OSError):
                os.unlink(left)
    try:
        atomic.write_file(path, text)
    except OSError as e:
        raise DataFileError(path, f"cannot be written ({e.strerror or e}); the old file is as it was",
                            oserror.fix(e)) from None
    return note
