"""Status: for every platform in the store, each experiment and role is fresh, stale, missing or failed."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from capture import inputs as inputsmod
from capture.manifest import Manifest
from capture.paths import Layout
from capture.store import Store


@dataclass(frozen=True)
class Entry:
    platform: str
    key: str
    state: str  # fresh | stale | missing | failed | torn | corrupt | n/a
    detail: str = ""


def platform_has_gpu(key: str) -> bool:
    return not key.endswith("-cpu")


def collect(layout: Layout, manifest: Manifest, store: Store, platforms: list[str]) -> list[Entry]:
    hashes = {}
    for exp in manifest.experiments:
        for role in exp.roles:
            hashes[exp.key(role)] = inputsmod.inputs_hash(exp, role, layout)
    out = []
    for plat in platforms:
        for exp in manifest.experiments:
            for role in exp.roles:
                key = exp.key(role)
                frag = store.read(plat, key)
                fail = store.read(plat, key, failed=True)
                skip = store.skip_reason(plat, key)
                corrupt = store.corrupt(plat, key)
                if corrupt:  # a file that cannot be used; the next regenerate on that platform overwrites it
                    out.append(Entry(plat, key, "corrupt", corrupt))
                elif role == "gpu" and not platform_has_gpu(plat):
                    out.append(Entry(plat, key, "n/a", "no GPU on this platform"))
                elif frag is None and skip:
                    out.append(Entry(plat, key, "skipped", skip))
                elif fail is not None and (frag is None or fail.meta.get("inputs_hash") == hashes[key]):
                    out.append(Entry(plat, key, "failed", fail.meta.get("failure", "")))
                elif frag is None:
                    out.append(Entry(plat, key, "missing"))
                elif frag.torn:
                    out.append(Entry(plat, key, "torn", "text and metadata disagree (interrupted write)"))
                elif frag.inputs_hash != hashes[key]:
                    changed = changed_files(frag.meta.get("inputs", {}), inputsmod.inputs(exp, role, layout))
                    out.append(Entry(plat, key, "stale", "changed: " + ", ".join(changed)))
                else:
                    out.append(Entry(plat, key, "fresh", frag.meta.get("started", "")))
    return out


def changed_files(old: dict, new: dict) -> list[str]:
    """What differs between two inputs records, by name (files first)."""
    of, nf = old.get("files", {}), new.get("files", {})
    names = sorted(k for k in set(of) | set(nf) if of.get(k) != nf.get(k))
    names += [k for k in sorted(set(old) | set(new)) if k != "files" and old.get(k) != new.get(k)]
    return names or ["(hash scheme)"]


def as_json(entries: list[Entry]) -> list[dict]:
    return [asdict(e) for e in entries]


def render(entries: list[Entry]) -> str:
    lines = []
    by_plat: dict[str, list[Entry]] = {}
    for e in entries:
        by_plat.setdefault(e.platform, []).append(e)
    for plat, es in by_plat.items():
        counts = {}
        for e in es:
            counts[e.state] = counts.get(e.state, 0) + 1
        lines.append(f"{plat}: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
        for e in es:
            if e.state != "n/a":
                lines.append(f"  {e.state:<8} {e.key:<32} {e.detail}")
    return "\n".join(lines)
