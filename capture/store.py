"""The fragment store: docs/_fragments/<platform>/<experiment>@<role>.{txt,json}.

- Writes are atomic (temp file in the same folder, fsync, rename), text first, then the
  JSON that vouches for it (it carries the text's sha256). A crash between the two renames
  leaves a text the JSON does not vouch for: `read` reports it as torn, and the next
  regenerate repairs it; the previous good JSON still names what the text was.
- A failed, timed-out or interrupted run never touches the last good fragment: its
  output goes beside it as <key>.failed.{txt,json}, removed again by the next success.
- A file that cannot be read or used (truncated, not JSON, not UTF-8, wrong types) is a state,
  not a crash: `read` returns a Fragment whose `corrupt` names the path and the reason, and
  the next regenerate overwrites it.
- Platform keys are checked (capture.keys) before any path is built, so a key from a page or
  the environment cannot lead outside the store.
- One regenerate at a time per fragment store (an exclusive flock on .lock); the lock
  dies with its process, so a killed run never leaves a stale lock behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from capture.keys import PLATFORM_KEY, FragmentKey, check_platform_key
from capture.paths import PathError, contained

SCHEMA = 1

# Fields a consumer relies on, with the types a good file has; a file that breaks them is corrupt.
_META_TYPES: dict[str, tuple[type, ...]] = {
    "inputs_hash": (str,),
    "text_sha256": (str,),
    "inputs": (dict,),
    "records": (list,),
    "versions": (dict,),
    "machine": (dict,),
    "host": (dict,),
    "started": (str,),
    "device": (str, type(None)),
    "platform": (str,),
    "experiment": (str,),
    "role": (str,),
    "framework": (str,),
    "failure": (str,),
    "exit_status": (int, type(None)),
    "timed_out": (bool,),
    "load_before": (list, type(None)),
    "load_after": (list, type(None)),
}
_REQUIRED = ("inputs_hash", "text_sha256")


class StoreLocked(RuntimeError):
    pass


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def atomic_write(path: Path, data: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@dataclass(frozen=True)
class Fragment:
    platform: str
    key: str  # <experiment>@<role>
    text: str
    meta: dict
    # the text on disk is not the one the JSON vouches for; also true for a corrupt fragment
    # (nothing vouches for its text), so every consumer that refuses torn fragments refuses it
    torn: bool = False
    corrupt: str | None = None  # why the files cannot be used, naming the path; text "" and meta {} then

    @property
    def records(self) -> list[dict]:
        return self.meta.get("records", [])

    @property
    def inputs_hash(self) -> str:
        return self.meta.get("inputs_hash", "")


def meta_problem(meta: object) -> str | None:
    """Why a fragment's (or failure record's) metadata cannot be used, or None."""
    from capture.records import record_problem

    if not isinstance(meta, dict):
        return f"metadata is a JSON {type(meta).__name__}, not an object"
    for name in _REQUIRED:
        if name not in meta:
            return f"metadata has no {name!r}"
    for name, types in _META_TYPES.items():
        value = meta.get(name)
        if name in meta and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
            want = "/".join("null" if t is type(None) else t.__name__ for t in types)
            return f"metadata field {name!r} is {type(value).__name__}, not {want}"
    for i, rec in enumerate(meta.get("records", [])):
        why = record_problem(rec)
        if why:
            return f"records[{i}]: {why}"
    return None


def _read_text(path: Path) -> str:
    """A file's text; UnicodeDecodeError and OSError propagate for the caller to name."""
    return path.read_bytes().decode("utf-8")


class Store:
    def __init__(self, root: Path):
        self.root = root

    def _dir(self, platform: str) -> Path:
        """The platform's folder: a valid platform key (capture.keys), and not a symlink out of the store."""
        check_platform_key(platform)
        d = self.root / platform
        contained(d, self.root, "fragment folder")
        return d

    def _paths(self, platform: str, key: str, failed: bool = False) -> tuple[Path, Path]:
        FragmentKey.parse(key)
        stem = f"{key}.failed" if failed else key
        d = self._dir(platform)
        return d / f"{stem}.txt", d / f"{stem}.json"

    def platforms(self) -> list[str]:
        """Platform folders with a valid key (a folder with another name cannot have been written by the store)."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and PLATFORM_KEY.fullmatch(p.name))

    def keys(self, platform: str) -> list[str]:
        d = self._dir(platform)
        if not d.is_dir():
            return []
        return sorted(p.stem for p in d.glob("*@*.json") if not p.stem.endswith((".failed", ".skipped")))

    def read(self, platform: str, key: str, failed: bool = False) -> Fragment | None:
        """The fragment (or failure record), None when absent. Never raises on a bad file: a file that cannot
        be read, decoded or used is returned as a Fragment with `corrupt` saying why, with the path."""
        try:
            txt, js = self._paths(platform, key, failed)
        except PathError as e:
            return self._corrupt(platform, key, self.root / platform, str(e))
        if not (js.exists() or js.is_symlink()):
            return None
        for f in (js, txt):
            if f.is_symlink():
                try:
                    contained(f, self.root, "fragment file")
                except PathError as e:
                    return self._corrupt(platform, key, f, f"a symlink is not a fragment ({e})")
        try:
            meta = json.loads(_read_text(js))
        except UnicodeDecodeError as e:
            return self._corrupt(platform, key, js, f"not UTF-8 (byte {e.object[e.start]:#04x} at offset {e.start})")
        except json.JSONDecodeError as e:
            what = "empty" if not e.doc.strip() else f"invalid JSON ({e.msg} at line {e.lineno} column {e.colno})"
            return self._corrupt(platform, key, js, what)
        except (OSError, ValueError, RecursionError) as e:
            return self._corrupt(platform, key, js, f"unreadable ({type(e).__name__}: {e})")
        why = meta_problem(meta)
        if why:
            return self._corrupt(platform, key, js, why)
        try:
            text = _read_text(txt) if txt.exists() else ""  # missing: torn; a folder: unreadable
        except UnicodeDecodeError as e:
            return self._corrupt(platform, key, txt, f"not UTF-8 (byte {e.object[e.start]:#04x} at offset {e.start})")
        except OSError as e:
            return self._corrupt(platform, key, txt, f"unreadable ({type(e).__name__}: {e})")
        torn = meta.get("text_sha256") != sha256_text(text)
        return Fragment(platform, key, text, meta, torn)

    @staticmethod
    def _corrupt(platform: str, key: str, path: Path, why: str) -> Fragment:
        return Fragment(platform, key, "", {}, torn=True, corrupt=f"{path}: {why}")

    def corrupt(self, platform: str, key: str) -> str | None:
        """Why one of the files of (platform, key) is corrupt (fragment, failure record, skip record), or None."""
        for failed in (False, True):
            frag = self.read(platform, key, failed)
            if frag is not None and frag.corrupt:
                return frag.corrupt
        _, why = self._read_skip(platform, key)
        return why

    def write(self, platform: str, key: str, text: str, meta: dict) -> None:
        """Publish a good fragment and clear any failure record beside it."""
        txt, js = self._paths(platform, key)
        meta = {"schema": SCHEMA, **meta, "text_sha256": sha256_text(text)}
        atomic_write(txt, text)
        atomic_write(js, json.dumps(meta, indent=1, ensure_ascii=False, sort_keys=False) + "\n")
        for p in self._paths(platform, key, failed=True):
            p.unlink(missing_ok=True)
        (self._dir(platform) / f"{key}.skipped.json").unlink(missing_ok=True)

    def write_skip(self, platform: str, key: str, reason: str) -> None:
        """Say why this platform cannot run (experiment, role), e.g. a backend its binaries lack."""
        FragmentKey.parse(key)
        path = self._dir(platform) / f"{key}.skipped.json"
        body = json.dumps({"schema": SCHEMA, "reason": reason}, ensure_ascii=False) + "\n"
        try:
            same = path.is_file() and path.read_bytes() == body.encode("utf-8")
        except OSError:
            same = False
        if not same:
            atomic_write(path, body)

    def _read_skip(self, platform: str, key: str) -> tuple[str | None, str | None]:
        """(reason, corrupt): the skip record's reason, or why the file is corrupt."""
        FragmentKey.parse(key)
        try:
            path = self._dir(platform) / f"{key}.skipped.json"
        except PathError as e:
            return None, str(e)
        if not (path.exists() or path.is_symlink()):
            return None, None
        try:
            data = json.loads(_read_text(path))
        except (OSError, ValueError, RecursionError) as e:
            return None, f"{path}: {'empty' if isinstance(e, json.JSONDecodeError) and not e.doc.strip() else type(e).__name__ + ': ' + str(e)}"
        if not isinstance(data, dict) or not isinstance(data.get("reason", "skipped"), str):
            return None, f"{path}: a skip record is an object with a string 'reason'"
        return data.get("reason", "skipped"), None

    def skip_reason(self, platform: str, key: str) -> str | None:
        """Why this platform skips (experiment, role), or None. A corrupt skip record counts as none
        (status names it through `corrupt`; the next regenerate on that platform rewrites or removes it)."""
        return self._read_skip(platform, key)[0]

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
                try:
                    holder = path.read_text(encoding="utf-8", errors="replace").strip() or "another process"
                except OSError:
                    holder = "another process"
                raise StoreLocked(
                    f"another regenerate is running on {self.root} ({holder}); "
                    "wait for it to finish, or stop it, then run the command again"
                ) from None
            os.ftruncate(fd, 0)
            os.write(fd, f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}".encode())
            yield
        finally:
            os.close(fd)
