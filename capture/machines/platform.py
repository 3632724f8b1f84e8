"""Platform identity: a stable key for the fragment store, what the machine offers, and its metadata."""

from __future__ import annotations

import errno
import os
import platform as _pf
import re
import shutil
import subprocess
from dataclasses import dataclass, field

from capture.storage.keys import KeyError_, check_platform_key


def _out(cmd: list[str], timeout: float = 10) -> str | None:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


# macOS keeps sysctl in /usr/sbin, which a minimal PATH (launchd, some IDEs, `env -i`) lacks.
SYSCTL = "/usr/sbin/sysctl"


def sysctl(name: str) -> str | None:
    """`sysctl -n name`, by absolute path first, then from PATH; None when it cannot be read."""
    exe = SYSCTL if os.path.exists(SYSCTL) else shutil.which("sysctl")
    return _out([exe, "-n", name]) if exe else None


class PlatformError(SystemExit):
    """This machine cannot be named reliably; the message says how to name it by hand."""

    def __init__(self, message: str):
        super().__init__(f"error: {message}")


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


@dataclass(frozen=True)
class Platform:
    """What a run needs to know about the machine it is on."""

    key: str  # e.g. linux-x86_64-cpu, linux-x86_64-nvidia-h200, macos-arm64-apple-m2-max
    os: str  # linux | macos
    arch: str
    gpu: str | None = None  # "nvidia" | "apple" | None
    gpu_name: str | None = None
    gpu_driver: str | None = None
    gpu_count: int = 0
    # features of the Rust build that this platform's gpu role needs, per framework
    extra: dict = field(default_factory=dict)

    @property
    def has_gpu(self) -> bool:
        return self.gpu is not None


def host() -> tuple[str, str]:
    """(os, arch) of this machine in the key's words: linux | macos, x86_64 | arm64."""
    system = {"Darwin": "macos", "Linux": "linux"}.get(_pf.system(), _pf.system().lower())
    arch = {"aarch64": "arm64", "AMD64": "x86_64"}.get(_pf.machine(), _pf.machine())
    return system, arch


def apple_chip() -> str:
    """The Apple chip's name as macOS reports it ("Apple M2 Max"); PlatformError when it cannot be read."""
    brand = sysctl("machdep.cpu.brand_string")
    if not brand:
        raise PlatformError(
            f"cannot read the Apple chip's name: `{SYSCTL} -n machdep.cpu.brand_string` gave nothing. "
            "Name this machine by hand, e.g. BOOK_PLATFORM=macos-arm64-apple-m2-max (your chip), "
            "or set BOOK_NO_GPU=1 to run only the CPU experiments"
        )
    return " ".join(brand.split())


def detect() -> Platform:
    """Detect this machine. BOOK_PLATFORM overrides the key (e.g. to name a machine by hand)."""
    system, arch = host()
    override = os.environ.get("BOOK_PLATFORM")
    if override is not None:
        try:
            check_platform_key(override, "BOOK_PLATFORM")
        except KeyError_ as e:
            raise PlatformError(f"{e}; unset it to use the detected key") from None
    if system == "macos" and sysctl("sysctl.proc_translated") == "1":
        raise PlatformError(
            "this Python runs under Rosetta (x86_64) on an Apple silicon Mac, so it would see neither "
            "MPS nor Metal and torch has no x86_64 macOS wheels: use an arm64 Python (Homebrew in "
            "/opt/homebrew, or python.org's universal2 installer); see docs/dev/platforms.md"
        )
    no_gpu = os.environ.get("BOOK_NO_GPU") == "1"
    gpu = gpu_name = driver = None
    count = 0
    if system == "linux" and shutil.which("nvidia-smi") and not no_gpu:
        q = _out(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
        if q:
            lines = [ln for ln in q.splitlines() if ln.strip()]
            gpu_name, _, driver = (s.strip() for s in lines[0].partition(","))
            gpu, count = "nvidia", len(lines)
    elif system == "macos" and arch == "arm64" and not no_gpu:
        try:
            gpu_name = apple_chip()
        except PlatformError:
            if override is None:
                raise
            gpu_name = "Apple silicon (chip not read)"  # named by hand: the key says which chip
        gpu, count = "apple", 1
    if gpu == "nvidia":
        name = gpu_name.lower().replace("nvidia", "").strip()
        key = f"{system}-{arch}-nvidia-{slug(name)}"
    elif gpu == "apple":
        key = f"{system}-{arch}-{slug(gpu_name)}"
    else:
        key = f"{system}-{arch}-cpu"
    return Platform(key=override or key, os=system, arch=arch, gpu=gpu, gpu_name=gpu_name, gpu_driver=driver,
                    gpu_count=count)


def display_name(os_name: str, arch: str, gpu_name: str | None, cores: int | None = None) -> str:
    """How a reader sees the machine named: by its GPU or Apple chip, else as a CPU box with its core count.

    Derived from what was detected, never from the key, so a new chip or card needs no code change.
    """
    system = {"macos": "macOS", "linux": "Linux"}.get(os_name, os_name)
    if gpu_name:
        return f"{gpu_name.strip()} · {system}"
    return f"{system} {arch} 纯 CPU" + (f"（{cores} 核）" if cores else "")


# The GPU machine the bundle route serves is Linux x86_64 (docs/dev/platforms.md); binaries for it
# are built on a host of the same kind, since nothing here sets up cross-compilation.
BUNDLE_TARGET = ("linux", "x86_64")


def check_bundle_host() -> None:
    """PlatformError unless this host builds binaries that the GPU machine can execute."""
    system, arch = host()
    if (system, arch) != BUNDLE_TARGET:
        raise PlatformError(
            f"this host is {system} {arch}, and cargo here builds {system} {arch} binaries; the GPU machine "
            f"that runs a bundle is {' '.join(BUNDLE_TARGET)}. Build the bundle on a Linux x86_64 machine "
            "with cargo and network (a CI runner, a cloud VM, or a linux/amd64 container), from the same "
            "commit: `python -m capture bundle --candle-cuda --out .device`, then carry .device/ over. "
            "A Mac regenerates its own fragments with `nox -s regenerate` instead (docs/dev/platforms.md)"
        )


def binary_kind(path: str) -> str | None:
    """What an executable file was built for, from its first bytes: "ELF x86_64", "Mach-O arm64", ...."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if head[:4] == b"\x7fELF" and len(head) >= 20:
        machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
        return "ELF " + {62: "x86_64", 183: "arm64", 3: "x86", 40: "arm"}.get(machine, f"machine {machine}")
    magic = head[:4]
    if magic in (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe") and len(head) >= 8:
        cpu = int.from_bytes(head[4:8], "little")
        return "Mach-O " + {0x01000007: "x86_64", 0x0100000C: "arm64"}.get(cpu, f"cpu {cpu:#x}")
    if magic == b"\xca\xfe\xba\xbe":
        return "Mach-O universal"
    if head[:2] == b"#!":
        return "script"
    return None


def exec_failure(exe: str, err: OSError) -> str:
    """Why `exe` could not be started, and what to do: a failure record's first line and hint."""
    system, arch = host()
    kind = binary_kind(exe)
    msg = f"cannot execute {exe}: {err.strerror or err} (errno {err.errno})"
    if err.errno == errno.E2BIG:  # the arguments and environment, not the binary
        return (msg + "; the command line and environment together pass the system's limit (getconf ARG_MAX): "
                "shorten the experiment's args in docs/experiments.toml or unset large environment variables")
    if err.errno == errno.ENOEXEC and kind and kind != "script":  # only then is the binary's kind the reason
        msg += f"; it is a {kind} executable and this machine is {system} {arch}"
    if err.errno == errno.ENOEXEC:
        msg += ("\nhint: binaries built on another kind of machine (a bundle built on a Mac?) cannot run here; "
                "rebuild them on Linux x86_64 with `python -m capture bundle --candle-cuda --out .device` "
                "(docs/dev/platforms.md)")
    return msg


def cpu_model() -> str:
    if _pf.system() == "Darwin":
        return sysctl("machdep.cpu.brand_string") or _pf.processor()
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return _pf.processor() or "unknown"


def memory_gib() -> float | None:
    try:
        for line in open("/proc/meminfo", encoding="utf-8"):
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    b = sysctl("hw.memsize")
    return round(int(b) / 2**30, 1) if b and b.isdigit() else None


def machine_record(p: Platform) -> dict:
    """The static part of a fragment's metadata: what this machine is.

    OS and arch follow `p` (detect() gives this host's; a test may name another platform on purpose),
    the rest is read from this host.
    """
    same_os = p.os == host()[0]
    return {
        "os": f"{_pf.system()} {_pf.release()}" if same_os else {"macos": "Darwin", "linux": "Linux"}.get(p.os, p.os),
        "os_pretty": _os_pretty(),
        "arch": p.arch,
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": memory_gib(),
        "gpu": p.gpu_name,
        "gpu_count": (p.gpu_count or 1) if p.gpu_name else 0,
        "gpu_driver": p.gpu_driver,
    }


def _os_pretty() -> str:
    if _pf.system() == "Darwin":
        return f"macOS {_pf.mac_ver()[0]}"
    try:
        for line in open("/etc/os-release", encoding="utf-8"):
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return _pf.platform()


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None
