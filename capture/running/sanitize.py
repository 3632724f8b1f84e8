"""Captured text without the capturing machine's personal paths, before it is stored and published.

Run output carries absolute paths: a Rust panic names its source file under the cargo registry
(`/Users/<login>/.cargo/registry/src/index.crates.io-<hash>/burn-tensor-0.22.1/src/...`), a Python
traceback names the checkout, a tool names its temporary directory. Stored as they are, fragments would
publish the author's login and differ between machines for no reason. The rewrites, in this order:

    <anything>/registry/src/<registry>-<hash>/<crate>-<ver>/...   ->  <crate>-<ver>/...
    <anything>/git/checkouts/<repo>-<hash>/<rev>/...              ->  <repo>@<rev>/...
    <the repository root>/...                                      ->  ...   (relative)
    <a temporary directory>/...                                    ->  <tmp>/...
    <the home directory>/...                                       ->  ~/...

This is what gets stored; the comparison masks of capture/running/normalize.py still apply on top of it.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

# characters that end a path in running text: whitespace, quotes, brackets, and ':' before a line number
_PATH_CHARS = r"[^\s'\"`()\[\]{}<>,;:]"
_REGISTRY = re.compile(rf"(?:/{_PATH_CHARS}+?)?/registry/src/[^/\s]+-[0-9a-f]{{16}}/")
_GIT_CHECKOUT = re.compile(rf"(?:/{_PATH_CHARS}+?)?/git/checkouts/([^/\s]+)-[0-9a-f]{{16}}/([0-9a-f]{{7,40}})/")
# temporary directories of Linux and macOS that hold no user name of their own
_TMP_ROOTS = ("/private/var/folders/", "/var/folders/", "/private/tmp/", "/tmp/", "/var/tmp/")
_MAC_TMP = re.compile(r"(?:/private)?/var/folders/[^/\s]+/[^/\s]+/[A-Z]/")  # $TMPDIR = /var/folders/xx/yyyy/T/


@dataclass(frozen=True)
class Places:
    """The machine-specific prefixes to rewrite (given explicitly in tests)."""

    root: str | None = None  # the repository
    home: str | None = None
    tmp: tuple[str, ...] = ()  # extra temporary directories ($TMPDIR, tempfile.gettempdir())


def here(root: Path | None) -> Places:
    """This machine's places: the checkout, $HOME, and the temporary directories Python would use."""
    tmps = {tempfile.gettempdir(), os.environ.get("TMPDIR", "")}
    tmps |= {os.path.realpath(t) for t in tmps if t}
    home = os.path.expanduser("~")
    return Places(
        root=str(root) if root else None,
        home=home if home not in ("/", "~") else None,
        tmp=tuple(sorted(t.rstrip("/") for t in tmps if t and t != "/")),
    )


def _whole(path: str) -> str:
    """A regex for `path` as a whole path: /home/x matches /home/x and /home/x/..., not /home/xy
    or /data/home/x."""
    return r"(?<![\w.~>-])" + re.escape(path.rstrip("/")) + r"(?![\w.-])"


def text(s: str, places: Places) -> str:
    """`s` with the rewrites above applied."""
    s = _REGISTRY.sub("", s)
    s = _GIT_CHECKOUT.sub(r"\1@\2/", s)
    roots = {places.root, os.path.realpath(places.root)} if places.root else set()
    for root in sorted(roots - {"", "/"}, key=len, reverse=True):
        s = re.sub(_whole(root) + "/", "", s)
        s = re.sub(_whole(root), ".", s)
    s = _MAC_TMP.sub("<tmp>/", s)
    for t in sorted(set(places.tmp) - {"", "/"}, key=len, reverse=True):
        s = re.sub(_whole(t), "<tmp>", s)
    for t in _TMP_ROOTS:  # the usual ones, also when this process was given another TMPDIR
        s = re.sub(rf"(?<![\w.~>-]){re.escape(t)}", "<tmp>/", s)
    if places.home:
        s = re.sub(_whole(places.home), "~", s)
    return s


def records(recs: list[dict], places: Places) -> list[dict]:
    """The same rewrites on every text value and tag of a run's records."""
    out = []
    for r in recs:
        r = dict(r)
        if isinstance(r.get("value"), str):
            r["value"] = text(r["value"], places)
        if isinstance(r.get("tags"), dict):
            r["tags"] = {k: text(v, places) if isinstance(v, str) else v for k, v in r["tags"].items()}
        out.append(r)
    return out
