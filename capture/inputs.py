"""Inputs hash: everything an output depends on, hashed so that an unchanged input means no rerun.

The hash is platform-independent (it names the role, not the concrete device), so a
docs build anywhere can tell whether another machine's fragment is stale.
Files are hashed in text mode (CRLF -> LF) so the same checkout hashes the same on every OS.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import tomllib
from functools import lru_cache
from pathlib import Path

from capture.manifest import Experiment
from capture.paths import Layout

HASH_VERSION = 1  # bump when the hashing scheme itself changes


def file_digest(path: Path) -> str:
    data = path.read_bytes().replace(b"\r\n", b"\n")
    return hashlib.sha256(data).hexdigest()


def _local_imports(script: Path, snippets: Path) -> set[Path]:
    """Modules under snippets/ that a script imports, recursively."""
    found: set[Path] = set()
    todo = [script]
    while todo:
        f = todo.pop()
        try:
            tree = ast.parse(f.read_text(encoding="utf-8"), filename=str(f))
        except SyntaxError:
            continue  # the run will report it; the file itself is still hashed
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                cand = snippets / (name.replace(".", "/") + ".py")
                if cand.is_file() and cand not in found:
                    found.add(cand)
                    todo.append(cand)
    return found


def _crate_files(crate_dir: Path) -> list[Path]:
    files = [crate_dir / "Cargo.toml"]
    for sub in ("src", "build.rs", "kernels"):
        p = crate_dir / sub
        if p.is_file():
            files.append(p)
        elif p.is_dir():
            files.extend(sorted(x for x in p.rglob("*") if x.is_file()))
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


def torch_pin(layout: Layout) -> str:
    lock = layout.root / "uv.lock"
    if not lock.is_file():
        return "unpinned"
    m = re.search(r'name = "torch"\nversion = "([^"]+)"', lock.read_text(encoding="utf-8"))
    return m.group(1) if m else "unpinned"


def source_files(exp: Experiment, layout: Layout) -> list[Path]:
    """The files an experiment's output depends on."""
    if exp.script:
        script = layout.root / exp.script
        if not script.is_file():
            raise FileNotFoundError(f"{layout.manifest}:{exp.line}: experiment {exp.id}: script {exp.script} not found")
        return [script, *sorted(_local_imports(script, layout.snippets))]
    crate_dir = layout.crates / exp.crate
    if not (crate_dir / "Cargo.toml").is_file():
        raise FileNotFoundError(f"{layout.manifest}:{exp.line}: experiment {exp.id}: crate crates/{exp.crate} not found")
    files = _crate_files(crate_dir)
    for dep in sorted(_path_deps(crate_dir, layout.crates)):
        files += _crate_files(dep)
    files += [layout.crates / "Cargo.toml", layout.crates / "Cargo.lock"]
    return [f for f in files if f.is_file()]


def inputs(exp: Experiment, role: str, layout: Layout) -> dict:
    """The inputs record of one (experiment, role): what the hash covers, readable."""
    files = {layout.rel(f): file_digest(f) for f in source_files(exp, layout)}
    rec = {
        "hash_version": HASH_VERSION,
        "files": files,
        "role": role,
        "framework": exp.framework,
        "args": list(exp.args[role]),
        "env": dict(sorted(exp.env.items())),
    }
    if exp.script:
        rec["torch_pin"] = torch_pin(layout)
    return rec


def digest(rec: dict) -> str:
    blob = json.dumps(rec, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def inputs_hash(exp: Experiment, role: str, layout: Layout) -> str:
    return digest(inputs(exp, role, layout))
