"""Which machine a run happened on: one fingerprint, computed in one place.

The fields are what asv's machine.json and pyperf's metadata keep to tell machines apart:
architecture, CPU model, logical cores, memory class, GPU model and count, OS name and major
version. Things that change without changing the machine (kernel build, driver patch level, the
exact MemTotal a kernel reports, load) are left out, so a rerun on the same box matches.

`platform.json` holds the fingerprint of the machine a platform is; every fragment records the
fingerprint of the host that captured it (`host` in its metadata). A fragment whose host differs
from its platform's is "captured on another machine" (capture/evidence/book.py), and regenerate refuses
to write into a platform whose machine this host is not (capture/machines/hosts.py).
"""

from __future__ import annotations

import math
import re

FIELDS = ("arch", "cpu", "cores", "memory_class_gib", "gpu", "gpu_count", "os", "os_major")


def memory_class(gib: float | None) -> int | None:
    """Total memory rounded to the nearest power of two in GiB (23.5 -> 32, 125.8 -> 128, 64.0 -> 64):
    kernels and firmware reserve different amounts of the same RAM."""
    if not gib or gib <= 0:
        return None
    return 2 ** round(math.log2(gib))


def os_name_major(os_pretty: str) -> tuple[str, str]:
    """("Debian GNU/Linux", "12") from "Debian GNU/Linux 12 (bookworm)"; ("Ubuntu", "24") from
    "Ubuntu 24.04.3 LTS"; ("macOS", "15") from "macOS 15.1"."""
    text = (os_pretty or "").strip()
    m = re.search(r"\d+", text)
    if not m:
        return text, ""
    return text[: m.start()].strip(), m.group(0)


def of_machine(machine: dict) -> dict:
    """The fingerprint of a machine record (a fragment's `machine`, or a platform identity's fields).

    Records written before the GPU count was kept name at most one GPU (detection read the first
    line of nvidia-smi): one GPU when a name is there.
    """
    gpu = machine.get("gpu") or None
    count = machine.get("gpu_count")
    if count is None:
        count = 1 if gpu else 0
    os_name, major = os_name_major(machine.get("os_pretty", ""))
    return {
        "arch": machine.get("arch") or "",
        "cpu": " ".join(str(machine.get("cpu") or "").split()),
        "cores": machine.get("cores"),
        "memory_class_gib": memory_class(machine.get("memory_gib")),
        "gpu": gpu,
        "gpu_count": count,
        "os": os_name,
        "os_major": major,
    }


def normal(fp: dict | None) -> dict | None:
    """A stored fingerprint with exactly the known fields (an older or hand-edited one compares fairly)."""
    if not isinstance(fp, dict):
        return None
    return {k: fp.get(k) for k in FIELDS}


def differences(have: dict, want: dict) -> list[str]:
    """What differs, field by field: ["cpu: 'Intel(R) Xeon(R) Processor' vs 'AMD EPYC'"]."""
    a, b = normal(have) or {}, normal(want) or {}
    return [f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in FIELDS if a.get(k) != b.get(k)]


def same(a: dict | None, b: dict | None) -> bool:
    return a is not None and b is not None and normal(a) == normal(b)


def describe(fp: dict) -> str:
    """One line for messages: "AMD EPYC, 2 cores, 32 GiB class, Debian GNU/Linux 12, x86_64, no GPU"."""
    f = normal(fp) or {}
    gpu = f"{f['gpu_count']} x {f['gpu']}" if f.get("gpu") else "no GPU"
    return (f"{f.get('cpu') or 'unknown CPU'}, {f.get('cores')} cores, {f.get('memory_class_gib')} GiB class, "
            f"{f.get('os')} {f.get('os_major')}, {f.get('arch')}, {gpu}")


def describe_zh(fp: dict) -> str:
    """describe() in the pages' words: "AMD EPYC，2 核，内存 32 GiB 档，Debian GNU/Linux 12，x86_64，没有 GPU"."""
    f = normal(fp) or {}
    gpu = (f"{f['gpu_count']} 块 {f['gpu']}" if (f.get("gpu_count") or 1) > 1 else f["gpu"]) if f.get("gpu") else "没有 GPU"
    parts = [f.get("cpu") or "CPU 型号未知", f"{f['cores']} 核" if f.get("cores") else "",
             f"内存 {f['memory_class_gib']} GiB 档" if f.get("memory_class_gib") else "",
             f"{f.get('os') or ''} {f.get('os_major') or ''}".strip(), f.get("arch") or "", gpu]
    return "，".join(p for p in parts if p)


def suggest_key(fp: dict) -> str:
    """A platform key of its own for the host with this fingerprint: its system, architecture, GPU (or
    "cpu") and CPU model, e.g. linux-x86_64-cpu-amd-epyc, linux-x86_64-nvidia-h200-intel-xeon."""
    from capture.machines.platform import host

    def slug(text) -> str:
        text = re.sub(r"\((r|tm)\)|\bprocessor\b|\bcpu\b", " ", str(text or ""), flags=re.I)
        return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")

    system, arch = host()
    gpu = slug(fp.get("gpu")) or "cpu"
    cpu = slug(fp.get("cpu")) if fp.get("cpu") != fp.get("gpu") else ""
    return "-".join(x for x in (system, slug(arch).replace("-", "_"), gpu, cpu) if x)[:80].rstrip("-_")


def of_fragment(meta: dict) -> dict | None:
    """The host a fragment was captured on: its `host`, or for fragments written before hosts were
    recorded, the fingerprint of its `machine` record (None when it has neither)."""
    if isinstance(meta.get("host"), dict):
        return normal(meta["host"])
    machine = meta.get("machine")
    return of_machine(machine) if isinstance(machine, dict) and machine else None
