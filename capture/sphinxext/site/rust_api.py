"""Incremental builds with sphinx-rust: its generated pages are re-read only when the crates change.

sphinx-rust 0.0.2 deletes and rewrites docs/api/crates/<crate>/ on every build, so every
API page looks newer than the last build and Sphinx re-reads and re-writes all of them,
even when nothing changed. It also records no dependency on the Rust sources, so the
fresh timestamps are what makes a changed doc comment show up at all.

This module keeps both properties and drops the waste: around sphinx-rust's
builder-inited handler it puts back the old timestamps of generated files whose bytes
did not change, and it marks every generated page outdated when a crate's sources
(*.rs, Cargo.toml) changed since the last build.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

from capture.sphinxext.site.depends import Dependency

logger = logging.getLogger(__name__)

GENERATED = ("api", "crates")  # where sphinx-rust writes, under the source directory


def _generated_files(app: Sphinx) -> list[Path]:
    root = Path(app.srcdir, *GENERATED)
    return [p for p in root.rglob("*") if p.is_file()] if root.is_dir() else []


def _warn(what: str, exc: Exception, where) -> None:
    """An I/O problem here costs an incremental rebuild at most: a located warning, never an exception."""
    logger.warning(f"{what}: {type(exc).__name__}: {exc}", location=str(where), type="book", subtype="rust-api")


def before_sphinx_rust(app: Sphinx) -> None:
    app.book_rust_pages = {}
    for p in _generated_files(app):
        try:
            app.book_rust_pages[p] = (p.read_bytes(), p.stat().st_mtime_ns)
        except OSError as e:
            _warn("generated API page not read", e, p)


def after_sphinx_rust(app: Sphinx) -> None:
    old = getattr(app, "book_rust_pages", {})
    for path in _generated_files(app):
        try:
            if path in old and path.read_bytes() == old[path][0]:
                os.utime(path, ns=(old[path][1], old[path][1]))
        except OSError as e:
            _warn("generated API page timestamp not kept (it will be rebuilt)", e, path)


def sources_digest(app: Sphinx) -> str:
    digest = hashlib.sha256()
    for crate in app.config.rust_crates:
        root = Path(app.srcdir, crate)
        for path in sorted([*root.rglob("*.rs"), root / "Cargo.toml"]):
            if path.is_file() and "target" not in path.relative_to(root).parts:
                try:
                    digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
                except OSError as e:
                    _warn("Rust source not read for the API pages' freshness", e, path)
    return digest.hexdigest()


def generated_pages(app: Sphinx, env: BuildEnvironment) -> list[str]:
    prefix = "/".join(GENERATED) + "/"
    return [d for d in env.found_docs if d.startswith(prefix)]


CRATES = Dependency("rust-crates", sources_digest, pages=generated_pages)


def complete_definitions(app: Sphinx, doctree, docname: str) -> None:
    """sphinx-rust writes an item without a doc comment as a <dl> with a <dt> and no <dd>, which is not
    a valid definition list (axe: definition-list). An empty description makes it one."""
    if not docname.startswith("/".join(GENERATED) + "/"):
        return
    for desc in doctree.findall(addnodes.desc):
        if not any(isinstance(child, addnodes.desc_content) for child in desc.children):
            desc += addnodes.desc_content()


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("sphinx_rust")
    app.connect("builder-inited", before_sphinx_rust, priority=400)  # sphinx-rust's runs at 500
    app.connect("builder-inited", after_sphinx_rust, priority=600)
    CRATES.connect(app)
    app.connect("doctree-resolved", complete_definitions)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
