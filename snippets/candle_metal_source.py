"""The Metal kernel sources a candle build with Metal embeds (the pinned candle-metal-kernels, from cargo's registry).

    python candle_metal_source.py

`src/source.rs` of candle-metal-kernels holds one `include_str!("metal_src/<file>.metal")` per kernel
library; those texts go into the binary as they are and are compiled at run time. The script lists the
files it names with their sizes and records the count and the total. A machine whose registry does not
hold the crate (no cargo, or cargo never resolved the macOS-only dependency) says so and records nothing.
"""

from __future__ import annotations

import re
import sys

from bookrec import record
from candle_source import pinned_version, registry_source


def main() -> None:
    version = pinned_version("candle-metal-kernels")
    src = registry_source("candle-metal-kernels", version)
    if src is None:
        print(f"candle-metal-kernels {version}: not in this machine's cargo registry; nothing counted")
        return
    # ANCHOR: metal_sources
    # source.rs 里每个 include_str! 是一个内核库的源码，原样编进二进制
    text = (src / "src" / "source.rs").read_text(encoding="utf-8")
    files = re.findall(r'include_str!\("([^"]+\.metal)"\)', text)
    sizes = {f: (src / "src" / f).stat().st_size for f in files}
    # ANCHOR_END: metal_sources
    print(f"candle-metal-kernels {version}: {len(files)} .metal files embedded by src/source.rs")
    for f, n in sorted(sizes.items(), key=lambda kv: -kv[1]):
        print(f"  {n:>8} B  {f}")
    total = sum(sizes.values())
    print(f"total {total} B")
    record("metal_source.files", len(files), "", version=version)
    record("metal_source.bytes", total, "B", version=version)
    record("metal_source.largest", max(sizes, key=sizes.get), "", version=version)


if __name__ == "__main__":
    sys.exit(main())
