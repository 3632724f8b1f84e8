"""Output that cannot be written never stops a command: stdout and stderr, guarded.

A batch must finish whatever happens to its terminal: stderr closed (`2>&-`), a reader that went away
(`| head -1`, `| true`: a broken pipe), an encoding that cannot show a character (PYTHONIOENCODING=latin-1).
`guard` replaces sys.stdout and sys.stderr by wrappers that
- write a character the encoding lacks as an escape (\\u4e2d), and count it;
- on a stream that cannot be written, send what follows to a log file (.capture/logs/<command>-....log);
and `report` says so at the end, on whichever stream still works (and in the log).
"""

from __future__ import annotations

import codecs
import io
import json
import os
import sys
import time
from pathlib import Path


class _Shared:
    def __init__(self, log: Path):
        self.log_path = log
        self.log = None  # opened on the first write that needs it
        self.escaped: dict[str, int] = {}  # stream name -> writes that needed escapes
        self.lost: dict[str, str] = {}  # stream name -> why it could not be written

    def to_log(self, text: str) -> None:
        try:
            if self.log is None:
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
                self.log = open(self.log_path, "a", encoding="utf-8", errors="backslashreplace")
            self.log.write(text)
            self.log.flush()
        except OSError:
            pass  # nowhere left to write: the command still finishes


class Guarded(io.TextIOBase):
    """One of stdout/stderr: the real stream while it works, the log file after."""

    def __init__(self, name: str, stream, shared: _Shared):
        self.name, self.stream, self.shared = name, stream, shared
        self.lines = 0
        if stream is None:
            shared.lost[name] = "it was closed when the command started"

    @property
    def encoding(self):
        return getattr(self.stream, "encoding", "utf-8")

    def isatty(self) -> bool:
        try:
            return self.name not in self.shared.lost and bool(self.stream.isatty())
        except (OSError, ValueError, AttributeError):
            return False

    def fileno(self) -> int:
        if self.name in self.shared.lost:
            raise io.UnsupportedOperation("no file descriptor: the stream was lost")
        return self.stream.fileno()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if self.name in self.shared.lost:
            self.shared.to_log(text)
            return len(text)
        try:
            enc = getattr(self.stream, "encoding", None) or "utf-8"
            try:
                text.encode(enc)
            except UnicodeEncodeError:  # stderr escapes on its own (errors=backslashreplace), stdout would raise: both counted
                text = text.encode(enc, "backslashreplace").decode(enc)
                self.shared.escaped[self.name] = self.shared.escaped.get(self.name, 0) + 1
            except LookupError:
                pass
            self.stream.write(text)
            if "\n" in text:
                self.stream.flush()  # a broken pipe shows here, on the line that hit it, not at exit
        except (OSError, ValueError) as e:  # EPIPE, EBADF, EIO; ValueError: the stream was closed
            self._lose(e)
            self.shared.to_log(text)
        else:
            self.lines += text.count("\n")
        return len(text)

    def flush(self) -> None:
        if self.name in self.shared.lost:
            return
        try:
            self.stream.flush()
        except (OSError, ValueError) as e:
            self._lose(e)

    def _lose(self, e: Exception) -> None:
        why = getattr(e, "strerror", None) or str(e) or type(e).__name__
        self.shared.lost[self.name] = f"{why} after {self.lines} line(s)"
        try:  # drop what is buffered, so that the interpreter's exit does not report the broken pipe again
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, self.stream.fileno())
            os.close(fd)
        except (OSError, ValueError, AttributeError):
            pass


def writes_utf(stream) -> bool:
    """Whether `stream` encodes every character as it is (a UTF codec): otherwise what it cannot show becomes
    Python's escapes (\\xe9, \\U0001f600), which are not JSON. JSON for such a stream is written ASCII-only."""
    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "ascii").name.startswith("utf")
    except LookupError:
        return False


def json_text(data, stream=None, **kw) -> str:
    """json.dumps for output to `stream` (sys.stdout by default): valid JSON whatever its encoding, characters
    as they are where it writes UTF-8, \\u escapes (JSON's own) where it does not."""
    return json.dumps(data, ensure_ascii=not writes_utf(sys.stdout if stream is None else stream), **kw)


def guard(root: Path, command: str) -> _Shared:
    """Install the guards for one command run under `root`; pass the result to `report` at the end."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    shared = _Shared(root / ".capture" / "logs" / f"{command}-{stamp}-{os.getpid()}.log")
    sys.stdout = Guarded("stdout", sys.stdout, shared)
    sys.stderr = Guarded("stderr", sys.stderr, shared)
    return shared


def report(shared: _Shared, root: Path) -> None:
    """Say at the end what could not be shown as it was, on a stream that still works, and in the log."""
    notes = []
    for name, n in shared.escaped.items():
        enc = getattr(getattr(sys, name), "encoding", "?")
        notes.append(f"note: {n} write(s) to {name} had characters its encoding ({enc}) cannot show; they are "
                     "written as \\u escapes (PYTHONIOENCODING=utf-8 shows them)")
    for name, why in shared.lost.items():
        try:
            where = shared.log_path.relative_to(root)
        except ValueError:
            where = shared.log_path
        notes.append(f"note: {name} could not be written ({why}); everything after that is in {where}")
    if not notes:
        return
    text = "\n".join(notes) + "\n"
    if shared.lost:
        shared.to_log(text)
    for stream in (sys.stderr, sys.stdout):
        if isinstance(stream, Guarded) and stream.name not in shared.lost:
            stream.write(text)
            stream.flush()
            break
