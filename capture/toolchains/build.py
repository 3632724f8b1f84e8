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

from capture.toolchains import cudacompiler, llvmkit, wheelkit
from capture.storage.paths import Layout
from capture.machines.versions import rustc_version

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
    # package -> when the cargo step that built it finished ("*": a workspace build); a binary in the
    # shared target dir that is newer than that was written by another build since (capture/toolchains/prebuilt.py)
    finished: dict = field(default_factory=dict)

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


# The pinned framework a workspace member builds on, by its dependencies: one cargo build per framework.
FRAMEWORK_DEPS = (("burn", "burn"), ("candle-core", "candle"))


def member_frameworks(layout: Layout) -> dict[str, str]:
    """Workspace member (package name) -> "burn" | "candle" | "other", read from the Cargo.toml files."""
    ws = tomllib.loads((layout.crates / "Cargo.toml").read_text(encoding="utf-8"))
    out = {}
    for member in ws["workspace"]["members"]:
        toml = tomllib.loads((layout.crates / member / "Cargo.toml").read_text(encoding="utf-8"))
        deps = set(toml.get("dependencies", {}))
        for table in toml.get("target", {}).values():
            deps |= set(table.get("dependencies", {}))
        out[toml["package"]["name"]] = next((fw for dep, fw in FRAMEWORK_DEPS if dep in deps), "other")
    return out


@dataclass(frozen=True)
class CargoStep:
    packages: tuple[str, ...]  # `-p` each; empty: --workspace
    features: tuple[str, ...]

    @property
    def cmd(self) -> list[str]:
        sel = [a for m in self.packages for a in ("-p", m)] or ["--workspace"]
        return ["cargo", "build", "--release", "--locked", *sel, *(["--features", ",".join(self.features)] if self.features else [])]


def cargo_steps(layout: Layout, features: list[str]) -> list[CargoStep]:
    """The whole workspace in one build without features; with GPU features, one build per framework
    (`-p` its members, only their features).

    Each framework's GPU stack is built as a user of that framework alone gets it: in one workspace
    build, cargo would unify candle 0.11.0's cudarc feature `dynamic-linking` into burn's cubecl-cuda
    0.11.3, which then fails to compile (it calls cudarc's `is_culib_present`, which exists only with
    `dynamic-loading`). The CPU build stays one build, and its binaries are what they always were.
    """
    if not features:
        return [CargoStep((), ())]
    groups: dict[str, list[str]] = {}
    for name, framework in sorted(member_frameworks(layout).items()):
        groups.setdefault(framework, []).append(name)
    return [CargoStep(tuple(members), tuple(f for f in features if f.split("/", 1)[0] in members))
            for _, members in sorted(groups.items())]


def feature_target(layout: Layout, crate: str, extra: tuple[str, ...]) -> Path:
    """The target dir of a build with an experiment's own features: apart from the shared one, so the
    binaries every other experiment runs are never rebuilt with them."""
    return layout.cargo_target / "features" / f"{crate}+{'+'.join(extra)}"


def feature_build(layout: Layout, crate: str, platform_features: list[str], extra: tuple[str, ...],
                  log: Path, echo=None) -> Binaries:
    """`crate` built with the platform's features for it plus `extra` (manifest `features`), alone."""
    feats = tuple(f for f in platform_features if f.split("/", 1)[0] == crate) + tuple(f"{crate}/{f}" for f in extra)
    return cargo_build(layout, list(feats), log, echo, steps=[CargoStep((crate,), feats)],
                       target=feature_target(layout, crate, extra))


def cargo_build(layout: Layout, features: list[str], log: Path, echo=None, *,
                steps: list[CargoStep] | None = None, target: Path | None = None) -> Binaries:
    """Build every experiment binary into the shared target dir: one cargo build, or one per framework
    when GPU features are on (cargo_steps). Binaries land in target/release either way.
    `steps` and `target` are for feature_build: other cargo invocations into another target dir."""
    target = target or layout.cargo_target
    problem = toolchain_problem(layout)
    if problem:
        raise BuildError(f"cannot build the Rust experiments: {problem}", "")
    try:  # burn's cuda links LLVM: the kit from PyPI, checked against Cargo.lock (capture/toolchains/llvmkit.py)
        kit_env = llvmkit.build_env(layout, features, log=echo or print)
    except wheelkit.KitError as e:
        raise BuildError(f"cannot build the Rust experiments: {e}", "") from None
    env = {**os.environ, "CARGO_TARGET_DIR": str(target), **kit_env}
    log.parent.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    info: dict = {}
    finished: dict = {}
    with open(log, "wb") as out:
        for step in steps or cargo_steps(layout, features):
            cmd = step.cmd
            out.write(f"$ {' '.join(cmd)}\n".encode())
            out.flush()
            proc = subprocess.Popen(cmd, cwd=layout.crates, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            assert proc.stdout is not None
            for raw in proc.stdout:
                out.write(raw)
                if echo:
                    echo(raw.decode("utf-8", "replace").rstrip())
            proc.wait()
            if proc.returncode != 0:
                out.close()
                raise BuildError(
                    f"cargo build failed (exit {proc.returncode}) after {time.perf_counter() - t:.0f} s; "
                    f"full log: {log}; rerun: (cd crates && {' '.join(cmd)})",
                    log.read_text(encoding="utf-8", errors="replace"),
                )
            info.update(compiler_record(layout, list(step.features), env, list(step.packages) or None))
            finished.update({p: time.time() for p in step.packages or ("*",)})
    return Binaries(target / "release", features, rustc_version(), info=info, finished=finished)


def compiler_record(layout: Layout, features: list[str], env: dict | None = None,
                    packages: list[str] | None = None, offline: bool = True) -> dict:
    """{cudacompiler.KEY: "llvm" | "cpp"} when burn's CUDA backend is in the build (capture/toolchains/cudacompiler.py), else {}."""
    if not llvmkit.pulls_burn_cuda(layout.crates, features):
        return {}
    try:
        compiler = cudacompiler.of_build(layout.crates, features, env, packages, offline)
    except (cudacompiler.CompilerUnknown, OSError, ValueError) as e:
        raise BuildError(f"cannot tell which CUDA compiler burn's kernels use: {e}", "") from None
    return {cudacompiler.KEY: compiler} if compiler else {}


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
        info={"built_on": info.get("built_on"), "built_at": info.get("built_at"),
              **({cudacompiler.KEY: info[cudacompiler.KEY]} if info.get(cudacompiler.KEY) else {})},
        gpu_devices=info.get("gpu_devices", {}),
        gpu_variants=info.get("gpu_variants", {}),
    )
