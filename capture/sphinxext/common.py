"""Shared plumbing for the capture directives: the Book of this build, warnings, notices, provenance."""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx.util import logging

from capture.book import Book, Lookup

logger = logging.getLogger("capture")

PLATFORM_NAMES = {  # how a platform key reads in a caption; unknown keys are shown as they are
    "linux-x86_64-cpu": "Linux x86_64 纯 CPU",
    "linux-x86_64-nvidia-h200": "Linux x86_64 + NVIDIA H200",
    "macos-arm64-apple-m2-max": "macOS · Apple M2 Max",
}


def book(env) -> Book:
    from capture.sphinxext.freshness import note_page

    if env.temp_data.get("docname"):
        note_page(env)
    app = env.app
    if getattr(app, "_capture_book", None) is None:
        root = Path(app.config.book_root or app.confdir).resolve()
        app._capture_book = Book(root, list(app.config.book_platforms))
    return app._capture_book


def page_platform(env, options: dict) -> str | None:
    """Platform named by the directive (:platform:), else by the page's front matter, else None (= first that has it)."""
    if options.get("platform"):
        return options["platform"]
    meta = env.metadata.get(env.docname, {})
    return meta.get("book_platform") or None


def depend_on_fragment(env, b: Book, lookup: Lookup) -> None:
    """Re-read the page when the fragment or the sources it was made from change."""
    exp = b.manifest.get(lookup.exp)
    env.note_dependency(str(b.layout.manifest))
    for f in _sources(b, exp):
        env.note_dependency(str(f))
    for plat in b.captured_platforms():
        for suffix in (".json", ".txt"):
            p = b.layout.fragments / plat / f"{exp.key(lookup.role)}{suffix}"
            if p.exists():
                env.note_dependency(str(p))


def _sources(b: Book, exp):
    from capture.inputs import source_files

    try:
        return source_files(exp, b.layout)
    except FileNotFoundError:
        return []


def notice(kind: str, text: str, command: str = "") -> nodes.Element:
    """A visible notice on the page (stale, missing, not captured, claim failed).

    The command goes in a literal so that it can be copied as it is (no smart dashes).
    """
    box = nodes.container(classes=["book-notice", f"book-notice-{kind}"])
    para = nodes.paragraph(text=text)
    if command:
        para += nodes.literal(command, command)
    box += para
    return box


def warn_lookup(lookup: Lookup, location, b: Book | None = None) -> nodes.Element | None:
    """Warn (an error under -W) for a stale/missing/torn fragment and return the page notice.

    A fragment that no captured platform could have produced (a gpu role while only CPU
    platforms are captured, a macOS-only experiment before a Mac run) is a notice, not a warning.
    """
    if lookup.state == "fresh":
        return None
    if lookup.state == "not-applicable":
        return notice("na", f"本平台未测：{lookup.detail}。")
    if lookup.state == "missing" and b is not None and b.expected_absent(lookup.exp, lookup.role):
        return notice("na", f"本平台未测：{lookup.exp}@{lookup.role} 还没有在能运行它的平台上捕获。")
    cmd = lookup.regen_command
    where = f" on {lookup.platform}" if lookup.platform else ""
    logger.warning(
        f"fragment {lookup.exp}@{lookup.role}{where} is {lookup.state} ({lookup.detail}); regenerate it with: {cmd}",
        location=location,
        type="capture",
        subtype=lookup.state,
    )
    label = {"stale": "此输出已过期（输入在捕获后改动过）", "missing": "此输出尚未捕获", "torn": "此输出的文件不完整"}[lookup.state]
    return notice(lookup.state, f"{label}。重新生成：", cmd)


def fragment_href(env, platform: str, key: str, ext: str = "txt") -> str:
    """A link from the current page to the copied fragment file (see provenance.copy_fragments)."""
    depth = env.docname.count("/")
    return "../" * depth + f"_fragments/{platform}/{key}.{ext}"


def platform_label(key: str) -> str:
    return PLATFORM_NAMES.get(key, key)


def provenance(frag) -> str:
    """One line that says where a figure came from: platform, device, versions, date, load."""
    m = frag.meta
    v = m.get("versions", {})
    parts = [platform_label(frag.platform), f"设备 {m.get('device')}"]
    if v.get("torch"):
        t = f"torch {v['torch']}"
        if v.get("torch_matches_pin") is False:
            t += f"（本书固定 {v.get('torch_pin')}，这台机器上是 {v['torch']}）"
        parts.append(t)
    fw = m.get("framework")
    for k in ("burn", "candle-core"):
        if v.get(k) and k.startswith(fw or "-"):
            parts.append(f"{k.split('-')[0]} {v[k]}")
    feats = (v.get("rust_build") or {}).get("features")
    if feats:
        parts.append("features " + ",".join(feats))
    parts.append(m.get("started", "")[:10])
    lb, la = m.get("load_before"), m.get("load_after")
    if lb and la:
        parts.append(f"负载 {lb[0]:.1f}→{la[0]:.1f}")
    return " · ".join(p for p in parts if p)
