"""Where things live: the repository, the fragment store, the build caches; and the one path policy.

Path policy: every path that comes from a page, the manifest or the environment is resolved
(symlinks followed) and must stay inside its allowed root: a snippet under snippets/, a crate
under crates/, a fragment folder under docs/_fragments/<valid platform key>/. A path that
leaves its root (`..`, an absolute path, a symlink pointing elsewhere, a root that is itself a
symlink out of the repository) is refused with a PathError that says which rule it broke.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath

from capture.storage.keys import check_platform_key
from capture.system import regular

# Roots a page may show files from ({snippet}); a manifest script lives under snippets/, a crate under crates/.
SHOWN_ROOTS = ("snippets", "crates")
CRATE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")


class PathError(ValueError):
    """A path that breaks the path policy; the message names the path, the rule and the allowed root."""


class SymlinkLoop(PathError):
    """A path that is a symlink loop (a link to itself, or links in a circle): it names no file at all."""


def find_root(start: Path | None = None) -> Path:
    """The repository root: the nearest folder above `start` holding docs/experiments.toml."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        manifest = d / "docs" / "experiments.toml"
        if manifest.is_file():
            return d
        if os.path.lexists(manifest):  # there, but a FIFO, a folder, a broken link...: this is the book, its manifest is not
            restore = f"restore it (git -C {d} checkout -- docs/experiments.toml), then run the command again"
            try:
                regular.check(manifest)
                why = ": cannot be read"
            except regular.NotRegular as e:
                raise SystemExit(f"error: {manifest} is {e.what}, not a regular file; remove it (rm {manifest}) and "
                                 f"{restore}") from None
            except OSError as e:
                why = f": {e.strerror or e}" + (f" (a symlink to {os.readlink(manifest)})" if manifest.is_symlink() else "")
            raise SystemExit(f"error: {manifest}{why}; remove it (rm {manifest}) and {restore}")
    raise SystemExit(f"error: no docs/experiments.toml above {here}; run from the book's repository")


def cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "eager-book"


def cargo_registry_src() -> Path:
    """Where cargo unpacks the crates it downloads: $CARGO_HOME/registry/src (~/.cargo by default)."""
    return Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo") / "registry" / "src"


def relative_shape(text: object, what: str) -> PurePosixPath:
    """The checks that need no file system: a relative POSIX path without '..', '.' or empty parts."""
    if not isinstance(text, str) or not text.strip():
        raise PathError(f"{what} must be a non-empty relative path, not {text!r}")
    if "\\" in text or "\0" in text:
        raise PathError(f"{what} {text!r}: write the path with '/' and no NUL or backslash")
    p = PurePosixPath(text)
    if p.is_absolute() or re.match(r"^[A-Za-z]:", text):
        raise PathError(f"{what} {text!r} is absolute; write it relative to the repository root")
    if any(part in ("..", ".") for part in text.split("/")) or "//" in text:
        raise PathError(f"{what} {text!r} has '..', '.' or an empty part; write the plain path inside the repository")
    return p


def contained(path: Path, root: Path, what: str, real_root: Path | None = None) -> Path:
    """`path` resolved (symlinks followed); it must lie inside `root` (also resolved, or `real_root` when the
    caller has it)."""
    real_root = real_root or root.resolve()
    try:
        real = path.resolve()
    except (RuntimeError, OSError) as e:  # a symlink loop: RuntimeError before Python 3.13, OSError (ELOOP) from it on
        if isinstance(e, OSError) and e.errno != errno.ELOOP:
            raise
        raise SymlinkLoop(f"{what} {path} is {regular.LOOP}, not a regular file; remove it (rm {path}) and "
                          "restore the file (git checkout, or the command that makes it)") from None
    if real != real_root and real_root not in real.parents:
        link = " (through a symlink)" if path.absolute() != real else ""
        raise PathError(f"{what} {path} leaves {root}{link}: it resolves to {real}; only files inside {root} are allowed")
    return real


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
        """Scratch files of runs (records being written, logs); never committed."""
        return self.root / ".capture"

    def run_dir(self, platform: str, kind: str = "runs") -> Path:
        """A fresh scratch folder for one process's run, never shared: .capture/<kind>/<platform>/<pid>-<random>/."""
        d = self.scratch / kind / check_platform_key(platform) / f"{os.getpid()}-{secrets.token_hex(4)}"
        d.mkdir(parents=True, exist_ok=False)
        return d

    @property
    def cargo_target(self) -> Path:
        """One shared Cargo target dir outside the repo, so clean clones and CI reuse builds."""
        env = os.environ.get("CARGO_TARGET_DIR")
        return Path(env) if env else cache_home() / "cargo-target"

    @cached_property
    def real_root(self) -> Path:
        """The repository root resolved, once: every path check and shown path is relative to it."""
        return self.root.resolve()

    def rel(self, p: Path) -> str:
        try:
            return p.resolve().relative_to(self.real_root).as_posix()
        except ValueError:
            return str(p)

    # -- the path policy -------------------------------------------------------------------
    def _allowed_root(self, name: str) -> Path:
        """snippets/ or crates/; the folder itself must not be a symlink out of the repository."""
        root = self.root / name
        contained(root, self.root, f"the {name}/ folder", self.real_root)
        return root

    def script(self, text: object) -> Path:
        """A manifest `script`: an existing file under snippets/, resolved."""
        p = relative_shape(text, "script")
        if p.parts[0] != "snippets" or len(p.parts) < 2:
            raise PathError(f"script {text!r} must be a file under snippets/")
        real = contained(self.root / p, self._allowed_root("snippets"), "script")
        if not real.is_file():
            raise PathError(f"script {text} not found (looked for {self.root / p})")
        return real

    def crate(self, name: object) -> Path:
        """A manifest `crate`: a folder crates/<name>/ holding Cargo.toml, resolved."""
        if not isinstance(name, str) or not CRATE_NAME.fullmatch(name):
            raise PathError(f"crate {name!r} must be a crate folder name under crates/ (letters, digits, '_' or '-')")
        real = contained(self.crates / name, self._allowed_root("crates"), "crate")
        if not (real / "Cargo.toml").is_file():
            raise PathError(f"crate crates/{name} not found (no {self.crates / name / 'Cargo.toml'})")
        return real

    def shown(self, text: object) -> Path:
        """A file a page shows ({snippet} path): an existing file under snippets/ or crates/, resolved."""
        p = relative_shape(text, "snippet path")
        if p.parts[0] not in SHOWN_ROOTS or len(p.parts) < 2:
            raise PathError(f"snippet {text}: only files under snippets/ or crates/ can be shown")
        real = contained(self.root / p, self._allowed_root(p.parts[0]), "snippet")
        if not real.is_file():
            raise PathError(f"snippet file {text} not found")
        return real
