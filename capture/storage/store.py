"""The fragment store: docs/_fragments/<platform>/<experiment>@<role>.{txt,json}.

- A fragment's text and the JSON that vouches for it (it carries the text's sha256) are replaced
  as a unit (capture.storage.atomic.write_pair): after an error at any step (a full disk, a refused
  rename) the old pair is in place. Only a process killed between the two renames can leave a
  text the JSON does not vouch for, together with the kept old text: `read` reports that as
  torn, and `repair` (the next regenerate, under the lock) puts the old text back. A text that
  no interrupted write explains was edited after the capture: `read` reports it as corrupt.
- A failed, timed-out or interrupted run never touches the last good fragment: its
  output goes beside it as <key>.failed.{txt,json}, removed again by the next success.
- A file that cannot be read or used (truncated, not JSON, not UTF-8, wrong types) is a state,
  not a crash: `read` returns a Fragment whose `corrupt` names the path and the reason, and
  the next regenerate overwrites it.
- Platform keys are checked (capture.storage.keys) before any path is built, so a key from a page or
  the environment cannot lead outside the store.
- One regenerate at a time per fragment store (an exclusive flock on .lock); the lock
  dies with its process, so a killed run never leaves a stale lock behind.
- Control files (the lock, temporary files, skip records) are plain files inside the store: a
  symlink in their place is refused (the lock, a skip record) or replaced, never followed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from capture.storage import atomic
from capture.system import oserror, regular
from capture.storage.keys import PLATFORM_KEY, FragmentKey, check_platform_key
from capture.storage.paths import PathError, SymlinkLoop, contained

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
    "run": (str,),
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


class StoreUnusable(OSError):
    """The store (or a control file in it) cannot be used: the message names the path and the fix."""


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def atomic_write(path: Path, data: str) -> None:
    """Replace one file atomically (capture.storage.atomic.write_file)."""
    atomic.write_file(path, data)


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
    from capture.storage.records import record_problem

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
    """A regular file's text (capture/system/regular.py); UnicodeDecodeError and OSError propagate for the caller to name."""
    return regular.read_text(path)


def _unreadable(e: OSError | ValueError | RecursionError) -> str:
    """Why a store file could not be read, for a corrupt state (the path is said before it)."""
    if isinstance(e, regular.NotRegular):
        return f"{e.what}, not a regular file; remove it (the next regenerate on that platform writes the file again)"
    return f"unreadable ({type(e).__name__}: {e})"


class Store:
    def __init__(self, root: Path):
        self.root = root

    def _dir(self, platform: str) -> Path:
        """The platform's folder: a valid platform key (capture.storage.keys), and not a symlink out of the store."""
        check_platform_key(platform)
        d = self.root / platform
        self._contained(d, "fragment folder")
        return d

    def _contained(self, d: Path, what: str) -> None:
        """contained(d, root), cheaply where it cannot fail: the root itself, or one plain name below it that is
        not a symlink (a key has no '/' or '..'); resolving every path would make each read cost a realpath."""
        if d == self.root:
            return
        if d.parent == self.root:
            try:
                if not stat.S_ISLNK(os.lstat(d).st_mode):
                    return
            except OSError:  # absent: it resolves to a name inside the store
                return
        contained(d, self.root, what)

    def _paths(self, platform: str, key: str, failed: bool = False) -> tuple[Path, Path]:
        FragmentKey.parse(key)
        stem = f"{key}.failed" if failed else key
        d = self._dir(platform)
        return d / f"{stem}.txt", d / f"{stem}.json"

    def _control(self, path: Path, what: str) -> Path:
        """A control file's path (lock, skip record): inside the store, and never a symlink (whatever it points to,
        following it would write or read a file that is not the store's)."""
        self._contained(path.parent, what)
        if path.is_symlink():
            raise PathError(f"{what} {path} is a symlink (to {os.readlink(path)}); a control file of the store is a plain "
                            f"file: remove the link ({path}), then run the command again")
        return path

    def platforms(self) -> list[str]:
        """Platform folders with a valid key (a folder with another name cannot have been written by the store)
        that can be read; the others are in folder_problems()."""
        return sorted(set(self._named()) - set(self.folder_problems()))

    def _named(self) -> list[str]:
        """Entries of the store with a platform key's name, whatever they are."""
        try:
            return sorted(p.name for p in self.root.iterdir() if PLATFORM_KEY.fullmatch(p.name))
        except OSError:  # no store yet, or not a folder: no platform (the store's own errors come from writes)
            return []

    def folder_problems(self) -> dict[str, str]:
        """{platform: why its folder cannot be used}, naming the path and the fix: an entry with a platform's
        name that is not a folder, a symlink out of the store, a folder that cannot be read."""
        out = {}
        for name in self._named():
            d = self.root / name
            restore = f"restore the folder (git checkout -- {name} in {self.root}), then run the command again"
            try:
                self._contained(d, "fragment folder")
                mode = d.stat().st_mode
            except PathError as e:
                out[name] = f"{e}"
                continue
            except OSError as e:
                out[name] = f"{d}: {e.strerror or e}; {restore}"
                continue
            if not stat.S_ISDIR(mode):
                out[name] = f"{d} is {regular.kind(mode)}, not a platform's folder; move it away and {restore}"
            elif not os.access(d, os.R_OK | os.X_OK):
                out[name] = (f"{d}: cannot be read (permission denied); make it readable (chmod -R u+rX {d}), "
                             "or leave that platform out of this checkout")
        return out

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
        for _ in range(5):  # a publish that lands between reading the JSON and the text is read again
            if not (js.exists() or js.is_symlink()):
                return None
            for f in (js, txt):
                if f.is_symlink():
                    try:
                        contained(f, self.root, "fragment file")
                    except SymlinkLoop:
                        return self._corrupt(platform, key, f, _unreadable(regular.NotRegular(f, regular.LOOP)))
                    except PathError as e:
                        return self._corrupt(platform, key, f, f"a symlink is not a fragment ({e})")
            try:
                raw = regular.read_bytes(js)
                meta = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as e:
                return self._corrupt(platform, key, js, f"not UTF-8 (byte {e.object[e.start]:#04x} at offset {e.start})")
            except json.JSONDecodeError as e:
                what = "empty" if not e.doc.strip() else f"invalid JSON ({e.msg} at line {e.lineno} column {e.colno})"
                return self._corrupt(platform, key, js, what)
            except (OSError, ValueError, RecursionError) as e:
                return self._corrupt(platform, key, js, _unreadable(e))
            why = meta_problem(meta)
            if why:
                return self._corrupt(platform, key, js, why)
            try:
                text = _read_text(txt) if txt.exists() else None  # missing: torn; a folder, a FIFO...: unreadable
            except UnicodeDecodeError as e:
                return self._corrupt(platform, key, txt, f"not UTF-8 (byte {e.object[e.start]:#04x} at offset {e.start})")
            except OSError as e:
                return self._corrupt(platform, key, txt, _unreadable(e))
            if text is not None and meta["text_sha256"] == sha256_text(text):
                return Fragment(platform, key, text, meta)
            interrupted = text is None or self.interrupted(txt, meta["text_sha256"])
            try:
                settled = regular.read_bytes(js) == raw
            except OSError:
                settled = False
            if settled:
                break
        if not interrupted:
            return self._corrupt(platform, key, txt, EDITED.format(js=js.name))
        return Fragment(platform, key, text or "", meta, torn=True)

    @staticmethod
    def interrupted(txt: Path, vouched: str) -> bool:
        """Whether a publish of this pair was cut between its two renames: the old text it kept is still
        there and is the one the JSON vouches for (capture.storage.atomic.write_pair)."""
        return any(atomic.sha256_file(p) == vouched for p in atomic.leftovers(txt, atomic.OLD))

    def repair(self, platform: str) -> list[str]:
        """Put back the old text of each pair whose publish was cut between its renames by a process that no
        longer runs, and remove the temporary files of dead processes; the names of the repaired files.
        Safe without the lock: it touches only what dead processes left."""
        d = self._dir(platform)
        fixed = []
        for kept in atomic.dead_leftovers(d, atomic.OLD):
            txt = d / atomic.target_name(kept.name)
            js = txt.with_suffix(".json")
            if txt.suffix != ".txt" or txt.is_symlink() or js.is_symlink():
                continue
            try:
                vouched = json.loads(regular.read_text(js)).get("text_sha256")
            except (OSError, ValueError, AttributeError, RecursionError):
                continue
            if atomic.sha256_file(txt) != vouched and atomic.sha256_file(kept) == vouched:
                with contextlib.suppress(OSError):  # read-only, or another regenerate repaired it first
                    os.replace(kept, txt)
                    fixed.append(txt.name)
        atomic.sweep(d)
        return fixed

    @staticmethod
    def _corrupt(platform: str, key: str, path: Path, why: str) -> Fragment:
        return Fragment(platform, key, "", {}, torn=True, corrupt=f"{path}: {why}")

    def corrupt(self, platform: str, key: str) -> str | None:
        """Why one of the files of (platform, key) is corrupt (fragment, failure record, skip record), or None."""
        for failed in (False, True):
            frag = self.read(platform, key, failed)
            if frag is not None and frag.corrupt:
                return frag.corrupt
        return self.skip_problem(platform, key)

    def corrupt_beside(self, platform: str, key: str) -> str | None:
        """corrupt() for the files beside a fragment already read: its failure record and skip record."""
        frag = self.read(platform, key, True)
        return frag.corrupt if frag is not None and frag.corrupt else self.skip_problem(platform, key)

    def skip_problem(self, platform: str, key: str) -> str | None:
        """Why the skip record of (platform, key) is corrupt, or None."""
        return self._read_skip(platform, key)[1]

    def write(self, platform: str, key: str, text: str, meta: dict) -> None:
        """Publish a good fragment (text and JSON as a unit) and clear any failure record beside it."""
        self._write_pair(platform, key, text, meta, failed=False)
        for p in self._paths(platform, key, failed=True):
            p.unlink(missing_ok=True)
        (self._dir(platform) / f"{key}.skipped.json").unlink(missing_ok=True)

    def write_failure(self, platform: str, key: str, text: str, meta: dict) -> None:
        """Record a failed run beside the last good fragment, which stays as it was."""
        self._write_pair(platform, key, text, meta, failed=True)

    def _write_pair(self, platform: str, key: str, text: str, meta: dict, failed: bool) -> None:
        txt, js = self._paths(platform, key, failed)
        meta = {"schema": SCHEMA, **meta, "text_sha256": sha256_text(text)}
        atomic.write_pair(txt, text, js, json.dumps(meta, indent=1, ensure_ascii=False) + "\n")

    def _skip_path(self, platform: str, key: str) -> Path:
        FragmentKey.parse(key)
        return self._dir(platform) / f"{key}.skipped.json"

    def write_skip(self, platform: str, key: str, reason: str) -> None:
        """Say why this platform cannot run (experiment, role), e.g. a backend its binaries lack."""
        path = self._skip_path(platform, key)
        body = json.dumps({"schema": SCHEMA, "reason": reason}, ensure_ascii=False) + "\n"
        try:
            same = not path.is_symlink() and path.is_file() and regular.read_bytes(path) == body.encode("utf-8")
        except OSError:
            same = False
        if not same:
            atomic_write(path, body)  # a symlink in its place is replaced, not followed

    def _read_skip(self, platform: str, key: str) -> tuple[str | None, str | None]:
        """(reason, corrupt): the skip record's reason, or why the file is corrupt."""
        try:
            path = self._control(self._skip_path(platform, key), "skip record")
        except PathError as e:
            return None, str(e)
        if not (path.exists() or path.is_symlink()):
            return None, None
        try:
            data = json.loads(_read_text(path))
        except regular.NotRegular as e:
            return None, f"{path}: {_unreadable(e)}"
        except (OSError, ValueError, RecursionError) as e:
            return None, f"{path}: {'empty' if isinstance(e, json.JSONDecodeError) and not e.doc.strip() else type(e).__name__ + ': ' + str(e)}"
        if not isinstance(data, dict) or not isinstance(data.get("reason", "skipped"), str):
            return None, f"{path}: a skip record is an object with a string 'reason'"
        return data.get("reason", "skipped"), None

    def skip_reason(self, platform: str, key: str) -> str | None:
        """Why this platform skips (experiment, role), or None. A corrupt skip record counts as none
        (status names it through `corrupt`; the next regenerate on that platform rewrites or removes it)."""
        return self._read_skip(platform, key)[0]

    @contextlib.contextmanager
    def lock(self):
        """Refuse a second concurrent regenerate on this store, naming who holds it.

        The lock file is a control file: a symlink there is refused (opening it would truncate and
        write the file it points to), and so is anything but a plain file."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            path = self._control(self.root / ".lock", "lock file")
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except PathError as e:
            raise StoreUnusable(str(e)) from None
        except OSError as e:
            raise StoreUnusable(oserror.explain(e, "the fragment store", self.root)) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise StoreUnusable(f"lock file {path} is not a plain file; remove it, then run the command again")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
                except OSError:
                    holder = "another process"
                raise StoreLocked(
                    f"another regenerate is running on {self.root} ({holder}); "
                    "wait for it to finish, or stop it, then run the command again"
                ) from None
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}".encode(), 0)
            except OSError as e:
                raise StoreUnusable(oserror.explain(e, "the fragment store", path)) from None
            yield
        finally:
            os.close(fd)


EDITED = ("edited after the capture: the text is not the one {js} vouches for, and no interrupted write explains it "
          "(restore it from git, or capture it again)")


class Overlay:
    """The book's store and a few platforms kept elsewhere, read as one store (the reader's own machine,
    .capture/yours/<key>/: capture/machines/yours.py). Every per-platform read goes to the store that holds
    that platform; what names no platform (the root, the lock) is the book's store. Only reads are offered."""

    def __init__(self, base: Store, extra: dict[str, Store]):
        self.base = base
        self.extra = {check_platform_key(k): s for k, s in extra.items()}
        self.root = base.root

    def of(self, platform: str) -> Store:
        return self.extra.get(platform, self.base)

    def folder(self, platform: str) -> Path:
        """The platform's folder, wherever it is kept."""
        return self.of(platform).root / check_platform_key(platform)

    def platforms(self) -> list[str]:
        mine = [k for k, s in self.extra.items() if k in s.platforms()]
        return sorted(set(self.base.platforms()) - set(self.extra) | set(mine))

    def folder_problems(self) -> dict[str, str]:
        out = {k: v for k, v in self.base.folder_problems().items() if k not in self.extra}
        for k, s in self.extra.items():
            if k in s.folder_problems():
                out[k] = s.folder_problems()[k]
        return out

    def keys(self, platform: str) -> list[str]:
        return self.of(platform).keys(platform)

    def read(self, platform: str, key: str, failed: bool = False) -> Fragment | None:
        return self.of(platform).read(platform, key, failed)

    def corrupt(self, platform: str, key: str) -> str | None:
        return self.of(platform).corrupt(platform, key)

    def corrupt_beside(self, platform: str, key: str) -> str | None:
        return self.of(platform).corrupt_beside(platform, key)

    def skip_problem(self, platform: str, key: str) -> str | None:
        return self.of(platform).skip_problem(platform, key)

    def skip_reason(self, platform: str, key: str) -> str | None:
        return self.of(platform).skip_reason(platform, key)
