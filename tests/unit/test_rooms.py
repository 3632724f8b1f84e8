"""The rooms of capture/ (capture.ROOMS): each imports only the rooms listed before it, the core imports
nothing outside the standard library, the Sphinx layer only reads, and docs/dev/architecture.md draws
the rooms as they are in the tree."""

from __future__ import annotations

import ast
import re
import shutil
import sys
from pathlib import Path

import capture

REPO = Path(__file__).resolve().parents[2]
PICTURE = REPO / "docs/dev/architecture.md"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _optional(tree) -> set[int]:
    """Lines inside a `try:` that catches ImportError: an import there is optional, the code runs without it."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError") for h in node.handlers):
            for stmt in node.body:
                lines.update(range(stmt.lineno, stmt.end_lineno + 1))
    return lines


def _imports(path: Path, root: Path):
    """(line, imported module, optional) for every import in a file, lazy ones included, relative ones resolved."""
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    optional = _optional(tree)
    for node, module in _each_import(tree, package):
        yield node.lineno, module, node.lineno in optional


def _each_import(tree, package: str):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "capture" or room_of(module) and module.count(".") == 1:  # `from capture(.room) import x`
                for a in node.names:
                    yield node, f"{module}.{a.name}"
            else:
                yield node, module


def room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "capture" and parts[1] in capture.ROOMS else None


def violations(root: Path, rooms=capture.ROOMS, read_only_above=capture.READ_ONLY_ABOVE) -> list[str]:
    """Every break of the rules, as 'file:line: what' (root: a capture/ folder)."""
    order = {r: i for i, r in enumerate(rooms)}
    top = set(rooms) | {"__init__.py", "__main__.py", "__pycache__"}
    out = [f"{p.relative_to(root.parent)}: not in a room (capture.ROOMS: {', '.join(rooms)})"
           for p in sorted(root.iterdir()) if p.name not in top and (p.suffix == ".py" or p.is_dir())]
    out += [f"capture/{r}: listed in capture.ROOMS but missing" for r in rooms if not (root / r / "__init__.py").is_file()]
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(root.parent)
        here = room_of(_module_name(path, root))
        for line, module, optional in _imports(path, root):
            where = f"{rel}:{line}"
            first = module.split(".")[0]
            if first != "capture":
                if here != "sphinxext" and not optional and first not in sys.stdlib_module_names:
                    out.append(f"{where}: the core imports only the standard library, not {first}")
                continue
            there = room_of(module)
            if here is None or there is None or there == here:
                continue  # capture/__main__.py is the entry; `capture` itself holds ROOMS
            if order[there] > order[here]:
                out.append(f"{where}: room {here} imports {module}, a room above it")
            elif here == "sphinxext" and order[there] >= order[read_only_above]:
                out.append(f"{where}: the Sphinx layer only reads; it may not import {module}")
    return out


def room_edges(root: Path) -> set[tuple[str, str]]:
    edges = set()
    for path in root.rglob("*.py"):
        here = room_of(_module_name(path, root))
        for _, module, _ in _imports(path, root):
            there = room_of(module)
            if here and there and there != here:
                edges.add((here, there))
    return edges


def picture(root: Path) -> str:
    """The mermaid block docs/dev/architecture.md must hold: the rooms bottom-up, each with its modules,
    and the room-to-room imports that are not implied by others (the transitive reduction)."""
    edges = room_edges(root)

    def reaches(a, b, skip):
        todo, seen = [a], set()
        while todo:
            x = todo.pop()
            for (s, t) in edges:
                if s == x and (s, t) != skip and t not in seen:
                    if t == b:
                        return True
                    seen.add(t)
                    todo.append(t)
        return False

    lines = ["```{mermaid}", "flowchart BT"]
    for r in capture.ROOMS:
        mods = sorted(p.stem for p in (root / r).glob("*.py") if p.stem != "__init__")
        subs = sorted(p.name + "/" for p in (root / r).iterdir() if p.is_dir() and p.name != "__pycache__")
        lines.append(f'  {r}["{r}/<br/>{" ".join(mods + subs)}"]')
    for s, t in sorted(edges, key=lambda e: (capture.ROOMS.index(e[0]), capture.ROOMS.index(e[1]))):
        if not reaches(s, t, (s, t)):
            lines.append(f"  {s} --> {t}")
    lines.append("```")
    return "\n".join(lines)


def test_rooms_keep_their_rules():
    assert violations(REPO / "capture") == []


def test_every_room_says_what_it_holds_and_may_use():
    for r in capture.ROOMS:
        doc = ast.get_docstring(ast.parse((REPO / "capture" / r / "__init__.py").read_text(encoding="utf-8")))
        assert doc, f"capture/{r}/__init__.py has no docstring"
        if r != "sphinxext":
            assert "May use:" in doc, f"capture/{r}/__init__.py does not say which rooms it may use"


def _planted(tmp_path: Path, file: str, line: str) -> list[str]:
    root = tmp_path / "capture"
    shutil.copytree(REPO / "capture", root, ignore=shutil.ignore_patterns("__pycache__"))
    target = root / file
    target.write_text(target.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")
    return violations(root)


def test_an_upward_import_fails(tmp_path):
    found = _planted(tmp_path, "system/regular.py", "from capture.commands import cli")
    assert len(found) == 1 and found[0].startswith("capture/system/regular.py:")
    assert "room system imports capture.commands.cli, a room above it" in found[0]


def test_a_lazy_upward_import_fails(tmp_path):
    found = _planted(tmp_path, "storage/store.py", "def f():\n    from capture.evidence import book")
    assert [v for v in found if "room storage imports capture.evidence.book" in v]


def test_a_third_party_import_in_the_core_fails(tmp_path):
    found = _planted(tmp_path, "evidence/fmt.py", "import docutils")
    assert found == [f"capture/evidence/fmt.py:{len((REPO / 'capture/evidence/fmt.py').read_text().splitlines()) + 2}: "
                     "the core imports only the standard library, not docutils"]


def test_the_sphinx_layer_may_not_run_anything(tmp_path):
    found = _planted(tmp_path, "sphinxext/numbers.py", "from capture.running import regenerate")
    assert len(found) == 1 and "the Sphinx layer only reads; it may not import capture.running.regenerate" in found[0]


def test_an_optional_import_in_the_core_is_allowed(tmp_path):
    assert _planted(tmp_path, "evidence/fmt.py", "try:\n    import docutils\nexcept ImportError:\n    docutils = None") == []


def test_a_module_outside_the_rooms_fails(tmp_path):
    root = tmp_path / "capture"
    shutil.copytree(REPO / "capture", root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "loose.py").write_text("X = 1\n")
    assert violations(root) == ["capture/loose.py: not in a room (capture.ROOMS: " + ", ".join(capture.ROOMS) + ")"]


def test_architecture_page_draws_the_rooms_as_they_are():
    text = PICTURE.read_text(encoding="utf-8")
    blocks = re.findall(r"```\{mermaid\}\nflowchart BT\n.*?\n```", text, re.S)
    want = picture(REPO / "capture")
    assert blocks and blocks[0] == want, (
        f"{PICTURE.relative_to(REPO)}: the rooms picture does not match capture/; replace its first "
        f"`flowchart BT` mermaid block with:\n\n{want}\n")
    for r in capture.ROOMS:  # one line per room under the picture
        assert re.search(rf"^- \*\*`{r}/`\*\*", text, re.M), f"{PICTURE.relative_to(REPO)}: no line for room {r}"
