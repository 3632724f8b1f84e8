"""Incremental builds: re-read pages that show fragments when the fragment store changes.

Sphinx re-reads a page when a file it noted as a dependency changes, but a fragment that did
not exist at the last read (e.g. the first capture on a new platform) was never noted. So each
page using a capture directive is noted (capture.sphinxext.common.book calls note_page), and all of them are
re-read whenever the list of fragment files or their metadata differ from the last build.
The bookkeeping is the site's one helper for such inputs (capture/sphinxext/site/depends.py).
"""

from __future__ import annotations

import hashlib

from pathlib import Path

from capture.sphinxext.site.depends import Dependency
from capture.storage.paths import Layout


def book_root(app) -> Path:
    """The book a build reads: `book_root` in conf.py, else the folder of conf.py."""
    return Path(app.config.book_root or app.confdir).resolve()


def store_fingerprint(app) -> str:
    layout = Layout(book_root(app))
    roots = [layout.fragments]
    if getattr(app.config, "book_yours", False):  # the reader's machine (capture/machines/yours.py)
        from capture.machines.yours import store_root

        roots.append(store_root(layout))
    h = hashlib.sha256()
    for root in roots:
        if root.is_dir():
            for p in sorted(root.rglob("*.json")):
                st = p.stat()
                h.update(f"{root.name}/{p.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


STORE = Dependency("fragment-store", store_fingerprint)


def note_page(env) -> None:
    """Called by every capture directive/role: this page depends on the store."""
    STORE.note(env)
