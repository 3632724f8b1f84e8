"""A CUDA 13.0 compiler and link libraries from NVIDIA's PyPI wheels, for building candle's CUDA kernels
on a machine that has no GPU and no system CUDA (the binaries then run on an NVIDIA box).

    python -m capture build-prebuilt --gpu cuda --candle-cuda --out .device/bin

The versions match the CUDA 13.0 driver and the torch 2.11+cu130 of the NVIDIA machine:
nvcc 13.1+ would emit PTX 9.1, which a 13.0 driver rejects. libcuda belongs to the driver and no
wheel ships it, so linking uses a stub with the same entry points (SONAME libcuda.so.1), exactly
what NVIDIA's own toolkit does in lib/stubs; at run time the machine's real driver is loaded.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

from capture.toolchains import wheelkit
from capture.storage.paths import cache_home, cargo_registry_src

WHEELS = [
    "nvidia-cuda-nvcc==13.0.88", "nvidia-cuda-crt==13.0.88", "nvidia-nvvm==13.0.88",
    "nvidia-cuda-cccl==13.0.85", "nvidia-cuda-runtime==13.0.96", "nvidia-cuda-nvrtc==13.0.88",
    "nvidia-cublas==13.1.0.3", "nvidia-curand==10.4.0.35",
]
EXECUTABLES = ["bin/nvcc", "bin/ptxas", "bin/nvlink", "bin/fatbinary", "bin/cudafe++", "bin/bin2c", "nvvm/bin/cicc"]
COMPUTE_CAP = "90"  # H100/H200; candle-kernels turns 90 into sm_90a


def default_home() -> Path:
    """BOOK_CUDA_HOME if set (an existing kit), else one in the user cache."""
    env = os.environ.get("BOOK_CUDA_HOME")
    return Path(env) if env else cache_home() / "cuda-13.0"


def _cudarc_driver_sys() -> Path:
    regs = sorted(cargo_registry_src().glob("*/cudarc-0.19.*/src/driver/sys/mod.rs"))
    if not regs:
        raise SystemExit("error: cudarc 0.19 sources not found; run `cargo fetch` in crates/ first")
    return regs[-1]


def install(dest: Path | None = None, log=print) -> Path:
    """The toolkit folder (bin/nvcc, include/, lib/, lib/stubs/libcuda.so), laid out once from WHEELS.

    BOOK_CUDA_HOME names a toolkit of your own: it is used as it is, never written to.
    """
    if dest is None and os.environ.get("BOOK_CUDA_HOME"):
        home = default_home()
        if not (home / "bin/nvcc").is_file():
            raise wheelkit.KitError(f"BOOK_CUDA_HOME={home} has no bin/nvcc; unset it to use the kit from PyPI")
        return home
    dest = dest or default_home()
    return wheelkit.install(dest, WHEELS, dest.parent / "cuda-wheels", _lay_out, "CUDA 13.0 toolkit", log)


def _lay_out(unpacked: Path, kit: Path) -> None:
    shutil.move(str(unpacked / "nvidia/cu13"), kit)
    for exe in EXECUTABLES:
        p = kit / exe
        p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (kit / "lib64").symlink_to("lib")
    lib = kit / "lib"
    for name, so in [("cudart", "13"), ("nvrtc", "13"), ("cublas", "13"), ("cublasLt", "13"), ("curand", "10")]:
        link = lib / f"lib{name}.so"
        link.unlink(missing_ok=True)
        link.symlink_to(f"lib{name}.so.{so}")
    names = sorted(set(re.findall(r"(?m)^pub unsafe fn (cu[A-Za-z0-9_]+)", _cudarc_driver_sys().read_text())))
    stubs = lib / "stubs"
    stubs.mkdir(exist_ok=True)
    (stubs / "libcuda_stub.c").write_text("".join(f"void {n}(void) {{}}\n" for n in names))
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(stubs / "libcuda.so"),
                    str(stubs / "libcuda_stub.c")], check=True)


def build_env(home: Path) -> dict[str, str]:
    return {
        "CUDA_HOME": str(home),
        "CUDA_PATH": str(home),
        "PATH": f"{home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "CUDA_COMPUTE_CAP": COMPUTE_CAP,
        # cudaforge (candle-kernels' build helper) defaults to half the cores; nvcc is the long pole
        "CUDAFORGE_THREADS": os.environ.get("CUDAFORGE_THREADS", str(os.cpu_count() or 1)),
        "BOOK_CANDLE_CUDA": "1",
    }
