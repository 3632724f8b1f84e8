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

from capture import cudacompiler, llvmkit, wheelkit
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
    # framework -> further GPU devices built in, for experiments that name one (manifest `gpu_device`)
    gpu_variants: dict = field(default_factory=dict)

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
    try:  # burn's cuda links LLVM: the kit from PyPI, checked against Cargo.lock (capture/llvmkit.py)
        kit_env = llvmkit.build_env(layout, features, log=echo or print)
    except wheelkit.KitError as e:
        raise BuildError(f"cannot build the Rust experiments: {e}", "") from None
    env = {**os.environ, "CARGO_TARGET_DIR": str(layout.cargo_target), **kit_env}
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
    return Binaries(layout.cargo_target / "release", features, rustc_version(), info=compiler_record(layout, features, env))


def compiler_record(layout: Layout, features: list[str], env: dict | None = None) -> dict:
    """{cudacompiler.KEY: "llvm" | "cpp"} when burn's CUDA backend is in the build (capture/cudacompiler.py), else {}."""
    if not llvmkit.pulls_burn_cuda(layout.crates, features):
        return {}
    try:
        compiler = cudacompiler.of_build(layout.crates, features, env)
    except (cudacompiler.CompilerUnknown, OSError, ValueError) as e:
        raise BuildError(f"cannot tell which CUDA compiler burn's kernels use: {e}", "") from None
    return {cudacompiler.KEY: compiler} if compiler else {}


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
        info={"built_on": info.get("built_on"), "built_at": info.get("built_at"),
              **({cudacompiler.KEY: info[cudacompiler.KEY]} if info.get(cudacompiler.KEY) else {})},
        gpu_devices=info.get("gpu_devices", {}),
        gpu_variants=info.get("gpu_variants", {}),
    )
