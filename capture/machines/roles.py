"""Device roles: experiments ask for `cpu` or `gpu`; each platform says what that is per framework."""

from __future__ import annotations

import os
import shutil
import tomllib
from dataclasses import dataclass

from capture.machines.platform import Platform

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
    """burn's GPU role on Linux+NVIDIA: cuda (CubeCL on CUDA, LLVM from PyPI: capture/toolchains/llvmkit.py),
    or what BOOK_BURN_GPU names (`vulkan`: the same CubeCL backend on the Vulkan runtime)."""
    return os.environ.get("BOOK_BURN_GPU", "cuda")


# Devices an experiment may name with `gpu_device` (manifest): per GPU vendor and framework, the
# backends that platform's build compiles besides the role's own, so that one card runs the same
# CubeCL kernels on two runtimes (burn: CUDA for the role, Vulkan for the variant).
GPU_VARIANTS = {"nvidia": {"burn": ("vulkan",)}}


def variant_devices(framework: str) -> tuple[str, ...]:
    """Every device any vendor offers as a variant of `framework` (what the manifest accepts)."""
    return tuple(sorted({d for fws in GPU_VARIANTS.values() for d in fws.get(framework, ())}))


@dataclass(frozen=True)
class NvidiaBuild:
    features: list[str]  # `crate/feature` for cargo
    gpu_devices: dict[str, str]  # framework -> the GPU role's device
    gpu_variants: dict[str, list[str]]  # framework -> further devices every crate of it was built with


def nvidia_build(crate_frameworks: dict[str, str], crates_dir, candle_cuda: bool) -> NvidiaBuild:
    """The GPU features of one workspace build for Linux+NVIDIA: burn's role backend and its variants
    (each only where the crate declares the feature), candle's cuda when its kernels can be built."""
    feats, devices, declared_by = [], {}, {}
    for crate, framework in sorted(crate_frameworks.items()):
        declared = tomllib.loads((crates_dir / crate / "Cargo.toml").read_text(encoding="utf-8")).get("features", {})
        if framework == "burn":
            main = burn_nvidia_backend()
            wanted = [main, *(v for v in GPU_VARIANTS["nvidia"]["burn"] if v != main)]
        elif framework == "candle" and candle_cuda:
            main, wanted = "cuda", ["cuda"]
        else:
            continue
        have = [f for f in wanted if f in declared]
        feats += [f"{crate}/{f}" for f in have]
        if main in have:
            devices[framework] = main
        declared_by.setdefault(framework, []).append(set(have) - {main})
    variants = {fw: sorted(set.intersection(*sets)) for fw, sets in declared_by.items() if set.intersection(*sets)}
    return NvidiaBuild(feats, devices, variants)


def resolve(platform: Platform, framework: str, role: str, prebuilt_gpu: dict[str, str] | None = None,
            gpu_device: str | None = None, prebuilt_variants: dict[str, list[str]] | None = None) -> Resolution:
    """Which device an experiment's role maps to here, or why it is skipped on this platform.

    `prebuilt_gpu` / `prebuilt_variants`: with binaries built elsewhere, the GPU device each framework
    was built for and the further ones built in. `gpu_device`: the experiment's own GPU device (a
    variant, manifest `gpu_device`) instead of the platform's.
    """
    if role == "cpu":
        return Resolution(CPU_DEVICE[framework])
    if not platform.has_gpu:
        return Resolution(None, f"no GPU on {platform.key}")
    if gpu_device:
        return _variant(platform, framework, gpu_device, prebuilt_gpu, prebuilt_variants)
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


def _variant(platform: Platform, framework: str, device: str, prebuilt_gpu, prebuilt_variants) -> Resolution:
    offered = GPU_VARIANTS.get(platform.gpu or "", {}).get(framework, ())
    if device not in offered:
        return Resolution(None, f"{platform.key} builds no {device} variant of {framework} (roles.GPU_VARIANTS)")
    if prebuilt_gpu is not None:
        built = {prebuilt_gpu.get(framework), *(prebuilt_variants or {}).get(framework, [])}
        if device not in built:
            return Resolution(None, f"the prebuilt {framework} binaries were built without {device}")
    return Resolution(device)


def cargo_features(platform: Platform, crate_frameworks: dict[str, str], crates_dir) -> list[str]:
    """The `--features` for one workspace build on this platform (macOS turns metal on by target)."""
    if platform.gpu != "nvidia":
        return []
    return nvidia_build(crate_frameworks, crates_dir, candle_cuda_buildable()).features
