"""One rule for the on-disk caches of every framework an experiment runs: where they live during a run.

A "first call" measures compilation only if nothing compiled is on disk yet, and what is on disk
depends on what ran before. So a manifest entry says which state it measures (`caches = ...`):

- "cold": each process gets a new empty folder, and every cache we know of points into it;
- "warm": one folder for the whole capture, filled first by one run whose output is not kept.

The caches (each documented by its owner):
- XDG_CACHE_HOME: the user cache dir; CubeCL (burn's GPU backends) keeps its autotune results and
  compiled kernels there when the working directory is not inside a Cargo workspace (the runner's
  is the repository root), and the NVIDIA driver its GL/Vulkan shader cache (nvidia/GLCache).
- CUDA_CACHE_PATH: the CUDA driver's cache of PTX compiled to machine code (candle's kernels).
- __GL_SHADER_DISK_CACHE_PATH: the NVIDIA driver's shader cache, set explicitly as well.
CUDA_CACHE_DISABLE is removed so that the cache is used, and measured, the same way on both sides.
Metal's system shader cache on macOS cannot be redirected from outside a process.
"""

from __future__ import annotations

import shutil
from pathlib import Path


def env(folder: Path) -> dict[str, str]:
    """The variables that point every known cache into `folder`."""
    return {
        "XDG_CACHE_HOME": str(folder / "xdg"),
        "CUDA_CACHE_PATH": str(folder / "cuda"),
        "__GL_SHADER_DISK_CACHE_PATH": str(folder / "nv-shaders"),
    }


def fresh(folder: Path) -> Path:
    """An empty folder (whatever was there is removed)."""
    shutil.rmtree(folder, ignore_errors=True)
    for sub in ("xdg", "cuda", "nv-shaders"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    return folder


def apply(base_env: dict[str, str], folder: Path) -> dict[str, str]:
    out = {k: v for k, v in base_env.items() if k != "CUDA_CACHE_DISABLE"}
    out.update(env(folder))
    return out
