"""docs/drift.json and the history it is measured from: the one place either is read, checked or written.

capture/evidence/drift.py measures the table and capture/evidence/verdict.py uses it; neither opens a file or
runs git itself. Everything here goes through capture/storage/datafile.py (the repository's data files: a path
inside the repository, regular files only, never a blocking open, atomic replace), so it holds for drift.json
what holds for the fragments.

- Reading (`read`): the table is checked before anyone uses it: its format (a file without a `format` field is
  format 1, the layout `drift.table()` writes; a later layout writes `"format": 2` and a checkout that reads 1
  refuses it), every number finite, every factor a finite number >= 1 (a drift below 1 would narrow a spread,
  NaN would decide every comparison), platform keys well formed, kinds among drift.KINDS. A bad file is one
  DataFileError line, `docs/drift.json:LINE: what; rebuild it with: python -m capture drift`; an absent one is
  None (a throwaway book: the default drift everywhere).
- Writing (`write`): the table is checked the same way first, then replaced atomically: a full disk, a kill or a
  Ctrl-C leaves the old table whole; a symlink in its place is replaced, never followed. `python -m capture drift`
  holds the fragment store's lock while it measures and writes, so a regenerate is not running beside it.
- The history (`require_history`, `git`, `blobs`, `platforms`, `fingerprint`): the drift is measured from every
  committed version of the fragments, so a history that is not all there is refused with what to do (before the
  store's lock or anything else is made), never measured as if it were: a shallow clone (`git fetch --unshallow`), no git or no repository, a repository git refuses to read
  (another user's: `git config --global --add safe.directory PATH`), a platform whose platform.json cannot be
  read (missing, not a regular file, corrupt). Timing values so large or small that a ratio of two of them
  leaves the range a double holds (outside RANGE) are left out of the measure, and `left_out` says which.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from capture.evidence import drift as driftmod  # its names are used at call time (drift.py imports this module)
from capture.machines import identity
from capture.storage import datafile
from capture.storage.datafile import DataFileError, Problem, finite, show
from capture.storage.keys import KeyError_, check_platform_key
from capture.storage.store import Store, StoreUnusable

FORMAT = 1  # the layout of drift.json this checkout reads and writes; format 1 has no `format` field
COMMAND = "python -m capture drift"
REBUILD = f"rebuild it with: {COMMAND}"
FACTORS = ("drift", "max", "p95", "spread_p95", "shared", "run")  # in a kind's row: a factor (>= 1), or null but drift
COUNTS = ("pairs", "records", "reruns", "changed", "shared_pairs", "run_pairs")
TEXTS = ("source", "widest")
PER_FIGURE = ("figures",)  # platform -> label -> factor
RANGE = (1e-30, 1e30)  # timing values a ratio of ratios of stays finite: (1e30 / 1e-30) ** 2 < 1e308
NEED = "the drift is measured from every committed version of docs/_fragments (git log)"


class HistoryMissing(StoreUnusable):
    """The git history the drift is measured from is not all there, or cannot be read: the message says why and
    what to do. Nothing is measured, nothing is written."""


def path(root: Path) -> Path:
    return Path(root) / driftmod.DATA


# -- the table -----------------------------------------------------------------------------------------------
def read(root: Path) -> dict | None:
    """The committed drift table, checked; None when there is none. DataFileError for a bad one."""
    return datafile.read_json(path(root), Path(root), REBUILD, problem, "drift table")


def write(root: Path, data: dict) -> tuple[Path, str | None]:
    """Replace docs/drift.json with `data` (checked first, in the layout drift.py always wrote: indent 1, keys
    sorted, UTF-8); (its path, a note when what it replaced was not a regular file)."""
    p = path(root)
    bad = problem(data)
    if bad is not None:  # the estimator made a table no reader would accept: say so, write nothing
        where = ".".join(str(k) for k in bad.keys)
        raise DataFileError(p, f"not written: the table measured has {where or 'itself'} wrong ({bad.why})",
                            "nothing was written; report it (capture/evidence/driftfile.py refused it)")
    note = datafile.write_json(p, Path(root), data, indent=1, sort_keys=True, ensure_ascii=False)
    return p, note


def _factor(value: object, keys: tuple, nullable: bool = False) -> Problem | None:
    if value is None and nullable:
        return None
    f = finite(value)
    if f is None or f < 1:
        where = ".".join(str(k) for k in keys)
        return Problem(keys, f"{where} is {show(value)}, not a factor (a finite number >= 1)")
    return None


def _object(value: object, keys: tuple, what: str) -> Problem | None:
    if not isinstance(value, dict):
        return Problem(keys, f"{'.'.join(str(k) for k in keys) or 'the file'} is {show(value)}, not an object ({what})")
    return None


def _platform(key: object, keys: tuple) -> Problem | None:
    try:
        check_platform_key(key, "platform")  # type: ignore[arg-type]
    except KeyError_ as e:
        return Problem(keys, str(e))
    return None


def _numbers(value: object, keys: tuple) -> Problem | None:
    """Every number under `value` finite (a field this checkout does not know may still hold NaN)."""
    stack = [(value, keys)]
    while stack:
        v, k = stack.pop()
        if isinstance(v, dict):
            stack += [(x, k + (name,)) for name, x in v.items()]
        elif isinstance(v, list):
            stack += [(x, k + (i,)) for i, x in enumerate(v)]
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and finite(v) is None:
            return Problem(k, f"{'.'.join(str(x) for x in k)} is {show(v)}, not a finite number")
    return None


def problem(data: object) -> Problem | None:
    """What is wrong with a drift table (the first thing found), or None. Fields this checkout does not know are
    left alone but for their numbers, which must be finite."""
    if (bad := _object(data, (), "a drift table")) is not None:
        return bad
    assert isinstance(data, dict)
    fmt = data.get("format", FORMAT)
    if isinstance(fmt, bool) or not isinstance(fmt, int) or fmt < 1:
        return Problem(("format",), f"format is {show(fmt)}, not a format number")
    if fmt > FORMAT:
        return Problem(("format",), f"format {fmt}: made by a newer capture/ than this checkout, which reads format {FORMAT}",
                       f"update this checkout (git pull), or rebuild it here with: {COMMAND}")
    if "about" in data and not isinstance(data["about"], str):
        return Problem(("about",), f"about is {show(data['about'])}, not text")
    if "default" in data and (bad := _factor(data["default"], ("default",))):
        return bad
    if "platforms" not in data:
        return Problem((), "it has no 'platforms' (the drift per platform and kind)")
    plats = data["platforms"]
    if (bad := _object(plats, ("platforms",), "platform -> kind -> its drift")) is not None:
        return bad
    for plat, rows in plats.items():
        keys = ("platforms", plat)
        if (bad := _platform(plat, keys) or _object(rows, keys, "kind -> its drift")) is not None:
            return bad
        for kind, row in rows.items():
            k = keys + (kind,)
            if kind not in driftmod.KINDS:
                return Problem(k, f"platforms.{plat}: unknown kind {kind!r} (the kinds: {', '.join(driftmod.KINDS)})")
            if (bad := _object(row, k, "the kind's drift and what it was measured from")) is not None:
                return bad
            if "drift" not in row:
                return Problem(k, f"platforms.{plat}.{kind} has no 'drift'")
            for name in FACTORS:
                if name in row and (bad := _factor(row[name], k + (name,), nullable=name != "drift")):
                    return bad
            for name in COUNTS:
                n = row.get(name, 0)
                if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                    return Problem(k + (name,), f"platforms.{plat}.{kind}.{name} is {show(n)}, not a count")
            for name in TEXTS:
                if name in row and not isinstance(row[name], str):
                    return Problem(k + (name,), f"platforms.{plat}.{kind}.{name} is {show(row[name])}, not text")
    for section in PER_FIGURE:
        if section not in data:
            continue
        if (bad := _object(data[section], (section,), "platform -> figure -> its own drift")) is not None:
            return bad
        for plat, figs in data[section].items():
            keys = (section, plat)
            if (bad := _platform(plat, keys) or _object(figs, keys, "figure -> its own drift")) is not None:
                return bad
            for label, f in figs.items():
                if (bad := _factor(f, keys + (label,))) is not None:
                    return bad
    if "history" in data and (bad := _history(data["history"])) is not None:
        return bad
    return _numbers(data, ())


def _history(hist: object) -> Problem | None:
    """`history`: platform -> {captures: [[experiment@role, started, run number], ...], figures: {label: [[index into
    captures, [repeats > 0, ...]], ...]}} (drift.history_table), the shape verdict.PlatformDrift reads."""
    if (bad := _object(hist, ("history",), "platform -> its captures and figures")) is not None:
        return bad
    assert isinstance(hist, dict)
    for plat, table in hist.items():
        keys = ("history", plat)
        if (bad := _platform(plat, keys) or _object(table, keys, "captures and figures")) is not None:
            return bad
        caps = table.get("captures", [])
        if not isinstance(caps, list) or not all(
                isinstance(c, list) and len(c) == 3 and isinstance(c[0], str) and isinstance(c[1], str)
                and isinstance(c[2], int) and not isinstance(c[2], bool) for c in caps):
            return Problem(keys + ("captures",), f"history.{plat}.captures is not a list of [experiment@role, started, "
                                                 "run number]")
        figs = table.get("figures", {})
        if (bad := _object(figs, keys + ("figures",), "figure -> its captures")) is not None:
            return bad
        for label, entries in figs.items():
            ok = isinstance(entries, list) and all(
                isinstance(e, list) and len(e) == 2 and isinstance(e[0], int) and not isinstance(e[0], bool)
                and 0 <= e[0] < len(caps) and isinstance(e[1], list) and e[1]
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in e[1]) for e in entries)
            if not ok:
                return Problem(keys + ("figures", label), f"history.{plat}.figures[{label!r}] is not a list of [index "
                                                          "into captures, [its repeats, each > 0]]")
    return None


# -- the history ---------------------------------------------------------------------------------------------
_whole: set[str] = set()  # repositories found whole in this process


def _run(root: Path, args: tuple[str, ...], stdin: bytes | None = None) -> bytes:
    try:
        p = subprocess.run(["git", "-C", str(root), *args], input=stdin, capture_output=True)
    except FileNotFoundError:
        raise HistoryMissing(f"git is not installed here (or not on PATH): {NEED}; install git, then run the command "
                             "again") from None
    except OSError as e:
        raise HistoryMissing(f"git cannot be run ({e.strerror or e}): {NEED}") from None
    if p.returncode != 0:
        raise HistoryMissing(_refusal(root, args, p.stderr.decode("utf-8", "replace")))
    return p.stdout


def _refusal(root: Path, args: tuple[str, ...], err: str) -> str:
    """git's refusal, in one line with what to do."""
    if "dubious ownership" in err:
        m = re.search(r"repository at '([^']+)'", err)
        where = m.group(1) if m else str(root)
        return (f"git refuses to read the repository at {where}: it belongs to another user (git's safe.directory "
                f"check), and {NEED}; if you trust it: git config --global --add safe.directory {where}, then run "
                "the command again")
    if "not a git repository" in err.lower():
        return (f"{root} is not in a git repository (no .git): {NEED}; run it in a clone of the book "
                "(git clone, not a copy of the files)")
    if "does not have any commits" in err:
        return f"the repository at {root} has no commits yet: {NEED}; commit the fragments first"
    said = next((line.strip() for line in err.splitlines() if line.strip()), f"exit status {err!r}")
    return f"git {' '.join(args)} failed in {root} ({said}): {NEED}"


def _whole_history(root: Path) -> None:
    """Refuse a repository whose history is not all there (a shallow clone), or that git cannot read."""
    key = str(Path(root).resolve())
    if key in _whole:
        return
    if _run(root, ("rev-parse", "--is-shallow-repository")).decode().strip() == "true":
        raise HistoryMissing(f"{root} is a shallow clone (git clone --depth): it holds only the latest commits, and "
                             f"{NEED}; fetch the whole history with: git -C {root} fetch --unshallow, then run the "
                             "command again")
    _whole.add(key)


def require_history(root: Path) -> list[str]:
    """Everything the measure needs, checked before anything is locked or measured: the whole history, and every
    platform with a platform.json that can be read (its platforms)."""
    _whole_history(root)
    return platforms(root)


def git(root: Path, *args: str) -> str:
    """The output of a git command that reads the book's history, after checking that the history is all there."""
    _whole_history(root)
    return _run(root, args).decode("utf-8", "replace")


def blobs(root: Path, ids: list[str]) -> dict[str, dict]:
    """Parsed JSON objects of git blobs, read in one `git cat-file --batch` (one that is not a JSON object is left
    out, as a capture that cannot be read)."""
    if not ids:
        return {}
    _whole_history(root)
    out = _run(root, ("cat-file", "--batch"), ("\n".join(ids) + "\n").encode())
    parsed, pos = {}, 0
    for blob in ids:
        header_end = out.index(b"\n", pos)
        header = out[pos:header_end].split()
        size = int(header[2]) if len(header) == 3 else 0
        body = out[header_end + 1: header_end + 1 + size]
        pos = header_end + 1 + size + (1 if len(header) == 3 else 0)
        try:
            meta = json.loads(body)
        except (ValueError, RecursionError):
            continue
        if isinstance(meta, dict):
            parsed[blob] = meta
    return parsed


def _store(root: Path) -> Store:
    return Store(Path(root) / "docs" / "_fragments")


def platforms(root: Path) -> list[str]:
    """Every platform of the fragment store, each with a platform.json that can be read; HistoryMissing names the
    first that cannot be measured (a platform left out would silently lose its drift)."""
    store = _store(root)
    broken = store.folder_problems()
    if broken:
        name, why = min(broken.items())
        raise HistoryMissing(f"platform {name}: {why}; the drift of every platform is measured together")
    names = store.platforms()
    if not names:
        raise HistoryMissing(f"no platform folders in {store.root}: nothing to measure the drift of; restore them "
                             f"(git -C {root} checkout -- docs/_fragments), then run the command again")
    for name in names:
        fingerprint(root, name)
    return names


def fingerprint(root: Path, platform: str) -> dict | None:
    """The recorded fingerprint of the platform's machine (platform.json's `fingerprint`; None in files written before
    fingerprints were), which tells its own captures from other hosts'. HistoryMissing when platform.json cannot be
    read: the drift cannot tell whose captures are whose without it."""
    store = _store(root)
    rel = f"docs/_fragments/{platform}/{identity.FILE}"
    restore = f"restore it (git -C {root} checkout -- {rel}), or regenerate on that machine, then run the command again"
    try:
        ident = identity.read(store.root, platform)
    except (identity.IdentityError, KeyError_) as e:
        raise HistoryMissing(f"{e}; the drift of {platform} is measured from its own machine's captures, which its "
                             "platform.json tells from other hosts'") from None
    if ident is None:
        raise HistoryMissing(f"{store.root / platform / identity.FILE} is missing: the drift of {platform} is measured "
                             f"from its own machine's captures, which its platform.json tells from other hosts'; {restore}")
    fp = ident.fingerprint
    if fp is not None and not isinstance(fp, dict):
        raise HistoryMissing(f"{store.root / platform / identity.FILE}: 'fingerprint' is {show(fp)}, not an object; {restore}")
    return fp


left_out: dict[tuple, str] = {}  # timing records out of RANGE seen while measuring: (name, value) -> what, for a note


def in_range(record: dict) -> bool:
    """Whether a timing record's value lies in RANGE, where every ratio the drift takes stays finite; one outside
    is left out of the measure (and remembered in `left_out`)."""
    v = record.get("value")
    if RANGE[0] <= v <= RANGE[1]:  # type: ignore[operator]
        return True
    name = str(record.get("name"))
    left_out.setdefault((name, repr(v)), f"{name} = {show(v) if isinstance(v, int) else f'{v:g}'} {record.get('unit', '')}".rstrip())
    return False


def left_out_note() -> str:
    """One line on the timing records `in_range` left out ('' when none was)."""
    if not left_out:
        return ""
    seen = list(left_out.values())
    more = f" and {len(seen) - 4} more" if len(seen) > 4 else ""
    return (f"{len(seen)} timing record(s) left out of the drift: their values lie outside {RANGE[0]:g}..{RANGE[1]:g}, "
            f"where a ratio of two of them leaves the range a double holds ({'; '.join(seen[:4])}{more}); "
            "correct or re-capture those fragments")


def unchanged(root: Path, data: dict) -> bool:
    """Whether the committed table (read and checked: DataFileError when it is bad) is the one measured."""
    return read(root) == json.loads(json.dumps(data))


def scratch_clean(root: Path) -> None:
    """Forget what an earlier measure in this process saw (left_out, repositories checked)."""
    left_out.clear()
    _whole.discard(str(Path(root).resolve()))


__all__ = ["FORMAT", "COMMAND", "REBUILD", "RANGE", "HistoryMissing", "DataFileError", "path", "read", "write",
           "problem", "require_history", "git", "blobs", "platforms", "fingerprint", "in_range", "left_out_note",
           "unchanged", "scratch_clean"]
