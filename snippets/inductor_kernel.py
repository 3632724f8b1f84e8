"""The kernel torch.compile (inductor) generates for chain8, as source text.

    python inductor_kernel.py DEVICE

DEVICE: cpu | cuda | mps. Compiles exec_gpu.chain8 cold (a fresh TORCHINDUCTOR_CACHE_DIR, set by
exec_gpu before torch is imported), takes the generated code with torch._inductor.utils.run_and_get_code,
and prints each kernel's source (C++ on CPU, Triton on CUDA, Metal on MPS) without the file header
(include paths, build hashes). Records what the source shows: how many kernels, how many sin calls,
whether the loop is vectorised and how many elements one program instance handles, and the language.
"""

from __future__ import annotations

import re
import shutil
import sys

import exec_gpu  # noqa: F401  (sets the fresh inductor cache dir before torch is imported)
import torch
from bookrec import record, require_device
from exec_gpu import chain8
from torch._inductor.utils import run_and_get_code

FW = "torch"
LANGUAGE = {"cpp_pybinding": "C++", "cpp": "C++", "triton": "Triton", "mps": "Metal"}
# one kernel's source inside the generated module: async_compile.cpp_pybinding / triton / mps(..., '''...''')
KERNEL = re.compile(r"async_compile\.(cpp_pybinding|cpp|triton|mps)\((.*?)'''(.*?)'''", re.S)


def body(kind: str, src: str) -> str:
    """The kernel itself: from its signature on, without includes, decorators and metadata."""
    lines = src.strip("\n").splitlines()
    start = {"triton": r"^def ", "mps": r"^kernel void"}.get(kind, r'^extern "C"')
    for i, line in enumerate(lines):
        if re.match(start, line):
            return "\n".join(lines[i:])
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    dev = sys.argv[1]
    require_device(dev)
    n = 256
    x = torch.rand(n, n, device=dev)
    try:
        out, codes = run_and_get_code(torch.compile(chain8), x)
    finally:
        shutil.rmtree(exec_gpu._CACHE_DIR, ignore_errors=True)
    ok = torch.allclose(out, chain8(x), atol=1e-6)
    kernels = [(m.group(1), body(m.group(1), m.group(3))) for code in codes for m in KERNEL.finditer(code)]
    tags = dict(framework=FW, device=dev)
    print(f"torch {torch.__version__}, device {dev}: torch.compile(chain8) on [{n}, {n}], "
          f"{len(codes)} generated module(s), {len(kernels)} kernel(s); matches eager: {ok}")
    for kind, src in kernels:
        print(f"--- {kind} kernel ---")
        print(src)
    text = "\n".join(src for _, src in kernels)
    vectorised = "Vectorized" in text or "float4" in text or "simd" in text
    languages = sorted({LANGUAGE[kind] for kind, _ in kernels})
    record("kernel.language", "+".join(languages) or "none", **tags)
    record("kernel.count", len(kernels), **tags)
    record("kernel.sin_calls", len(re.findall(r"\bsin\b", text)), **tags)
    record("kernel.vectorised", vectorised, **tags)
    record("kernel.matches_eager", bool(ok), **tags)
    step = re.search(r"x0\+=static_cast<int64_t>\((\d+)L\)", text)  # C++: elements per loop step
    if step:
        record("kernel.vector_width", int(step.group(1)), **tags)


if __name__ == "__main__":
    main()
