"""Review after regenerate: what changed against the previous capture, the way a snapshot review works."""

from __future__ import annotations


from capture.running.normalize import diff, skeleton
from capture.storage.paths import Layout


def _rec_key(r: dict) -> tuple:
    return (r["name"], tuple(sorted((k, str(v)) for k, v in r.get("tags", {}).items())))


def figure_changes(old: list[dict], new: list[dict], threshold: float = 0.0) -> list[str]:
    """Each numeric record old -> new with its relative change; appeared/disappeared records too."""
    o = {_rec_key(r): r for r in old}
    n = {_rec_key(r): r for r in new}
    lines = []
    for k in sorted(set(o) | set(n), key=str):
        name = k[0] + ("{" + ",".join(f"{a}={b}" for a, b in k[1]) + "}" if k[1] else "")
        if k not in n:
            lines.append(f"    - {name}: gone (was {o[k]['value']})")
        elif k not in o:
            lines.append(f"    + {name}: new {n[k]['value']}")
        else:
            a, b = o[k]["value"], n[k]["value"]
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
                rel = (b - a) / abs(a) if a else float("inf") if b else 0.0
                if abs(rel) > threshold:
                    lines.append(f"    ~ {name}: {a:.4g} -> {b:.4g} ({rel:+.0%})")
            elif a != b:
                lines.append(f"    ! {name}: {a!r} -> {b!r}")
    return lines


def pages_using(exp_id: str, layout: Layout) -> list[str]:
    docs = layout.root / "docs"
    hits = []
    for p in sorted(docs.rglob("*.md")):
        if "_build" in p.parts or "_fragments" in p.parts:
            continue
        if exp_id in p.read_text(encoding="utf-8"):
            hits.append(layout.rel(p))
    return hits


def review(outcomes, layout: Layout) -> str:
    from capture.plan.manifest import load

    manifest = load(layout.manifest)
    blocks = []
    for o in outcomes:
        if o.status != "ok" or o.new is None:
            continue
        exp_id = o.key.split("@")[0]
        exp = manifest.get(exp_id)
        head = f"  {o.key}"
        if o.old is None:
            blocks.append(head + ": new fragment")
            continue
        a, b = skeleton(o.old.text, exp.mask), skeleton(o.new.text, exp.mask)
        lines = [head + (": output skeleton CHANGED" if a != b else ": same skeleton")]
        if a != b:
            lines += ["    " + l for l in diff(a, b).splitlines()[:40]]
        lines += figure_changes(o.old.records, o.new.records, threshold=0.05)
        pages = pages_using(exp_id, layout)
        if pages:
            lines.append("    pages: " + ", ".join(pages))
        blocks.append("\n".join(lines))
    if not blocks:
        return ""
    return "review (against the previous capture of this platform; figures moving more than 5% listed):\n" + "\n".join(blocks)
