"""Inputs hash: everything an output depends on, hashed so that an unchanged input means no rerun.

The hash is platform-independent (it names the role, not the concrete device), so a docs
build anywhere can tell whether another machine's fragment is stale.

Scheme 2 (current) hashes what an output can depend on, not bytes: sources are normalised
(capture/plan/sourcehash.py: comments, blank space and, by default, line positions do not count),
TOML files are compared as data, and only files that belong to the tree are seen (git-tracked
or untracked-but-not-ignored; a Finder `.DS_Store` or an editor backup never counts). The Rust
toolchain pinned in crates/rust-toolchain.toml (or the repository root) is part of every Rust
experiment's inputs. Scheme 1 (raw bytes of every file under src/) is kept only so `restamp`
can tell that a fragment was fresh before the scheme changed (capture/commands/restamp.py).
"""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import tomllib
from functools import lru_cache
from pathlib import Path

from capture.system import regular
from capture.plan import sourcehash
from capture.plan.manifest import Experiment
from capture.storage.paths import Layout, PathError

# bump when the hashing scheme itself changes (then run `python -m capture restamp`); 3: Python
# f-strings hash the same on 3.11 and 3.12+ (capture/plan/sourcehash.py)
HASH_VERSION = 3
CRATE_PARTS = ("src", "build.rs", "kernels")
# Names that never belong to a source tree, for checkouts without git (e.g. a copied tree).
LITTER = (".DS_Store", "Thumbs.db", "desktop.ini")
LITTER_SUFFIXES = ("~", ".swp", ".swo", ".orig", ".rej", ".bak", ".tmp", ".pyc")


def file_digest(path: Path) -> str:
    """sha256 of the bytes, CRLF read as LF (scheme 1, and `exact` mode)."""
    data = regular.read_bytes(path).replace(b"\r\n", b"\n")
    return hashlib.sha256(data).hexdigest()


_IMPORTS: dict[Path, tuple[tuple[int, int, int], list[str]]] = {}  # file -> (stat stamp, imported names)


def _imported_names(f: Path) -> list[str]:
    """Absolute imports of one Python file (parsed once per change of the file in this process)."""
    now = sourcehash.stamp(f)
    hit = _IMPORTS.get(f)
    if hit and hit[0] == now:
        return hit[1]
    names: list[str] = []
    try:
        tree = ast.parse(regular.read_text(f), filename=str(f))
    except (SyntaxError, UnicodeDecodeError):
        tree = None  # the run will report it; the file itself is still hashed
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    _IMPORTS[f] = (now, names)
    return names


def _local_imports(script: Path, snippets: Path) -> set[Path]:
    """Modules under snippets/ that a script imports, recursively."""
    found: set[Path] = set()
    todo = [script]
    while todo:
        for name in _imported_names(todo.pop()):
            cand = snippets / (name.replace(".", "/") + ".py")
            if cand.is_file() and cand not in found:
                found.add(cand)
                todo.append(cand)
    return found


@lru_cache(maxsize=None)
def _tree_files(root: Path) -> frozenset[Path] | None:
    """Files git sees in the checkout (tracked, or untracked and not ignored); None without git."""
    try:
        r = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "crates", "snippets"],
            cwd=root, capture_output=True, timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    return frozenset((root / p).resolve() for p in r.stdout.decode("utf-8", "surrogateescape").split("\0") if p)


def _belongs(path: Path, root: Path) -> bool:
    if path.name in LITTER or path.name.endswith(LITTER_SUFFIXES) or path.name.startswith("."):
        return False
    tree = _tree_files(root)
    return tree is None or path.resolve() in tree


def _crate_files(crate_dir: Path, root: Path, scheme: int = HASH_VERSION) -> list[Path]:
    files = [crate_dir / "Cargo.toml"]
    for sub in CRATE_PARTS:
        p = crate_dir / sub
        if p.is_file():
            files.append(p)
        elif p.is_dir():
            found = sorted(x for x in p.rglob("*") if x.is_file())
            files.extend(found if scheme == 1 else [x for x in found if _belongs(x, root)])
    return files


@lru_cache(maxsize=None)
def _workspace_paths(crates: Path) -> dict[str, Path]:
    ws = tomllib.loads((crates / "Cargo.toml").read_text(encoding="utf-8"))
    deps = ws.get("workspace", {}).get("dependencies", {})
    return {k: crates / v["path"] for k, v in deps.items() if isinstance(v, dict) and "path" in v}


def _path_deps(crate_dir: Path, crates: Path) -> set[Path]:
    """Local crates this crate depends on (workspace path deps or direct path deps), recursively."""
    out: set[Path] = set()
    todo = [crate_dir]
    while todo:
        d = todo.pop()
        data = tomllib.loads((d / "Cargo.toml").read_text(encoding="utf-8"))
        tables = [data.get("dependencies", {})]
        tables += [t.get("dependencies", {}) for t in data.get("target", {}).values()]
        for table in tables:
            for name, spec in table.items():
                target = None
                if isinstance(spec, dict) and "path" in spec:
                    target = (d / spec["path"]).resolve()
                elif isinstance(spec, dict) and spec.get("workspace"):
                    target = _workspace_paths(crates).get(name)
                if target and target not in out:
                    out.add(target)
                    todo.append(target)
    return out


_PINS: dict[Path, tuple[tuple[int, int, int], str]] = {}  # uv.lock -> (stat stamp, torch version)


def torch_pin(layout: Layout) -> str:
    """The torch version uv.lock pins ("unpinned" without a lock); the lock is parsed once per change."""
    lock = layout.root / "uv.lock"
    if not lock.is_file():
        return "unpinned"
    now = sourcehash.stamp(lock)
    if (hit := _PINS.get(lock)) and hit[0] == now:
        return hit[1]
    pin = next((pkg.get("version", "unpinned") for pkg in tomllib.loads(lock.read_text(encoding="utf-8")).get("package", [])
                if pkg.get("name") == "torch"), "unpinned")
    _PINS[lock] = (now, pin)
    return pin


def toolchain_files(layout: Layout) -> list[Path]:
    """rust-toolchain(.toml) pinning the compiler, wherever the workspace keeps it."""
    names = ("rust-toolchain.toml", "rust-toolchain")
    return [d / n for d in (layout.crates, layout.root) for n in names if (d / n).is_file()]


def source_files(exp: Experiment, layout: Layout, scheme: int = HASH_VERSION) -> list[Path]:
    """The files an experiment's output depends on (paths checked by the path policy: capture/storage/paths.py)."""
    where = f"{layout.manifest}:{exp.line}: experiment {exp.id}"
    try:
        files = []
        if exp.script:
            script = layout.script(exp.script)
            files = [script, *sorted(_local_imports(script, layout.snippets))]
            if not exp.runs:
                return files
        crate_dir = layout.crate(exp.build_crate)
    except PathError as e:
        raise FileNotFoundError(f"{where}: {e}") from None
    files += _crate_files(crate_dir, layout.root, scheme)
    for dep in sorted(_path_deps(crate_dir, layout.crates)):
        files += _crate_files(dep, layout.root, scheme)
    files += [layout.crates / "Cargo.toml", layout.crates / "Cargo.lock"]
    if scheme >= 2:
        files += toolchain_files(layout)
    return [f for f in files if f.is_file()]


def inputs(exp: Experiment, role: str, layout: Layout, scheme: int = HASH_VERSION) -> dict:
    """The inputs record of one (experiment, role): what the hash covers, readable."""
    if scheme == 1:
        files = {layout.rel(f): file_digest(f) for f in source_files(exp, layout, 1)}
    else:
        files = {layout.rel(f): sourcehash.digest(f, exp.source_hash, scheme) for f in source_files(exp, layout, scheme)}
    rec = {
        "hash_version": scheme,
        "files": files,
        "role": role,
        "framework": exp.framework,
        "args": list(exp.args[role]),
        "env": dict(sorted(exp.env.items())),
    }
    if scheme >= 2:
        rec["source_hash"] = exp.source_hash
    if exp.processes != 1:  # absent when 1, so existing fragments keep their hash
        rec["processes"] = exp.processes
    if exp.caches:
        rec["caches"] = exp.caches
    if exp.gpu_device and role == "gpu":  # absent otherwise, so existing fragments keep their hash
        rec["gpu_device"] = exp.gpu_device
    if exp.features:  # absent when none, so existing fragments keep their hash
        rec["features"] = list(exp.features)
    if exp.script:
        rec["torch_pin"] = torch_pin(layout)
    return rec


def digest(rec: dict) -> str:
    blob = json.dumps(rec, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def inputs_hash(exp: Experiment, role: str, layout: Layout, scheme: int = HASH_VERSION) -> str:
    return digest(inputs(exp, role, layout, scheme))
