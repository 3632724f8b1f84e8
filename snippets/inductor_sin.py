"""Which `sin` the kernel torch.compile generates for chain8 calls, down to the text the driver receives.

    python inductor_sin.py DEVICE [N]

DEVICE: cuda | mps; N: side of the square tensor (default 8192, the size torch-chain8 times on the GPU).

Compiles exec_gpu.chain8 cold (exec_gpu gives inductor a fresh cache dir; Triton's cache goes into a
fresh folder of its own, TRITON_CACHE_DIR, set here before torch is imported) and reads:
- the generated source: how the kernel spells its sin calls (Triton on CUDA, Metal on MPS);
- on CUDA, the PTX Triton wrote into its cache for the kernel: how often the hardware approximation
  `sin.approx.f32` occurs, and whether libdevice's accurate sinf is in it, recognised by the table its
  argument reduction reads (`__cudart_i2opi_f`).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

_TRITON_DIR = tempfile.mkdtemp(prefix="inductor-sin-triton-")
os.environ["TRITON_CACHE_DIR"] = _TRITON_DIR  # before torch (and Triton) are imported

import exec_gpu  # noqa: E402  (sets the fresh inductor cache dir before torch is imported)
import torch  # noqa: E402
from bookrec import record, require_device, sync  # noqa: E402
from exec_gpu import chain8  # noqa: E402
from torch._inductor.utils import run_and_get_code  # noqa: E402

FW = "torch"
SIN = re.compile(r"([\w:.]*\bsin)\s*\(")
LIBDEVICE_TABLE = "__cudart_i2opi_f"  # read by libdevice's sinf/cosf for large arguments


def main() -> None:
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    dev = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) == 3 else 8192
    require_device(dev)
    x = torch.rand(n, n, device=dev)
    try:
        _, codes = run_and_get_code(torch.compile(chain8), x)
        sync(dev)
        ptx = {p.name: p.read_text(encoding="utf-8", errors="replace")
               for root in (_TRITON_DIR, exec_gpu._CACHE_DIR) for p in sorted(Path(root).rglob("*.ptx"))}
    finally:
        shutil.rmtree(exec_gpu._CACHE_DIR, ignore_errors=True)
        shutil.rmtree(_TRITON_DIR, ignore_errors=True)
    spellings = Counter(m.group(1) for code in codes for m in SIN.finditer(code))
    tags = dict(framework=FW, device=dev, size=str(n))
    print(f"torch {torch.__version__}, device {dev}: torch.compile(chain8) on [{n}, {n}]")
    print("sin in the generated source: " + (", ".join(f"{s} x{c}" for s, c in sorted(spellings.items())) or "none"))
    record("sin.source", "+".join(sorted(spellings)) or "none", **tags)
    record("sin.source_calls", sum(spellings.values()), **tags)
    if dev != "cuda":
        return
    approx = sum(text.count("sin.approx") for text in ptx.values())
    libdevice = any(LIBDEVICE_TABLE in text for text in ptx.values())
    print(f"PTX files in the cache: {len(ptx)}")
    for name, text in ptx.items():
        print(f"--- {name}: {len(text.splitlines())} lines, sin.approx x{text.count('sin.approx')}, "
              f"{LIBDEVICE_TABLE}: {'yes' if LIBDEVICE_TABLE in text else 'no'} ---")
        for line in text.splitlines():
            if "sin.approx" in line:
                print(line.strip())
    record("sin.ptx_files", len(ptx), **tags)
    record("sin.ptx_approx", approx, **tags)
    record("sin.ptx_libdevice", libdevice, **tags)


if __name__ == "__main__":
    main()
