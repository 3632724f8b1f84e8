"""Which Python the nox sessions run on: a CPython that every wheel in uv.lock exists for.

pyproject.toml declares those versions as classifiers (tests/unit/test_pythons.py keeps them equal to
what uv.lock's wheels support; sphinx-rust 0.0.2 is the narrow one: cp311 and cp312 only). When the
Python that runs nox is one of them, the sessions use it. Otherwise uv finds one on this machine, or
downloads one where it can (python-build-standalone, from GitHub); where neither works and cargo is
here, the running Python is kept and the few packages without a wheel for it are built from their
sdists (sphinx-rust's PyO3 0.21 needs PYO3_USE_ABI3_FORWARD_COMPATIBILITY=1 above 3.12). If none of
that is possible the sessions stop with a message that names the fix.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

# the platforms the book is regenerated on: an author's Apple silicon Mac, Linux x86_64 (CPU, NVIDIA)
PLATFORMS = {
    "macOS arm64": lambda tag: tag.startswith("macosx_") and tag.endswith(("_arm64", "_universal2")),
    "Linux x86_64": lambda tag: tag.startswith(("manylinux", "linux_")) and tag.endswith("_x86_64"),
}
FORWARD_COMPAT = {"PYO3_USE_ABI3_FORWARD_COMPATIBILITY": "1"}


def declared(pyproject: dict) -> list[str]:
    """The "Programming Language :: Python :: 3.X" classifiers, oldest first."""
    out = [c.rsplit("::", 1)[1].strip() for c in pyproject.get("project", {}).get("classifiers", [])
           if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    return sorted(out, key=lambda v: tuple(map(int, v.split("."))))


def _wheel_tags(url: str) -> tuple[str, str, list[str]]:
    name = url.rsplit("/", 1)[1].removesuffix(".whl")
    py, abi, plat = name.split("-")[-3:]
    return py, abi, plat.split(".")


def _supports(py: str, abi: str, minor: int) -> bool:
    """Whether a wheel with these tags installs on CPython 3.minor (free-threaded builds aside)."""
    tags = py.split(".")
    if any(t in ("py3", "py2.py3") or t.startswith("py3") for t in tags) and abi == "none":
        return True
    for t in tags:
        m = re.fullmatch(r"cp3(\d+)", t)
        if not m:
            continue
        if abi == "abi3" and int(m.group(1)) <= minor:
            return True
        if abi in (f"cp3{minor}", "none") and int(m.group(1)) == minor:
            return True
    return False


_PY_MARKER = re.compile(r"python_full_version\s*(==|>=|<|<=|>|!=)\s*'3\.(\d+)(?:\.\*)?'")


def _marker_allows(marker: str, minor: int) -> bool:
    """Whether a dependency marker can hold on CPython 3.minor (only its python_full_version terms are read)."""
    terms = _PY_MARKER.findall(marker or "")
    if not terms or " or " in (marker or ""):
        return True
    ops = {"==": minor.__eq__, ">=": minor.__ge__, "<": minor.__lt__, "<=": minor.__le__, ">": minor.__gt__, "!=": minor.__ne__}
    return all(ops[op](int(v)) for op, v in terms)


def _needed(lock: dict, minor: int) -> set[str]:
    """Names of the locked packages that some dependency edge needs on CPython 3.minor."""
    edges: dict[str, list[str]] = {}
    for pkg in lock.get("package", []):
        deps = list(pkg.get("dependencies", []))
        for group in (pkg.get("optional-dependencies") or {}).values():
            deps += group
        for group in (pkg.get("dev-dependencies") or {}).values():
            deps += group
        for d in deps:
            edges.setdefault(d["name"], []).append(d.get("marker", ""))
    return {name for name, markers in edges.items() if any(_marker_allows(m, minor) for m in markers)}


def missing_wheels(lock: dict, minor: int) -> list[str]:
    """Packages of uv.lock ("name version") without a wheel for CPython 3.minor on one of PLATFORMS
    (packages needed only on other Python versions, by their dependency markers, do not count)."""
    out = set()
    needed = _needed(lock, minor)
    for pkg in lock.get("package", []):
        if needed and pkg["name"] not in needed and pkg.get("source", {}).get("editable") is None \
                and pkg.get("source", {}).get("virtual") is None:
            continue
        wheels = [_wheel_tags(w["url"]) for w in pkg.get("wheels", [])]
        if not wheels:  # sdist only (pure Python, e.g. jieba) or the project itself
            continue
        if any(_supports(py, abi, minor) and "any" in plats for py, abi, plats in wheels):
            continue
        for matches in PLATFORMS.values():
            here = [(py, abi) for py, abi, plats in wheels if any(matches(p) for p in plats)]
            if here and not any(_supports(py, abi, minor) for py, abi in here):
                out.add(f"{pkg['name']} {pkg['version']}")
    return sorted(out)


def lock_supported(lock: dict, lowest: int = 11, highest: int = 20) -> list[str]:
    """The CPython versions 3.lowest..3.highest for which every locked package has a wheel everywhere."""
    return [f"3.{m}" for m in range(lowest, highest + 1) if not missing_wheels(lock, m)]


@dataclass
class Choice:
    """The interpreter for the sessions' venvs (None: the one running nox) and what to tell the user."""

    python: str | None
    env: dict = field(default_factory=dict)  # extra environment for `uv sync`
    note: str = ""  # logged when the sessions start
    error: str = ""  # the sessions refuse to run, with this message


def _uv() -> str:
    try:
        from uv import find_uv_bin  # the uv that was installed next to nox

        return find_uv_bin()
    except ImportError:
        return shutil.which("uv") or "uv"


def uv_find(version: str) -> str | None:
    r = subprocess.run([_uv(), "python", "find", "--no-project", version], capture_output=True, text=True)
    path = r.stdout.strip()
    return path if r.returncode == 0 and path else None


def uv_install(version: str) -> tuple[bool, str]:
    """Download a managed CPython; fails fast (no retries) where its host cannot be reached."""
    if os.environ.get("UV_PYTHON_DOWNLOADS") in ("never", "manual"):
        return False, "UV_PYTHON_DOWNLOADS forbids downloads"
    env = {**os.environ, "UV_HTTP_RETRIES": "0"}
    r = subprocess.run([_uv(), "python", "install", version], capture_output=True, text=True, env=env)
    lines = [s.strip() for s in r.stderr.splitlines() if s.strip()]
    return r.returncode == 0, (lines[-1] if lines else f"exit {r.returncode}")


def choose(root: Path, running: tuple[int, int] = sys.version_info[:2], find=uv_find, install=uv_install,
           cargo: str | None = None) -> Choice:
    """The Python for the sessions of the checkout at `root` (see the module docstring)."""
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    versions = declared(pyproject)
    here = f"{running[0]}.{running[1]}"
    if here in versions:
        return Choice(None)
    newest_first = versions[::-1]
    for v in newest_first:
        if path := find(v):
            return Choice(path, note=f"nox runs on Python {here}; the sessions use Python {v} ({path}), "
                                     f"the newest of {', '.join(versions)} found here")
    ok, why = install(newest_first[0])
    if ok and (path := find(newest_first[0])):
        return Choice(path, note=f"nox runs on Python {here}; uv downloaded Python {newest_first[0]} for the sessions")
    lock = tomllib.loads((root / "uv.lock").read_text(encoding="utf-8"))
    missing = missing_wheels(lock, running[1]) if running[0] == 3 else ["(Python 2)"]
    lowest = pyproject["project"].get("requires-python", ">=3.11").removeprefix(">=")
    too_old = running < tuple(map(int, lowest.split(".")[:2]))
    cargo = cargo if cargo is not None else shutil.which("cargo")
    if not too_old and cargo:
        return Choice(None, env=FORWARD_COMPAT, note=(
            f"no Python {' or '.join(versions)} here and uv could not download one ({why}); staying on "
            f"Python {here} and building from source what has no wheel for it: {', '.join(missing)} "
            "(PYO3_USE_ABI3_FORWARD_COMPATIBILITY=1, with cargo; once per uv cache). "
            f"For the locked wheels install Python {newest_first[0]} (docs/dev/platforms.md)"))
    fix = (f"install Python {newest_first[0]}: on macOS `brew install python@{newest_first[0]}` or the "
           f"python.org installer, on Linux your package manager or `uv python install {newest_first[0]}`; "
           "then run the same command again (the sessions find it by themselves)")
    if not too_old:
        fix += "; or install Rust (https://rustup.rs) to build the missing wheels for this Python"
    return Choice(None, error=(
        f"this book's sessions need CPython {' or '.join(versions)} (pyproject.toml classifiers: every "
        f"locked wheel exists for them), and nox runs on Python {here}"
        + (f", for which {', '.join(missing)} {'has' if len(missing) == 1 else 'have'} no wheel"
           if missing and not too_old else "")
        + f". None was found here and uv could not download one ({why}). Fix: {fix}"))
