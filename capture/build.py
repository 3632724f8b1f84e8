"""Building the Rust experiments: one `cargo build --release --workspace` into the shared target dir,
or prebuilt binaries brought from another machine (see docs/dev/platforms.md)."""

from __future__ import annotations

import json
import os
import subprocess
import time
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


def cargo_build(layout: Layout, features: list[str], log: Path, echo=None) -> Binaries:
    """Build the whole workspace once (features unify, so every crate shares one burn/candle build)."""
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


def load_prebuilt(dir: Path) -> Binaries:
    info_path = dir / BUILD_INFO
    if not info_path.is_file():
        raise SystemExit(f"error: {info_path} missing: prebuilt binaries come from `python -m capture build-prebuilt`")
    info = json.loads(info_path.read_text(encoding="utf-8"))
    return Binaries(
        dir,
        info.get("features", []),
        info.get("rustc"),
        prebuilt=True,
        info={"built_on": info.get("built_on"), "built_at": info.get("built_at")},
        gpu_devices=info.get("gpu_devices", {}),
    )
