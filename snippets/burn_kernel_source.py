"""The kernel burn generates for chain8 on the GPU, as CubeCL's compilation log shows it: which `sin` it calls.

    python burn_kernel_source.py BINARY DEVICE [N]

BINARY: the exec-gpu experiment binary (the manifest's `runs` puts its path in for `{binary}`);
DEVICE: burn's GPU device on this machine (cuda, metal, vulkan, ...); N: side of the square tensor
(default 8192, the size burn-chain8 times on the GPU).

Runs `BINARY chain8 DEVICE N` -- the program behind burn-chain8, unchanged -- with CUBECL_DEBUG_LOG set
to a file. That variable raises CubeCL's compilation log to its full level, the only level that carries
each kernel's source (cubecl-runtime 0.11.3, src/config/base.rs); what "source" is depends on the
runtime: on CUDA with the LLVM compiler the module's LLVM IR before it becomes PTX (cubecl-cuda 0.11.3,
src/compiler.rs, CudaRepresentation::Llvm), on wgpu the shader source. Each logged message is flushed
to the file as it is written (cubecl-environment 0.11.3, src/config/logger.rs, FileLogger::log).

Prints every compiled kernel that calls sin (name, language, the lines that call it) and records how
the call is spelled, how many lanes one call computes, and how many calls the kernel makes.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from bookrec import record

FW = "burn"
# [START_KERNEL_COMPILATION] name: ... source: ```LANG ... ``` [END_KERNEL_COMPILATION] (cubecl-server 0.11.3, src/kernel.rs)
BLOCK = re.compile(r"\[START_KERNEL_COMPILATION\](.*?)\[END_KERNEL_COMPILATION\]", re.S)
SOURCE = re.compile(r"source:\n```(\w*)\n(.*)\n```", re.S)
LANGUAGE = {"ll": "LLVM IR", "wgsl": "WGSL", "msl": "Metal", "metal": "Metal", "cpp": "CUDA C++", "cu": "CUDA C++",
            "spirv": "SPIR-V", "spv": "SPIR-V"}
# LLVM IR: `call <4 x float> @llvm.sin.v4f32(...)`; shader and C++ sources: `sin(...)`, `metal::precise::sin(...)`
LLVM_SIN = re.compile(r"call\b[^\n]*@(llvm\.sin\.(?:v(\d+))?f(?:16|32|64))\(")
TEXT_SIN = re.compile(r"([\w:.]*\bsin)\s*\(")


def kernels(log: str) -> list[tuple[str, str, str]]:
    """(name, language tag, source) of every compiled kernel in the log."""
    out = []
    for block in BLOCK.findall(log):
        name = re.search(r"^name: (.*)$", block, re.M)
        src = SOURCE.search(block)
        if src:
            out.append((name.group(1).strip() if name else "?", src.group(1), src.group(2)))
    return out


def sin_calls(lang: str, src: str) -> list[tuple[str, int, str]]:
    """(spelling, lanes, line) per call of sin; declarations are not calls."""
    calls = []
    for line in src.splitlines():
        if line.lstrip().startswith("declare"):
            continue
        if lang == "ll":
            calls += [(m.group(1), int(m.group(2) or 1), line.strip()) for m in LLVM_SIN.finditer(line)]
        else:
            calls += [(m.group(1), 1, line.strip()) for m in TEXT_SIN.finditer(line)]
    return calls


def main() -> None:
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    binary, dev = sys.argv[1], sys.argv[2]
    n = sys.argv[3] if len(sys.argv) == 4 else "8192"
    with tempfile.TemporaryDirectory(prefix="burn-kernel-log-") as tmp:
        log_path = Path(tmp) / "cubecl.log"
        env = {k: v for k, v in os.environ.items() if k != "BOOK_RECORDS"}  # the program's own records stay out
        env["CUBECL_DEBUG_LOG"] = str(log_path)
        run = subprocess.run([binary, "chain8", dev, n], env=env, capture_output=True, text=True, timeout=240)
        log = log_path.read_text(encoding="utf-8", errors="replace") if log_path.is_file() else ""
    if run.returncode != 0:
        sys.exit(f"{Path(binary).name} chain8 {dev} {n} exited {run.returncode}:\n{run.stderr[-2000:]}")
    compiled = kernels(log)
    with_sin = [(name, lang, sin_calls(lang, src)) for name, lang, src in compiled]
    with_sin = [(name, lang, calls) for name, lang, calls in with_sin if calls]
    tags = dict(framework=FW, device=dev, size=n)
    print(f"burn chain8 on {dev}, [{n}, {n}]: CubeCL logged {len(compiled)} compiled kernel(s), "
          f"{len(with_sin)} of them call sin")
    for name, lang, calls in with_sin:
        print(f"--- {name} ({LANGUAGE.get(lang, lang or '?')}) ---")
        for _, _, line in calls:
            print(line)
    record("kernel.compiled", len(compiled), **tags)
    record("kernel.count", len(with_sin), **tags)
    if with_sin:
        name, lang, calls = with_sin[0]
        spellings = sorted({s for s, _, _ in calls})
        record("kernel.language", LANGUAGE.get(lang, lang or "?"), **tags)
        record("kernel.sin", "+".join(spellings), **tags)
        record("kernel.sin_lanes", max(lanes for _, lanes, _ in calls), **tags)
        record("kernel.sin_calls", len(calls), **tags)


if __name__ == "__main__":
    main()
