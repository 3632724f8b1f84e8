"""Incremental builds: re-read pages that show fragments when the fragment store changes.

Sphinx re-reads a page when a file it noted as a dependency changes, but a fragment that did
not exist at the last read (e.g. the first capture on a new platform) was never noted. So each
page using a capture directive is remembered, and all of them are re-read whenever the list of
fragment files or their contents (their JSON metadata) differ from the last build.
"""

from __future__ import annotations

import hashlib

from capture.sphinxext.common import book


def store_fingerprint(app) -> str:
    root = book(app.env).layout.fragments
    h = hashlib.sha256()
    if root.is_dir():
        for p in sorted(root.rglob("*.json")):
            st = p.stat()
            h.update(f"{p.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def note_page(env) -> None:
    """Called by every capture directive/role: this page depends on the store."""
    if not hasattr(env, "capture_pages"):
        env.capture_pages = set()
    env.capture_pages.add(env.docname)


def outdated(app, env, added, changed, removed):
    fp = store_fingerprint(app)
    old = getattr(env, "capture_store_fingerprint", None)
    env.capture_store_fingerprint = fp
    if old is None or old == fp:
        return []
    return sorted(getattr(env, "capture_pages", set()) - set(removed))


def purge(app, env, docname):
    getattr(env, "capture_pages", set()).discard(docname)


def merge(app, env, docnames, other):
    if not hasattr(env, "capture_pages"):
        env.capture_pages = set()
    env.capture_pages |= getattr(other, "capture_pages", set()) & set(docnames)
