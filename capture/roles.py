"""Device roles: experiments ask for `cpu` or `gpu`; each platform says what that is per framework."""

from __future__ import annotations

import os
import shutil
import tomllib
from dataclasses import dataclass

from capture.platform import Platform

# role -> device name the programs take, per framework
CPU_DEVICE = {"torch": "cpu", "burn": "flex", "candle": "cpu", "none": "cpu"}
GPU_DEVICE = {
    "nvidia": {"torch": "cuda", "burn": "cuda", "candle": "cuda", "none": "gpu"},
    "apple": {"torch": "mps", "burn": "metal", "candle": "metal", "none": "gpu"},
}


@dataclass(frozen=True)
class Resolution:
    device: str | None  # concrete device name, or None when skipped
    reason: str = ""  # why skipped


def candle_cuda_buildable() -> bool:
    """candle's CUDA kernels are compiled by nvcc at build time; without nvcc there is no candle cuda."""
    if os.environ.get("BOOK_CANDLE_CUDA") in ("0", "1"):
        return os.environ["BOOK_CANDLE_CUDA"] == "1"
    return shutil.which("nvcc") is not None


def burn_nvidia_backend() -> str:
    """burn's fused GPU backend on Linux+NVIDIA: cuda, or vulkan where burn-cuda cannot be built.

    burn-cuda 0.22.1 pulls cubecl-llvm, whose build script downloads a prebuilt LLVM bundle;
    on a machine without that download (or its cache) `BOOK_BURN_GPU=vulkan` picks the Vulkan
    runtime of the same fused CubeCL backend.
    """
    return os.environ.get("BOOK_BURN_GPU", "cuda")


def resolve(platform: Platform, framework: str, role: str, prebuilt_gpu: dict[str, str] | None = None) -> Resolution:
    """Which device an experiment's role maps to here, or why it is skipped on this platform.

    `prebuilt_gpu`: with binaries built elsewhere, the GPU device each framework was built for.
    """
    if role == "cpu":
        return Resolution(CPU_DEVICE[framework])
    if not platform.has_gpu:
        return Resolution(None, f"no GPU on {platform.key}")
    device = GPU_DEVICE[platform.gpu][framework]
    if platform.gpu == "nvidia" and framework in ("burn", "candle"):
        if prebuilt_gpu is not None:
            if framework not in prebuilt_gpu:
                return Resolution(None, f"the prebuilt {framework} binaries have no GPU backend")
            return Resolution(prebuilt_gpu[framework])
        if framework == "burn":
            device = burn_nvidia_backend()
        elif not candle_cuda_buildable():
            return Resolution(None, "candle built without CUDA kernels (no nvcc at build time)")
    return Resolution(device)


def cargo_features(platform: Platform, crate_frameworks: dict[str, str], crates_dir) -> list[str]:
    """The `--features` for one workspace build on this platform (macOS turns metal on by target)."""
    if platform.gpu != "nvidia":
        return []
    feats = []
    for crate, framework in sorted(crate_frameworks.items()):
        declared = tomllib.loads((crates_dir / crate / "Cargo.toml").read_text(encoding="utf-8")).get("features", {})
        feature = burn_nvidia_backend() if framework == "burn" else "cuda"
        if feature not in declared:
            continue
        if framework == "candle" and not candle_cuda_buildable():
            continue
        feats.append(f"{crate}/{feature}")
    return feats
