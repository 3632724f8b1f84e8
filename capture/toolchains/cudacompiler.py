"""Which compiler turns burn's CubeCL kernels into CUDA code in a build, for the record.

cubecl-cuda 0.11 compiles two: LLVM, which lowers kernels to PTX (the default, what a burn user with
`features = ["cuda"]` gets), and CUDA C++ handed to NVRTC (cubecl-cuda's `cpp` feature, which
cubecl's `cuda-cpp` turns on). The choice is fixed at build time and changes what a kernel can use
(the LLVM one advertises fewer device features on sm_90), so a fragment says which one ran: cargo's
own feature resolution is asked, not the feature names we passed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

KEY = "cubecl_cuda_compiler"  # where build-info.json and a fragment's versions.rust_build record it
CRATE = "cubecl-cuda"
CPP_FEATURE = "cpp"
LLVM, CPP = "llvm", "cpp"  # cubecl-cuda's names for the two (CudaBackend::Llvm, CudaBackend::Cpp)
WORDS = {LLVM: "LLVM → PTX", CPP: "CUDA C++ → NVRTC"}  # as captions show them


class CompilerUnknown(RuntimeError):
    pass


def from_features(resolved: list[str]) -> str:
    """cubecl-cuda's resolved features -> the compiler its default CudaCompiler runs."""
    return CPP if CPP_FEATURE in resolved else LLVM


def of_build(crates: Path, features: list[str], env: dict | None = None, packages: list[str] | None = None,
             offline: bool = True) -> str | None:
    """`llvm` or `cpp` for a workspace build with `features`; None when cubecl-cuda is not in it.

    `cargo tree` resolves features as `cargo build` does for this host (resolver 2: build, dev and
    other targets' dependencies apart); `cargo metadata` unifies them all and would over-report.
    `offline`: the build just downloaded every crate it needs; without it, cargo fetches the crates of
    that build that are missing (a fresh cargo home never saw the GPU-only ones).
    """
    sel = [a for m in packages for a in ("-p", m)] if packages else ["--workspace"]
    cmd = ["cargo", "tree", "--locked", *(["--offline"] if offline else []), *sel, "-i", CRATE, "-e", "features",
           "--prefix", "none", "--depth", "0", "--format", "{p} {f}"]
    if features:
        cmd += ["--features", ",".join(features)]
    r = subprocess.run(cmd, cwd=crates, capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != 0:
        raise CompilerUnknown(f"`{' '.join(cmd)}` in {crates} failed: {r.stderr.strip()[-400:]}")
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith(CRATE + " ")), None)
    if line is None:
        return None
    parts = line.split()
    return from_features(parts[2].split(",") if len(parts) > 2 else [])
