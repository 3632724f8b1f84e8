"""LLVM for burn's CUDA backend, from PyPI, where cubecl-llvm's build looks for it.

burn 0.22.1's `cuda` feature pulls cubecl-cuda 0.11, which always builds cubecl-llvm (the default,
LLVM-to-PTX kernel compiler; the CUDA C++/NVRTC one is compiled too). cubecl-llvm's build dependency
tracel-llvm-bundler downloads a prebuilt LLVM from GitHub unless its install folder,
`$XDG_DATA_HOME/tracel/tracel-llvm-<bundler version>/`, holds a file `.tracel-llvm-installed`; then it
links that folder's LLVM statically, through `bin/llvm-config --link-static`. PyPI's mlc-llvm-static
(with its extra-targets wheel, which brings NVPTX) is static, position-independent LLVM with headers
and an llvm-config (a Python script) that answers exactly that.

So every cargo build whose features turn on burn's `cuda` first lays those wheels out as the
bundler's folder inside the book's cache (once; wheelkit keeps it) and runs with XDG_DATA_HOME
pointing there: no GitHub download, ~/.local/share untouched. The kit stands in for one bundler
version; Cargo.lock is checked against it before anything is built.

Cargo remembers the folder: cubecl-llvm's build script output (the link search path) is cached in
the target dir and only reruns when the sentinel file changes. Keep the kit where it is.
"""

from __future__ import annotations

import re
import shutil
import stat
import subprocess
import tomllib
from pathlib import Path

from capture.toolchains import wheelkit
from capture.storage.paths import Layout, cache_home

BUNDLER = "tracel-llvm-bundler"
BUNDLER_VERSION = "23.1.0-4"  # the Cargo.lock version of the bundler that this kit stands in for
LLVM_SERIES = "23.1"  # the bundler's LLVM (23.1.0) and the wheels' (23.1.1) are of one release series
WHEELS = ("mlc-llvm-static==23.1.1.post0", "mlc-llvm-static-extra-targets==23.1.1.post0")
SENTINEL = ".tracel-llvm-installed"  # what the bundler's build script looks for before downloading
WHEEL_ROOT = "mlc_llvm_static/static"  # the LLVM prefix inside the wheels
TARGET = "NVPTX"  # what cubecl-cuda's LLVM compiler emits
FIX_LOCK = f"(cd crates && cargo update -p {BUNDLER} --precise {BUNDLER_VERSION})"


class LockMismatch(wheelkit.KitError):
    """Cargo.lock pins another bundler than the kit stands in for."""


def data_home() -> Path:
    """The XDG_DATA_HOME of cargo builds that link LLVM: the bundler's folder is below it."""
    return cache_home() / "llvm-data"


def folder(home: Path | None = None) -> Path:
    """Where tracel-llvm-bundler BUNDLER_VERSION looks for its LLVM under `home` (its dirs::data_local_dir())."""
    return (home or data_home()) / "tracel" / f"tracel-llvm-{BUNDLER_VERSION}"


def locked_bundler(lock: Path) -> tuple[str, int] | None:
    """(version, line of its `name = ` entry) of the bundler in Cargo.lock, or None when nothing pulls it."""
    text = lock.read_text(encoding="utf-8")
    versions = [p["version"] for p in tomllib.loads(text).get("package", []) if p.get("name") == BUNDLER]
    if not versions:
        return None
    if len(versions) > 1:
        raise LockMismatch(f"{lock}: {len(versions)} versions of {BUNDLER} are locked ({', '.join(versions)}); "
                           f"the LLVM kit (capture/toolchains/llvmkit.py) stands in for one, {BUNDLER_VERSION}: {FIX_LOCK}")
    m = re.search(rf'(?m)^name = "{re.escape(BUNDLER)}"$', text)
    return versions[0], (text.count("\n", 0, m.start()) + 1) if m else 0


def check_lock(lock: Path) -> bool:
    """True when Cargo.lock pulls the bundler the kit stands in for, False when it pulls none.

    Any other version would download its own LLVM from GitHub in the middle of the build: refused
    here, naming the lock line and the two ways out.
    """
    found = locked_bundler(lock)
    if found is None:
        return False
    version, line = found
    if version != BUNDLER_VERSION:
        wants = version.split("-")[0]
        raise LockMismatch(
            f"{lock}:{line}: {BUNDLER} {version} is locked, but the LLVM kit (capture/toolchains/llvmkit.py) lays out LLVM "
            f"{LLVM_SERIES} from PyPI ({', '.join(WHEELS)}) for {BUNDLER} {BUNDLER_VERSION}; building burn's CUDA "
            f"backend would download LLVM {wants} from GitHub. Either lock the version the kit is for: {FIX_LOCK}, "
            f"or set BUNDLER_VERSION, LLVM_SERIES and WHEELS in capture/toolchains/llvmkit.py to an mlc-llvm-static release of "
            f"LLVM {'.'.join(wants.split('.')[:2])}")
    return True


def install(dest: Path | None = None, log=print) -> Path:
    """The bundler's LLVM folder, laid out once from WHEELS (bin/llvm-config, lib/*.a, include/, sentinel)."""
    dest = dest or folder()
    return wheelkit.install(dest, WHEELS, cache_home() / "llvm-wheels", _lay_out, f"LLVM {LLVM_SERIES} (PyPI)", log)


def _lay_out(unpacked: Path, kit: Path) -> None:
    root = unpacked / WHEEL_ROOT
    if not (root / "bin/llvm-config").is_file():
        raise wheelkit.KitError(f"the wheels {', '.join(WHEELS)} have no {WHEEL_ROOT}/bin/llvm-config: "
                                f"not the layout capture/toolchains/llvmkit.py expects")
    shutil.move(str(root), kit)
    for exe in (kit / "bin").iterdir():
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    check_llvm_config(kit)
    (kit / SENTINEL).touch()


def check_llvm_config(prefix: Path) -> None:
    """The laid-out llvm-config runs (it is a Python script), is of LLVM_SERIES and has the NVPTX target."""
    tool = prefix / "bin/llvm-config"
    try:
        r = subprocess.run([str(tool), "--link-static", "--version", "--targets-built"],
                           capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise wheelkit.KitError(f"cannot run {tool} ({e}); it is a Python script and needs python3 >= 3.10 on PATH")
    lines = r.stdout.split("\n")
    if r.returncode != 0 or len(lines) < 2:
        raise wheelkit.KitError(f"{tool} failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[-400:]}")
    version, targets = lines[0].strip(), lines[1].split()
    if not version.startswith(LLVM_SERIES + "."):
        raise wheelkit.KitError(f"{tool} says LLVM {version}; the kit is for LLVM {LLVM_SERIES} (capture/toolchains/llvmkit.py WHEELS)")
    if TARGET not in targets:
        raise wheelkit.KitError(f"{tool} has no {TARGET} target (targets: {' '.join(targets)}); "
                                f"the extra-targets wheel of WHEELS brings it")


def pulls_burn_cuda(crates: Path, features: list[str]) -> bool:
    """Whether `--features` (`crate/feature`, as cargo_build takes them) turn on burn's `cuda` feature."""
    for spec in features:
        crate, _, feature = spec.partition("/")
        manifest = crates / crate / "Cargo.toml"
        if not feature or not manifest.is_file():
            continue
        table = tomllib.loads(manifest.read_text(encoding="utf-8")).get("features", {})
        seen, todo = set(), [feature]
        while todo:
            f = todo.pop()
            if f in seen:
                continue
            seen.add(f)
            for item in table.get(f, []):
                if item.split("?/")[0].split("/")[0] == "burn" and item.rsplit("/", 1)[-1] == "cuda":
                    return True
                if item in table:  # another feature of the same crate
                    todo.append(item)
    return False


def build_env(layout: Layout, features: list[str], log=print) -> dict[str, str]:
    """What a cargo build of `features` needs in its environment for LLVM: {} when burn's cuda is off.

    Checks Cargo.lock against the kit and installs the kit when it is missing (KitError otherwise).
    """
    if not pulls_burn_cuda(layout.crates, features) or not check_lock(layout.crates / "Cargo.lock"):
        return {}
    install(log=log)
    return {"XDG_DATA_HOME": str(data_home())}
