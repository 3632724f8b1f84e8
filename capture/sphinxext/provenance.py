"""Publish what the figures point to: the fragments (text + metadata) and the full source files.

Every number, cell and chart links to `_fragments/<platform>/<key>.json`; every snippet
caption links to `_code/<path>.txt` (as text so browsers show it instead of downloading).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from capture.sphinxext.common import book

CODE_GLOBS = ("snippets/*.py", "crates/*/src/**/*.rs", "crates/*/Cargo.toml", "crates/Cargo.toml", "docs/experiments.toml")


def copy_provenance(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    b = book(app.env)
    out = Path(app.outdir)
    frag_out = out / "_fragments"
    if b.layout.fragments.is_dir():
        for src in b.layout.fragments.rglob("*"):
            if src.is_file() and src.suffix in (".txt", ".json") and not src.name.startswith("."):
                dst = frag_out / src.relative_to(b.layout.fragments)
                _copy_if_changed(src, dst)
    for pattern in CODE_GLOBS:
        for src in b.layout.root.glob(pattern):
            _copy_if_changed(src, out / "_code" / (src.relative_to(b.layout.root).as_posix() + ".txt"))


def _copy_if_changed(src: Path, dst: Path) -> None:
    if dst.exists() and dst.stat().st_size == src.stat().st_size and dst.read_bytes() == src.read_bytes():
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
