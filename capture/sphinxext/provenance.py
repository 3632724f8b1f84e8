"""Publish what the figures point to: the fragments (text + metadata) and the source files pages show.

Every number, cell and chart links to `_fragments/<platform>/<key>.json`; every snippet
caption links to `_code/<path>.txt` (as text so browsers show it instead of downloading).
`_code/` holds exactly the files that {snippet} directives show (recorded per page by
capture.sphinxext.snippet), each checked again against the path policy; a file no page shows
any more is removed from it. Fragments are copied from folders named by valid platform keys;
a symlink leaving the store is not copied. Problems are located warnings, never exceptions.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from capture.storage.keys import PLATFORM_KEY
from capture.storage.paths import PathError, contained
from capture.sphinxext.common import book, logger
from capture.sphinxext.snippet import shown_files


def copy_provenance(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    b = book(app.env)
    out = Path(app.outdir)
    copy_fragments(b.layout.fragments, out / "_fragments")
    if b.reader and not b.reader_is_book:  # the reader's machine, kept outside the book (capture/machines/yours.py)
        copy_fragments(b.folder(b.reader).parent, out / "_fragments", only=b.reader)
    copy_shown(b.layout, shown_files(app.env), out / "_code")


def copy_fragments(store: Path, dest: Path, only: str | None = None) -> None:
    if not store.is_dir():
        return
    for plat in sorted(store.iterdir()):
        if not plat.is_dir() or plat.name.startswith(".") or (only is not None and plat.name != only):
            continue
        if not PLATFORM_KEY.fullmatch(plat.name):
            logger.warning(f"{plat}: not a platform key, not published (the store only writes valid keys)",
                           location=str(plat), type="capture", subtype="provenance")
            continue
        for src in sorted(plat.rglob("*")):
            if src.name.startswith(".") or src.suffix not in (".txt", ".json") or not src.is_file():
                continue
            try:
                contained(src, store, "fragment file")
                _copy_if_changed(src, dest / src.relative_to(store))
            except (PathError, OSError) as e:
                logger.warning(f"fragment not published: {e}", location=str(src), type="capture", subtype="provenance")


def copy_shown(layout, shown: dict[str, dict[str, int]], dest: Path) -> None:
    """Copy each file a page shows to dest/<path>.txt; remove what no page shows any more."""
    files: dict[str, tuple[str, int]] = {}
    for doc in sorted(shown):
        for path, line in shown[doc].items():
            files.setdefault(path, (doc, line))
    published = set()
    for path, (doc, line) in sorted(files.items()):
        try:
            src = layout.shown(path)
            target = dest / f"{path}.txt"
            _copy_if_changed(src, target)
            published.add(target)
        except (PathError, OSError) as e:
            logger.warning(f"source of a snippet not published: {e}", location=(doc, line), type="capture", subtype="provenance")
    if dest.is_dir():
        for old in sorted(dest.rglob("*"), reverse=True):
            if old.is_file() and old not in published:
                old.unlink()
            elif old.is_dir() and not any(old.iterdir()):
                old.rmdir()


def _copy_if_changed(src: Path, dst: Path) -> None:
    if dst.is_file() and dst.stat().st_size == src.stat().st_size and dst.read_bytes() == src.read_bytes():
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
