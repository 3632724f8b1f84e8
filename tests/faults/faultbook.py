"""A small throwaway book for fault cases: Python snippets only (no torch, no Rust), captured once per session.

Experiments: `good-a` and `good-b` (the fragments no fault may touch), `victim` (the one each case
breaks), `after` (runs after the victim in the batch, never captured in the template: it shows that
a fault in one experiment does not stop the others).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

from capture.plan.manifest import load
from capture.storage.paths import Layout
from capture.machines.platform import Platform
from capture.running.regenerate import Options, regenerate
from capture.storage.store import Store

REPO = Path(__file__).resolve().parents[2]
CPU = Platform(key="linux-x86_64-cpu", os="linux", arch="x86_64")
PLAT = CPU.key
GOODS = ("good-a@cpu", "good-b@cpu")

SAY = '''\
import sys
import bookrec
# ANCHOR: say
word = sys.argv[1]
print(f"say {word}")
bookrec.record("say.len", len(word), "chars", word=word)
# ANCHOR_END: say
'''

VICTIM = '''\
import bookrec
print("victim ok")
bookrec.record("victim.value", 1.5, "s")
'''

ENTRIES = {
    "good-a": 'id = "good-a"\nscript = "snippets/say.py"\nargs = ["alpha"]\n',
    "good-b": 'id = "good-b"\nscript = "snippets/say.py"\nargs = ["beta"]\n',
    "victim": 'id = "victim"\nscript = "snippets/victim.py"\n',
    "after": 'id = "after"\nscript = "snippets/say.py"\nargs = ["after"]\n',
}


def manifest_text(entries: dict[str, str] | None = None, defaults: str = "timeout = 20\n") -> str:
    entries = ENTRIES if entries is None else entries
    body = "".join(f"\n[[experiment]]\n{e}" for e in entries.values())
    return f"[defaults]\n{defaults}{body}"


def write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def make_template(root: Path) -> Layout:
    """The book with good-a, good-b and victim captured (not `after`)."""
    write(root / "snippets/say.py", SAY)
    write(root / "snippets/victim.py", VICTIM)
    shutil.copy(REPO / "snippets/bookrec.py", root / "snippets/bookrec.py")
    layout = Layout(root)
    write(layout.manifest, manifest_text({k: v for k, v in ENTRIES.items() if k != "after"}))
    outcomes, log = run(layout)
    assert all(o.status == "ok" for o in outcomes.values()), log
    write(layout.manifest, manifest_text())
    return layout


def run(layout: Layout, **kw):
    """Regenerate in-process; ({key: outcome}, progress text)."""
    out = io.StringIO()
    outcomes = regenerate(layout, load(layout.manifest), CPU, Store(layout.fragments), Options(**kw), out=out)
    return {o.key: o for o in outcomes}, out.getvalue()


def snapshot(layout: Layout) -> dict[str, bytes]:
    """Every file of the fragment store (the lock file aside), by path relative to the store."""
    root = layout.fragments
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink() and p.name != ".lock"}


def key_files(snap: dict[str, bytes], key: str) -> dict[str, bytes]:
    return {k: v for k, v in snap.items() if k.split("/")[-1].startswith(key + ".")}


def set_entry(layout: Layout, exp: str, text: str) -> None:
    """Replace one manifest entry's body (the `id` line included)."""
    entries = dict(ENTRIES)
    entries[exp] = text
    write(layout.manifest, manifest_text(entries))


def cli_env(**extra) -> dict[str, str]:
    env = {**os.environ, "BOOK_PLATFORM": PLAT, "PYTHONPATH": str(REPO), **extra}
    env.pop("BOOK_NO_GPU", None)
    return env


def spawn_code() -> str:
    return f"import sys; sys.path.insert(0, {str(REPO)!r}); from capture.commands.cli import main; raise SystemExit(main(sys.argv[1:]))"


def python() -> str:
    return sys.executable


def frag_json(layout: Layout, key: str, failed: bool = False) -> Path:
    return layout.fragments / PLAT / f"{key}{'.failed' if failed else ''}.json"


def meta_of(layout: Layout, key: str) -> dict:
    return json.loads(frag_json(layout, key).read_text())


def cut_between_renames(folder: Path, key: str, old: str, new: str, pid: int = 999999999) -> None:
    """What a publish killed between its two renames leaves (capture.storage.atomic.write_pair): the new text,
    the old JSON, and the old text kept under a temporary name of process `pid` (by default a dead one)."""
    (folder / f".{key}.txt.{pid}.abcdef.old.tmp").write_text(old, encoding="utf-8")
    (folder / f"{key}.txt").write_text(new, encoding="utf-8")
