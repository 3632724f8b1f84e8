"""Device roles: experiments ask for `cpu` or `gpu`; each platform says what that is per framework."""

from __future__ import annotations

import os
import re
import shutil
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


def resolve(platform: Platform, framework: str, role: str, prebuilt_gpu: set[str] | None = None) -> Resolution:
    """Which device an experiment's role maps to here, or why it is skipped on this platform.

    `prebuilt_gpu`: with binaries built elsewhere, the frameworks they were built with GPU support for.
    """
    if role == "cpu":
        return Resolution(CPU_DEVICE[framework])
    if not platform.has_gpu:
        return Resolution(None, f"no GPU on {platform.key}")
    device = GPU_DEVICE[platform.gpu][framework]
    if framework == "candle" and device == "cuda":
        have = ("candle" in prebuilt_gpu) if prebuilt_gpu is not None else candle_cuda_buildable()
        if not have:
            return Resolution(None, "candle built without CUDA kernels (no nvcc at build time)")
    if framework == "burn" and device == "cuda" and prebuilt_gpu is not None and "burn" not in prebuilt_gpu:
        return Resolution(None, "prebuilt burn binaries lack the cuda feature")
    return Resolution(device)


def cargo_features(platform: Platform, crate_frameworks: dict[str, str], crates_dir) -> list[str]:
    """The `--features` for one workspace build on this platform (macOS turns metal on by target)."""
    if platform.gpu != "nvidia":
        return []
    feats = []
    for crate, framework in sorted(crate_frameworks.items()):
        toml = (crates_dir / crate / "Cargo.toml").read_text(encoding="utf-8")
        if not re.search(r"(?m)^cuda\s*=", toml):
            continue
        if framework == "candle" and not candle_cuda_buildable():
            continue
        feats.append(f"{crate}/cuda")
    return feats
