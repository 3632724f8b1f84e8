"""The fragment store: docs/_fragments/<platform>/<experiment>@<role>.{txt,json}.

- Writes are atomic (temp file in the same folder, fsync, rename), text first, then the
  JSON that vouches for it (it carries the text's sha256). A crash between the two renames
  leaves a text the JSON does not vouch for: `read` reports it as torn, and the next
  regenerate repairs it; the previous good JSON still names what the text was.
- A failed, timed-out or interrupted run never touches the last good fragment: its
  output goes beside it as <key>.failed.{txt,json}, removed again by the next success.
- One regenerate at a time per fragment store (an exclusive flock on .lock); the lock
  dies with its process, so a killed run never leaves a stale lock behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

SCHEMA = 1


class StoreLocked(RuntimeError):
    pass


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def atomic_write(path: Path, data: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


@dataclass(frozen=True)
class Fragment:
    platform: str
    key: str  # <experiment>@<role>
    text: str
    meta: dict
    torn: bool = False  # the text on disk is not the one the JSON vouches for

    @property
    def records(self) -> list[dict]:
        return self.meta.get("records", [])

    @property
    def inputs_hash(self) -> str:
        return self.meta.get("inputs_hash", "")


class Store:
    def __init__(self, root: Path):
        self.root = root

    def _paths(self, platform: str, key: str, failed: bool = False) -> tuple[Path, Path]:
        stem = f"{key}.failed" if failed else key
        d = self.root / platform
        return d / f"{stem}.txt", d / f"{stem}.json"

    def platforms(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith("."))

    def keys(self, platform: str) -> list[str]:
        d = self.root / platform
        if not d.is_dir():
            return []
        return sorted(p.stem for p in d.glob("*@*.json") if not p.stem.endswith((".failed", ".skipped")))

    def read(self, platform: str, key: str, failed: bool = False) -> Fragment | None:
        txt, js = self._paths(platform, key, failed)
        if not js.is_file():
            return None
        meta = json.loads(js.read_text(encoding="utf-8"))
        text = txt.read_text(encoding="utf-8") if txt.is_file() else ""
        torn = meta.get("text_sha256") != sha256_text(text)
        return Fragment(platform, key, text, meta, torn)

    def write(self, platform: str, key: str, text: str, meta: dict) -> None:
        """Publish a good fragment and clear any failure record beside it."""
        txt, js = self._paths(platform, key)
        meta = {"schema": SCHEMA, **meta, "text_sha256": sha256_text(text)}
        atomic_write(txt, text)
        atomic_write(js, json.dumps(meta, indent=1, ensure_ascii=False, sort_keys=False) + "\n")
        for p in self._paths(platform, key, failed=True):
            p.unlink(missing_ok=True)
        (self.root / platform / f"{key}.skipped.json").unlink(missing_ok=True)

    def write_skip(self, platform: str, key: str, reason: str) -> None:
        """Say why this platform cannot run (experiment, role), e.g. a backend its binaries lack."""
        path = self.root / platform / f"{key}.skipped.json"
        body = json.dumps({"schema": SCHEMA, "reason": reason}, ensure_ascii=False) + "\n"
        if not path.is_file() or path.read_text(encoding="utf-8") != body:
            atomic_write(path, body)

    def skip_reason(self, platform: str, key: str) -> str | None:
        path = self.root / platform / f"{key}.skipped.json"
        if not path.is_file():
            return None
        return json.loads(path.read_text(encoding="utf-8")).get("reason", "skipped")

    def write_failure(self, platform: str, key: str, text: str, meta: dict) -> None:
        """Record a failed run beside the last good fragment, which stays as it was."""
        txt, js = self._paths(platform, key, failed=True)
        meta = {"schema": SCHEMA, **meta, "text_sha256": sha256_text(text)}
        atomic_write(txt, text)
        atomic_write(js, json.dumps(meta, indent=1, ensure_ascii=False) + "\n")

    @contextlib.contextmanager
    def lock(self):
        """Refuse a second concurrent regenerate on this store, naming who holds it."""
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / ".lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = path.read_text(encoding="utf-8").strip() or "another process"
                raise StoreLocked(
                    f"another regenerate is running on {self.root} ({holder}); "
                    "wait for it to finish, or stop it, then run the command again"
                ) from None
            os.ftruncate(fd, 0)
            os.write(fd, f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}".encode())
            yield
        finally:
            os.close(fd)
