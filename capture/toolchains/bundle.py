"""One folder that a GPU machine without cargo or network needs to regenerate its fragments.

    python -m capture bundle --out .device [--candle-cuda]        (here: cargo, network)
    bash .device/run.sh [regenerate options]                        (there, from the repository root)

The folder holds the prebuilt binaries as one xz archive (a carry limit is usually on the order of
64 MiB: see pack() for how the binaries of burn on CUDA fit), their build-info.json, the Debian
packages of the Vulkan loader when burn runs on Vulkan (its role or a variant), and run.sh, which unpacks all of it,
points the loader at the driver's ICD, puts torch's CUDA libraries on LD_LIBRARY_PATH for candle
and runs `python -m capture regenerate --prebuilt`.
"""

from __future__ import annotations

import lzma
import shutil
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from capture.toolchains import build as buildmod
from capture.storage.paths import Layout, cache_home
from capture.machines.platform import check_bundle_host
from capture.toolchains.prebuilt import build_prebuilt

ARCHIVE = "prebuilt.tar.xz"
# libvulkan1 and what the NVIDIA ICD (libGLX_nvidia) pulls in; a bare machine has none of them
VULKAN_DEBS = ["libvulkan1", "libglvnd0", "libegl1", "libgl1", "libglx0", "libgles2", "libopengl0",
               "libx11-6", "libxext6", "libxcb1", "libxau6", "libxdmcp6", "libbsd0", "libmd0"]

RUN_SH = r"""#!/usr/bin/env bash
# Written by `python -m capture bundle`: regenerate this machine's fragments from prebuilt binaries.
# Run from the repository root; extra arguments go to `python -m capture regenerate`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${PYTHON:-python3}"
rm -rf "$here/bin" && mkdir -p "$here/bin"
"$py" - "$here/prebuilt.tar.xz" "$here/bin" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:  # python's lzma: no xz tool needed on the GPU machine
    t.extractall(sys.argv[2], filter="fully_trusted") if hasattr(tarfile, "data_filter") else t.extractall(sys.argv[2])
PY
if compgen -G "$here/debs/*.deb" > /dev/null; then
  rm -rf "$here/root" && mkdir -p "$here/root"
  for deb in "$here"/debs/*.deb; do dpkg -x "$deb" "$here/root"; done
  export LD_LIBRARY_PATH="$here/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  for d in /usr/local/nvidia/share /usr/share /etc; do
    if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$d/vulkan/icd.d/nvidia_icd.json" ]; then
      export VK_DRIVER_FILES="$d/vulkan/icd.d/nvidia_icd.json"
    fi
    if [ -z "${__EGL_VENDOR_LIBRARY_FILENAMES:-}" ] && [ -f "$d/glvnd/egl_vendor.d/10_nvidia.json" ]; then
      export __EGL_VENDOR_LIBRARY_FILENAMES="$d/glvnd/egl_vendor.d/10_nvidia.json"
    fi
  done
  echo "run.sh: Vulkan loader from $here/debs, ICD ${VK_DRIVER_FILES:-not found}" >&2
fi
cu13="$("$py" -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "lib"))' 2>/dev/null || true)"
if [ -n "$cu13" ] && [ -d "$cu13" ]; then
  export LD_LIBRARY_PATH="$cu13${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "run.sh: CUDA libraries from $cu13" >&2
fi
exec "$py" -m capture regenerate --prebuilt "$here/bin" --python "$py" "$@"
"""


# How prebuilt.tar.xz is packed, first that fits ARCHIVE_BUDGET (the whole bundle, with the debs and
# run.sh, must stay under the usual 64 MiB carry limit):
# - fast: xz -2, multi-threaded (2 MiB dictionary, independent blocks): the Vulkan-only bundle's ~290 MB
#   in ~10 s on 2 cores, 55.8 MiB;
# - solid: one xz -6 stream whose dictionary spans the whole tar, members largest first. The burn
#   binaries repeat one another (the same burn, CubeCL, wgpu and statically linked LLVM, placed at
#   other addresses), and LZMA codes a repeat at the same distance cheaply, so each binary after the
#   first costs little more than its differences (docs/dev/platforms.md, "burn on CUDA" for the numbers).
#   One stream is one thread, and the dictionary costs ~10x its size in memory to compress and its size
#   to unpack (Python's lzma on the GPU machine).
FAST_LEVEL, SOLID_LEVEL = 2, 6
ARCHIVE_BUDGET = 60 * 2**20
MIN_DICT, MAX_DICT = 64 * 2**20, 1024 * 2**20


@dataclass(frozen=True)
class Packing:
    mode: str  # fast | solid
    level: int
    dict_bytes: int | None  # None: the preset's own
    bytes: int  # size of the archive
    seconds: float = 0.0  # packing time, every pass included


def solid_dict(total: int) -> int:
    """The smallest power of two that holds `total` bytes of tar, within [MIN_DICT, MAX_DICT]."""
    d = MIN_DICT
    while d < total and d < MAX_DICT:
        d *= 2
    return d


def members(src: Path) -> list[str]:
    """The files to pack, largest first (similar binaries side by side), then by name."""
    return [p.name for p in sorted(src.iterdir(), key=lambda p: (-p.stat().st_size, p.name))]


def _xz(src: Path, names: list[str], out: Path, level: int, dict_bytes: int | None = None) -> None:
    if shutil.which("xz"):
        opts = ["-T0", f"-{level}"] if dict_bytes is None else ["-T1", f"--lzma2=preset={level},dict={dict_bytes}"]
        with open(out, "wb") as f:
            tar = subprocess.Popen(["tar", "cf", "-", "-C", str(src), *names], stdout=subprocess.PIPE)
            subprocess.run(["xz", *opts], stdin=tar.stdout, stdout=f, check=True)
            if tar.wait() != 0:
                raise RuntimeError(f"tar of {src} failed")
    else:
        filters = [{"id": lzma.FILTER_LZMA2, "preset": level, **({"dict_size": dict_bytes} if dict_bytes else {})}]
        with lzma.LZMAFile(out, "w", format=lzma.FORMAT_XZ, filters=filters) as z, tarfile.open(fileobj=z, mode="w") as t:
            for n in names:
                t.add(src / n, arcname=n)


def pack(src: Path, dest: Path, budget: int = ARCHIVE_BUDGET, echo=print) -> Packing:
    """src/* into dest (tar.xz): fast when that fits `budget` bytes, else solid (see above)."""
    tmp = dest.with_suffix(".tmp")
    names = members(src)
    t = time.perf_counter()
    _xz(src, names, tmp, FAST_LEVEL)
    packing = Packing("fast", FAST_LEVEL, None, tmp.stat().st_size, time.perf_counter() - t)
    if packing.bytes > budget:
        total = sum((src / n).stat().st_size for n in names)
        dict_bytes = solid_dict(total)
        echo(f"note: xz -{FAST_LEVEL} gave {packing.bytes / 2**20:.1f} MiB in {packing.seconds:.0f} s, over the "
             f"{budget / 2**20:.0f} MiB budget; packing {total / 2**20:.0f} MiB again as one xz -{SOLID_LEVEL} stream "
             f"with a {dict_bytes // 2**20} MiB dictionary (one thread, a few minutes)")
        _xz(src, names, tmp, SOLID_LEVEL, dict_bytes)
        packing = Packing("solid", SOLID_LEVEL, dict_bytes, tmp.stat().st_size, time.perf_counter() - t)
        if packing.bytes > budget:
            echo(f"warning: {dest.name} is {packing.bytes / 2**20:.1f} MiB even packed solid; "
                 f"check the GPU machine's carry limit")
    tmp.replace(dest)
    return packing


def runs_vulkan(info: dict) -> bool:
    """Whether some binary of build-info `info` runs on Vulkan: as a GPU role, or as a variant."""
    devices = [*info.get("gpu_devices", {}).values(), *(d for ds in info.get("gpu_variants", {}).values() for d in ds)]
    return "vulkan" in devices


def download_debs(names: list[str], dest: Path, echo=print) -> list[Path]:
    if not shutil.which("apt-get"):
        echo("note: no apt-get here; bring the Vulkan loader packages to the GPU machine yourself")
        return []
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", "-q", *names], cwd=dest, check=True, capture_output=True)
    return sorted(dest.glob("*.deb"))


def make_bundle(layout: Layout, out: Path, gpu: str = "cuda", candle_cuda: bool = False,
                vulkan_loader: bool | None = None, echo=print, bins: Path | None = None) -> dict:
    """Build, pack and describe; `vulkan_loader=None` means: when burn was built for Vulkan. `bins`: where the
    binaries are collected before packing (default the cache's prebuilt-<gpu>; an upgrade uses its own folder)."""
    check_bundle_host()  # a Mac or an arm64 host would pack binaries the GPU machine cannot execute
    bins = bins or cache_home() / f"prebuilt-{gpu}"
    shutil.rmtree(bins, ignore_errors=True)  # only what this checkout's manifest builds
    info = build_prebuilt(layout, gpu, bins, echo=echo, candle_cuda=candle_cuda)
    out.mkdir(parents=True, exist_ok=True)
    packing = pack(bins, out / ARCHIVE, echo=echo)
    size = packing.bytes
    shutil.copy2(bins / buildmod.BUILD_INFO, out / buildmod.BUILD_INFO)
    if vulkan_loader is None:
        vulkan_loader = runs_vulkan(info)
    debs = download_debs(VULKAN_DEBS, out / "debs", echo) if vulkan_loader else []
    run = out / "run.sh"
    run.write_text(RUN_SH, encoding="utf-8")
    run.chmod(0o755)
    total = size + sum(d.stat().st_size for d in debs) + len(RUN_SH)
    echo(f"bundle: {out} ({total / 2**20:.1f} MiB: {ARCHIVE} {size / 2**20:.1f} MiB packed {packing.mode} in "
         f"{packing.seconds:.0f} s, {len(debs)} .deb); "
         f"on the GPU machine, from the repository root: bash {layout.rel(run)}")
    return {**info, "archive_bytes": size, "packing": packing.mode, "xz_level": packing.level,
            "xz_dict_bytes": packing.dict_bytes, "debs": [d.name for d in debs], "bundle_bytes": total}
