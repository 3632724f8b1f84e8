"""Pages that depend on something Sphinx does not watch, re-read when it changes.

Sphinx re-reads a page when its source or a file it noted (env.note_dependency) changes. Some
inputs are not files it can note: the fragment store as a whole (a fragment that did not exist at
the last read, e.g. the first capture on a new platform), another volume's inventory (a URL, or a
file that may appear), the Rust crates behind generated API pages. For each such input X:

    STORE = Dependency("fragment-store", fingerprint=store_fingerprint)
    STORE.connect(app)           # in setup()
    STORE.note(env)              # while reading a page that uses X

`fingerprint(app)` is computed once per build; when it differs from the last build's, every page
noted for X (and not removed) is re-read. The first build only records it. One helper for every
such input, so that noting, purging, parallel merging and comparing are done the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment


class Dependency:
    def __init__(self, name: str, fingerprint: Callable[[Sphinx], Any], pages: Callable[[Sphinx, BuildEnvironment], Iterable[str]] | None = None):
        """`pages`, when given, names the dependent pages itself (e.g. every generated API page) instead of note()."""
        self.name = name
        self.fingerprint = fingerprint
        self.pages = pages
        self._attr = "book_dep_" + name.replace("-", "_")

    # -- the pages that depend on it -----------------------------------------------------------
    def _noted(self, env: BuildEnvironment) -> set[str]:
        noted = getattr(env, self._attr + "_pages", None)
        if noted is None:
            noted = set()
            setattr(env, self._attr + "_pages", noted)
        return noted

    def note(self, env: BuildEnvironment, docname: str | None = None) -> None:
        """The page being read (or `docname`) depends on this input."""
        docname = docname or env.docname
        if docname:
            self._noted(env).add(docname)

    def dependents(self, app: Sphinx, env: BuildEnvironment) -> set[str]:
        return set(self.pages(app, env)) if self.pages else set(self._noted(env))

    # -- Sphinx events ---------------------------------------------------------------------------
    def _outdated(self, app: Sphinx, env: BuildEnvironment, added, changed, removed) -> list[str]:
        now = self.fingerprint(app)
        before = getattr(env, self._attr + "_fingerprint", None)
        setattr(env, self._attr + "_fingerprint", now)
        if before is None or before == now:
            return []
        return sorted(self.dependents(app, env) - set(removed))

    def _purge(self, app: Sphinx, env: BuildEnvironment, docname: str) -> None:
        self._noted(env).discard(docname)

    def _merge(self, app: Sphinx, env: BuildEnvironment, docnames, other: BuildEnvironment) -> None:
        self._noted(env).update(getattr(other, self._attr + "_pages", set()) & set(docnames))

    def connect(self, app: Sphinx) -> None:
        app.connect("env-get-outdated", self._outdated)
        app.connect("env-purge-doc", self._purge)
        app.connect("env-merge-info", self._merge)
