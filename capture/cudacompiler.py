"""Which compiler turns burn's CubeCL kernels into CUDA code in a build, for the record.

cubecl-cuda 0.11 compiles two: LLVM, which lowers kernels to PTX (the default, what a burn user with
`features = ["cuda"]` gets), and CUDA C++ handed to NVRTC (cubecl-cuda's `cpp` feature, which
cubecl's `cuda-cpp` turns on). The choice is fixed at build time and changes what a kernel can use
(the LLVM one advertises fewer device features on sm_90), so a fragment says which one ran: cargo's
own feature resolution is asked, not the feature names we passed.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

CRATE = "cubecl-cuda"
CPP_FEATURE = "cpp"
LLVM, CPP = "llvm", "cpp"  # cubecl-cuda's names for the two (CudaBackend::Llvm, CudaBackend::Cpp)
WORDS = {LLVM: "LLVM → PTX", CPP: "CUDA C++ → NVRTC"}  # as captions show them


class CompilerUnknown(RuntimeError):
    pass


def from_features(resolved: list[str]) -> str:
    """cubecl-cuda's resolved features -> the compiler its default CudaCompiler runs."""
    return CPP if CPP_FEATURE in resolved else LLVM


def _host() -> str | None:
    try:
        r = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return next((ln.split(":", 1)[1].strip() for ln in r.stdout.splitlines() if ln.startswith("host:")), None)


def of_build(crates: Path, features: list[str], env: dict | None = None) -> str | None:
    """`llvm` or `cpp` for a workspace build with `features`; None when cubecl-cuda is not in it."""
    cmd = ["cargo", "metadata", "--format-version", "1", "--locked", "--offline"]
    if features:
        cmd += ["--features", ",".join(features)]
    host = _host()
    if host:
        cmd += ["--filter-platform", host]
    r = subprocess.run(cmd, cwd=crates, capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != 0:
        raise CompilerUnknown(f"`{' '.join(cmd)}` in {crates} failed: {r.stderr.strip()[-400:]}")
    nodes = json.loads(r.stdout).get("resolve", {}).get("nodes", [])
    found = [n.get("features", []) for n in nodes if f"#{CRATE}@" in n.get("id", "") or n.get("id", "").startswith(f"{CRATE} ")]
    return from_features(found[0]) if found else None
