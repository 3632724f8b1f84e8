"""The reader's own machine: a platform captured outside the committed book.

`nox -s yours` (`python -m capture yours`) captures this host as the reader's platform into
.capture/yours/<key>/ (git-ignored, the same layout as a docs/_fragments/<key>/ folder, so
capture/storage/store.py reads and writes it), and the local site built with BOOK_YOURS=1 shows it
beside the book's machines as 「你的机器」 (capture/evidence/book.py). The published build and
`nox -s docs` never set BOOK_YOURS, so the reader's machine never reaches them.

Nothing is named by hand. The key comes from the host's fingerprint (capture/machines/fingerprint.py):
the key `BOOK_PLATFORM` would be given for a platform of its own (system, architecture, GPU or "cpu", CPU
model) and six hex digits of the whole fingerprint, so two machines never share a folder and a machine
that changes (more memory, another GPU) starts a folder of its own. A host that is the machine of one of
the book's platforms (same fingerprint as its platform.json) is that platform: nothing is captured for it,
the book's own figures are its figures.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from capture.machines import fingerprint as fpmod
from capture.machines import hosts
from capture.storage.keys import PLATFORM_KEY, PLATFORM_KEY_MAX
from capture.storage.paths import Layout
from capture.storage.store import Store

ENV = "BOOK_YOURS"  # "1": the site build includes the reader's machine (set by `nox -s yours` only)
FOLDER = "yours"  # under the scratch folder .capture/
NAME = "你的机器"  # how the pages name it
COMMAND = "nox -s yours"  # captures it and builds the local site


def enabled(environ=None) -> bool:
    return (environ if environ is not None else os.environ).get(ENV, "") == "1"


def store_root(layout: Layout) -> Path:
    return layout.scratch / FOLDER


def key_of(fp: dict) -> str:
    """The reader platform's key: the suggested key of a platform of its own, and a digest of the fingerprint."""
    normal = fpmod.normal(fp) or {}
    digest = hashlib.sha256(json.dumps(normal, sort_keys=True, ensure_ascii=True).encode("ascii")).hexdigest()[:6]
    base = fpmod.suggest_key(normal)[: PLATFORM_KEY_MAX - 7].rstrip("-_") or "machine"
    return f"{base}-{digest}"


@dataclass(frozen=True)
class Reader:
    """The reader's machine as the book sees it."""

    key: str  # its platform key: the reader's own, or the book platform this host is the machine of
    root: Path  # the store that holds it: .capture/yours, or docs/_fragments for a book platform
    fingerprint: dict
    book_platform: bool = False  # this host is the machine of the book's platform `key`

    @property
    def folder(self) -> Path:
        return self.root / self.key


def book_machine(layout: Layout, fp: dict) -> str | None:
    """The book platform whose machine this host is (its platform.json's fingerprint, else its fragments' hosts)."""
    store = Store(layout.fragments)
    for key in store.platforms():
        want, _ = hosts.machine_of(store, key)
        if want is not None and fpmod.same(want, fp):
            return key
    return None


def find(layout: Layout, fp: dict) -> Reader:
    """This host as the reader's machine: a book platform when it is that platform's machine, else its own."""
    key = book_machine(layout, fp)
    if key is not None:
        return Reader(key, layout.fragments, fpmod.normal(fp) or {}, True)
    return Reader(key_of(fp), store_root(layout), fpmod.normal(fp) or {})


def here() -> dict:
    """This host's fingerprint (what regenerate records as a fragment's `host`)."""
    from capture.machines.platform import detect, machine_record

    return fpmod.of_machine(machine_record(detect()))


def others(layout: Layout, reader: Reader) -> list[str]:
    """Folders under .capture/yours/ that are not this host's: another machine's (a checkout moved or shared)
    or an older key. The pages leave them out; the command names them."""
    root = store_root(layout)
    try:
        names = sorted(p.name for p in root.iterdir() if p.is_dir() and PLATFORM_KEY.fullmatch(p.name))
    except OSError:
        return []
    return [n for n in names if reader.book_platform or n != reader.key]
