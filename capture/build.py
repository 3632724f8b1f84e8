"""Building the Rust experiments: one `cargo build --release --workspace` into the shared target dir,
or prebuilt binaries brought from another machine (see docs/dev/platforms.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from capture.paths import Layout
from capture.versions import rustc_version

BUILD_INFO = "build-info.json"


@dataclass
class Binaries:
    """Where the experiment binaries are and how they were made."""

    dir: Path
    features: list[str]
    rustc: str | None
    prebuilt: bool = False
    info: dict = field(default_factory=dict)
    gpu_devices: dict = field(default_factory=dict)  # framework -> GPU device it was built for

    def path(self, name: str) -> Path:
        return self.dir / name

    def record(self) -> dict:
        return {"features": self.features, "rustc": self.rustc, "prebuilt": self.prebuilt, "profile": "release", **self.info}


class BuildError(RuntimeError):
    def __init__(self, message: str, log: str):
        super().__init__(message)
        self.log = log


TOOLCHAIN_FILE = "rust-toolchain.toml"


def _version(text: str) -> tuple[int, ...] | None:
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    return tuple(int(g) for g in m.groups()) if m else None


def toolchain_problem(layout: Layout) -> str | None:
    """Why the rustc that cargo would use here is too old for the pinned toolchain, or None.

    rustup honours rust-toolchain.toml on its own; this catches a cargo without rustup
    (Debian's, Homebrew's) that is older than what the fragments were built with.
    """
    pin_file = layout.root / TOOLCHAIN_FILE
    if not pin_file.is_file():
        return None
    want = tomllib.loads(pin_file.read_text(encoding="utf-8"))["toolchain"]["channel"]
    try:
        r = subprocess.run(["rustc", "--version"], cwd=layout.crates, capture_output=True, text=True, timeout=60)
    except OSError:
        return f"no rustc on PATH; install Rust {want} with rustup (https://rustup.rs), which reads {TOOLCHAIN_FILE}"
    if r.returncode != 0:
        return f"`rustc --version` failed in {layout.crates}: {(r.stderr or r.stdout).strip()[-300:]}"
    return older_than_pin(r.stdout, want)


def older_than_pin(rustc_version: str, want: str) -> str | None:
    """`rustc --version` output against the pinned version: why it is older, or None."""
    have = _version(rustc_version)
    if have is None:
        return f"cannot read a version in `rustc --version` output {rustc_version.strip()!r}"
    if have < (_version(want) or ()):
        return (f"rustc {'.'.join(map(str, have))} is older than {want}, pinned in {TOOLCHAIN_FILE}; "
                f"install it with `rustup toolchain install {want}` (or put a cargo >= {want} first on PATH)")
    return None


def cargo_build(layout: Layout, features: list[str], log: Path, echo=None) -> Binaries:
    """Build the whole workspace once (features unify, so every crate shares one burn/candle build)."""
    problem = toolchain_problem(layout)
    if problem:
        raise BuildError(f"cannot build the Rust experiments: {problem}", "")
    cmd = ["cargo", "build", "--release", "--workspace", "--locked"]
    if features:
        cmd += ["--features", ",".join(features)]
    env = {**os.environ, "CARGO_TARGET_DIR": str(layout.cargo_target)}
    log.parent.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=layout.crates, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert proc.stdout is not None
        for raw in proc.stdout:
            out.write(raw)
            if echo:
                echo(raw.decode("utf-8", "replace").rstrip())
        proc.wait()
    text = log.read_text(encoding="utf-8", errors="replace")
    if proc.returncode != 0:
        raise BuildError(
            f"cargo build failed (exit {proc.returncode}) after {time.perf_counter() - t:.0f} s; "
            f"full log: {log}; rerun: (cd crates && {' '.join(cmd)})",
            text,
        )
    return Binaries(layout.cargo_target / "release", features, rustc_version())


# The fields of build-info.json and their types; a file that breaks them was not written by build-prebuilt.
_INFO_TYPES = {"features": list, "gpu_devices": dict, "sources_digest": str, "binaries": dict}
_REBUILD = "rebuild it with `python -m capture bundle --out .device` (or `build-prebuilt --out DIR`) on a machine with cargo"


def read_build_info(dir: Path) -> dict:
    """build-info.json of a --prebuilt folder, checked; a located SystemExit when it cannot be used."""
    info_path = dir / BUILD_INFO
    if not dir.is_dir():
        raise SystemExit(f"error: --prebuilt {dir}: no such folder; {_REBUILD}")
    if not info_path.is_file():
        raise SystemExit(f"error: {info_path} missing; prebuilt binaries come from `python -m capture bundle --out .device` "
                         "(or `build-prebuilt --out DIR`) on a machine with cargo")
    try:
        info = json.loads(info_path.read_bytes().decode("utf-8"))
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: {info_path}: not a readable build-info file ({type(e).__name__}: {e}); {_REBUILD}") from None
    if not isinstance(info, dict):
        raise SystemExit(f"error: {info_path}: a JSON {type(info).__name__}, not an object; {_REBUILD}")
    for key, typ in _INFO_TYPES.items():
        if key in info and not isinstance(info[key], typ):
            raise SystemExit(f"error: {info_path}: {key!r} is a {type(info[key]).__name__}, not a {typ.__name__}; {_REBUILD}")
    if not all(isinstance(f, str) for f in info.get("features", [])) or \
            not all(isinstance(k, str) and isinstance(v, str) for k, v in info.get("gpu_devices", {}).items()):
        raise SystemExit(f"error: {info_path}: 'features' and 'gpu_devices' hold strings only; {_REBUILD}")
    return info


def load_prebuilt(dir: Path) -> Binaries:
    info = read_build_info(dir)
    return Binaries(
        dir,
        info.get("features", []),
        info.get("rustc"),
        prebuilt=True,
        info={"built_on": info.get("built_on"), "built_at": info.get("built_at")},
        gpu_devices=info.get("gpu_devices", {}),
    )
