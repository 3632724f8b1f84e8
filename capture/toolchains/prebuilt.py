"""Binaries for a machine that cannot build: build here for its GPU, stamp them, check the stamp there.

    python -m capture build-prebuilt --gpu cuda --out .device/bin     (here: has cargo; `bundle` packs it too)
    python -m capture regenerate --prebuilt .device/bin --python python3   (there: no cargo)

build-info.json records the features, rustc, where and when it was built, and a digest of
every Rust source; `regenerate --prebuilt` refuses binaries whose sources differ from the
checkout's, so a fragment never claims inputs that were not what ran.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from capture.toolchains import build as buildmod
from capture.plan.inputs import file_digest
from capture.plan.manifest import load
from capture.storage.paths import Layout
from capture.machines.platform import detect
from capture.machines.roles import candle_cuda_buildable, nvidia_build


def sources_digest(layout: Layout) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in layout.crates.rglob("*") if p.is_file() and "target" not in p.relative_to(layout.crates).parts)
    for f in files:
        h.update(f"{layout.rel(f)}\0{file_digest(f)}\n".encode())
    return h.hexdigest()[:16]


def build_prebuilt(layout: Layout, gpu: str, out: Path, echo=print, candle_cuda: bool = False) -> dict:
    if candle_cuda:
        from capture.toolchains import cudakit

        subprocess.run(["cargo", "fetch", "--locked"], cwd=layout.crates, check=True)
        os.environ.update(cudakit.build_env(cudakit.install(log=echo)))
    manifest = load(layout.manifest)
    crates = {e.build_crate: e.framework for e in manifest.experiments if e.build_crate}
    if "candle" in crates.values() and not candle_cuda_buildable():
        echo(f"note: candle without {gpu}: its CUDA kernels need nvcc at build time (none found; --candle-cuda brings one)")
    plan = nvidia_build(crates, layout.crates, candle_cuda_buildable())
    feats = plan.features
    # The shared target dir: cargo keys artifacts by features, so the CPU build's artifacts stay and
    # whatever the GPU features leave unchanged is reused. That is less than one would hope: through
    # feature unification the GPU crates change the features of low-level crates (proc-macro2, serde,
    # syn...), which rebuilds most of their dependents, candle included (docs/dev/platforms.md, "first
    # bundle"). The binaries in target/release are now the GPU ones: copy them out at once; the next
    # CPU build links its own (fresh) ones back into place.
    bins = buildmod.cargo_build(layout, feats, layout.scratch / f"cargo-build-{gpu}.log", echo=echo)
    out.mkdir(parents=True, exist_ok=True)
    packages = {e.binary: e.build_crate for e in manifest.experiments if e.build_crate}
    names = sorted(packages)
    for name in names:
        overwritten(bins, name, packages[name])
        shutil.copy2(bins.path(name), out / name)
    info = {
        "features": feats,
        "gpu_devices": plan.gpu_devices,
        "gpu_variants": plan.gpu_variants,
        **bins.info,  # which compiler burn's CUDA kernels use (capture/toolchains/cudacompiler.py)
        "rustc": bins.rustc,
        "built_on": detect().key,
        "built_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "sources_digest": sources_digest(layout),
        "binaries": {n: (out / n).stat().st_size for n in names},
    }
    (out / buildmod.BUILD_INFO).write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return info


def overwritten(bins: buildmod.Binaries, name: str, package: str) -> None:
    """Refuse a binary that another cargo build relinked after this one's step built it: the shared
    target dir has one target/release, so a CPU build run meanwhile (tests, lint, regenerate) puts its
    binaries there and the bundle would carry CPU binaries under the GPU build's name."""
    done = bins.finished.get(package, bins.finished.get("*"))
    path = bins.path(name)
    if done is not None and path.stat().st_mtime > done + 1:
        raise SystemExit(
            f"error: {path} was rewritten by another cargo build after the GPU build made it "
            f"({dt.datetime.fromtimestamp(path.stat().st_mtime).isoformat(timespec='seconds')}); "
            "run `python -m capture bundle` again while no other build, test or regenerate uses the target dir")


def verify(layout: Layout, dir: Path) -> None:
    info = buildmod.read_build_info(dir)
    here = sources_digest(layout)
    if info.get("sources_digest") != here:
        raise SystemExit(
            f"error: prebuilt binaries in {dir} were built from other Rust sources "
            f"(digest {info.get('sources_digest')}, checkout {here}); rebuild them with "
            f"`python -m capture bundle --out .device` (or `build-prebuilt --out {dir}`) on a machine with cargo"
        )
