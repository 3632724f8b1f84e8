"""Toolkits laid out from pinned PyPI wheels, once: the CUDA compiler that builds candle's kernels
(capture/toolchains/cudakit.py) and the LLVM that burn's CUDA backend links (capture/toolchains/llvmkit.py).

A kit folder is complete when its stamp file lists exactly the pinned wheels: then nothing is
downloaded or unpacked again. A changed pin lays the folder out anew, from the wheel cache when the
wheels are already there (pip downloads only the missing ones). The folder is built beside its place
and moved in whole with its stamp, so an interrupted install leaves no half kit that looks complete.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Callable, Sequence

STAMP = ".book-kit"  # the pinned wheels a kit folder was laid out from, one a line


class KitError(RuntimeError):
    """A kit that cannot be installed; the message says what to do."""


def wheel_name(spec: str) -> tuple[str, str]:
    """`name==version` -> (file-name form of the name, version); any other form is a programming error."""
    name, sep, version = spec.partition("==")
    if not sep or not name or not version:
        raise ValueError(f"wheel pin {spec!r} must be name==version")
    return re.sub(r"[-_.]+", "_", name).lower(), version


def wheel_file(folder: Path, spec: str) -> Path | None:
    """The downloaded wheel for a pin in `folder`, or None."""
    name, version = wheel_name(spec)
    hits = sorted(p for p in folder.glob("*.whl") if p.name.lower().startswith(f"{name}-{version}-"))
    return hits[0] if hits else None


def fetch(specs: Sequence[str], folder: Path, log=print) -> list[Path]:
    """The wheels of `specs` in `folder`, downloading (no dependencies) only those not there yet."""
    folder.mkdir(parents=True, exist_ok=True)
    missing = [s for s in specs if wheel_file(folder, s) is None]
    if missing:
        log(f"downloading {len(missing)} wheel(s) from PyPI into {folder}: {' '.join(missing)}")
        download(missing, folder)
    found = [wheel_file(folder, s) for s in specs]
    lost = [s for s, f in zip(specs, found) if f is None]
    if lost:
        raise KitError(f"pip reported success but no wheel for {' '.join(lost)} is in {folder} "
                       f"(is there a wheel for this machine's platform on PyPI?)")
    return [f for f in found if f is not None]


def download(specs: Sequence[str], folder: Path) -> None:
    """pip download of exactly these pins (no dependencies) into `folder`."""
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(folder), *specs]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise KitError(f"`{' '.join(cmd)}` failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[-800:]}; "
                       f"PyPI must be reachable once (later builds use {folder}), and {sys.executable} needs pip")


def installed(dest: Path, specs: Sequence[str]) -> bool:
    stamp = dest / STAMP
    return stamp.is_file() and stamp.read_text(encoding="utf-8").split() == list(specs)


def install(dest: Path, specs: Sequence[str], wheels: Path, lay_out: Callable[[Path, Path], None],
            what: str, log=print) -> Path:
    """Lay out `dest` from the wheels of `specs` (cached in `wheels`) unless it already holds them.

    `lay_out(unpacked, kit)` builds the kit folder `kit` from the wheels' contents unpacked in
    `unpacked` (it may move things out of it); it raises KitError when the result is not usable.
    """
    if installed(dest, specs):
        return dest
    files = fetch(specs, wheels, log)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{dest.name}.") as tmp:
        unpacked, kit = Path(tmp) / "unpacked", Path(tmp) / "kit"
        for f in files:
            with zipfile.ZipFile(f) as z:
                z.extractall(unpacked)
        lay_out(unpacked, kit)
        (kit / STAMP).write_text("".join(s + "\n" for s in specs), encoding="utf-8")
        if dest.exists() or dest.is_symlink():
            shutil.rmtree(dest) if dest.is_dir() and not dest.is_symlink() else dest.unlink()
        kit.rename(dest)
    log(f"{what} ready at {dest}")
    return dest
