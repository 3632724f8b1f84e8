"""Where things live: the repository, the fragment store, the build caches."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def find_root(start: Path | None = None) -> Path:
    """The repository root: the nearest folder above `start` holding docs/experiments.toml."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "docs" / "experiments.toml").is_file():
            return d
    raise SystemExit(f"error: no docs/experiments.toml above {here}; run from the book's repository")


def cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "eager-book"


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / "docs" / "experiments.toml"

    @property
    def fragments(self) -> Path:
        return self.root / "docs" / "_fragments"

    @property
    def crates(self) -> Path:
        return self.root / "crates"

    @property
    def snippets(self) -> Path:
        return self.root / "snippets"

    @property
    def scratch(self) -> Path:
        """Per-run scratch files (records being written, logs); never committed."""
        return self.root / ".capture"

    @property
    def cargo_target(self) -> Path:
        """One shared Cargo target dir outside the repo, so clean clones and CI reuse builds."""
        env = os.environ.get("CARGO_TARGET_DIR")
        return Path(env) if env else cache_home() / "cargo-target"

    def rel(self, p: Path) -> str:
        try:
            return p.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return str(p)
