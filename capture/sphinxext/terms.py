"""Sentences no wider than their machines: machine-specific words only where the text is scoped.

A sentence that names a backend, an OS or a device (CUDA, Metal, MPS, Vulkan, Linux, macOS, H200,
...) is about some machines only. It belongs in a `{per-platform}` block (shown per machine that
fits), a claim (checked where its `:where:` says), or an `{until-captured}` box (gone when the
machine arrives). Outside those, each such sentence must be listed in the allow-list
(`book_scope_allow`, docs/scope-allow.toml) with the reason it is general — read from the pinned
source, true on every machine, or a definition. An unlisted one is a warning (an error under -W)
that names the page and line; an entry that matches nothing any more is one too, so the list
cannot rot.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from docutils import nodes

from capture.sphinxext.common import logger

TERMS = re.compile(r"CUDA|Metal|MPS|Vulkan|cuBLAS|Triton|SPIR-V|MSL|PTX|NVRTC|nvcc|Linux|macOS|Mac(?![a-z])|"
                   r"Windows|H200|NVIDIA|Apple|Accelerate|M[1-4] (?:Pro|Max|Ultra)")
# containers whose text is scoped to machines already (or is machinery, not prose)
SCOPED = {"book-per-platform", "book-platform-note", "book-claim", "book-until-captured", "book-notice",
          "book-reproduce", "book-chart-caption", "book-datachart", "book-output-more", "book-chart-more",
          "book-claim-marks", "book-glossary"}
SENTENCE_END = re.compile(r"(?<=[。！？；])")


def _scoped(node) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, (nodes.table, nodes.caption, nodes.literal_block, nodes.title, nodes.rubric)):
            return True
        if SCOPED & set(parent.get("classes", [])):
            return True
        parent = parent.parent
    return False


def _prose(node) -> str:
    """The text a reader reads as prose: inline code (names of things) left out."""
    parts = []
    for t in node.findall(nodes.Text):
        if any(isinstance(a, (nodes.literal, nodes.literal_block)) for a in _ancestors(t, node)):
            continue
        parts.append(t.astext())
    return "".join(parts)


def _ancestors(n, stop):
    p = n.parent
    while p is not None and p is not stop:
        yield p
        p = p.parent


def load_allow(path: Path) -> list[dict]:
    """[{page, text, why}], each checked: a missing `why` is an error (the reason is the point)."""
    if not path.is_file():
        return []
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    out = []
    for i, entry in enumerate(data.get("allow", []), 1):
        for field in ("page", "text", "why"):
            if not str(entry.get(field, "")).strip():
                raise ValueError(f"{path}: entry {i} has no {field!r}; every exception says which sentence and why it is general")
        out.append({"page": entry["page"], "text": entry["text"], "why": entry["why"], "n": i})
    return out


def flagged(doctree) -> list[tuple[nodes.Node, str, list[str]]]:
    """(paragraph, sentence, terms) for every unscoped sentence that names a machine-specific term."""
    out = []
    for para in doctree.findall(nodes.paragraph):
        if _scoped(para):
            continue
        for sentence in SENTENCE_END.split(_prose(para)):
            terms = sorted(set(TERMS.findall(sentence)))
            if terms:
                out.append((para, sentence.strip(), terms))
    return out


def check_terms(app, doctree, docname) -> None:
    path = Path(app.confdir) / app.config.book_scope_allow if app.config.book_scope_allow else None
    if path is None or docname not in app.config.book_scope_pages:
        return
    try:
        allow = [a for a in load_allow(path) if a["page"] == docname]
    except (ValueError, tomllib.TOMLDecodeError) as e:
        logger.warning(f"scope allow-list: {e}", location=str(path), type="capture", subtype="scope")
        return
    used = _used(app)
    _checked(app).add(docname)
    for para, sentence, terms in flagged(doctree):
        hits = [a for a in allow if a["text"] in sentence]
        if hits:
            used.update((docname, h["n"]) for h in hits)
            continue
        logger.warning(
            f"sentence names {', '.join(terms)} outside a {{per-platform}} block, a claim or an {{until-captured}} box: "
            f"{sentence[:120]!r} — scope it to the machines it was measured on, or list it in {app.config.book_scope_allow} "
            "with why it holds everywhere",
            location=para, type="capture", subtype="scope")


def _used(app) -> set:
    if not hasattr(app, "_book_scope_used"):
        app._book_scope_used = set()
    return app._book_scope_used


def _checked(app) -> set:
    if not hasattr(app, "_book_scope_checked"):
        app._book_scope_checked = set()
    return app._book_scope_checked


def report_unused(app, exc) -> None:
    """Entries of checked pages that no sentence matched: the sentence changed or went; drop or fix the entry."""
    if exc is not None or not app.config.book_scope_allow:
        return
    path = Path(app.confdir) / app.config.book_scope_allow
    try:
        allow = load_allow(path)
    except (ValueError, tomllib.TOMLDecodeError):
        return
    for a in allow:
        if a["page"] in _checked(app) and (a["page"], a["n"]) not in _used(app):
            logger.warning(f"{path.name} entry {a['n']} ({a['page']}: {a['text'][:60]!r}) matches no sentence any more; "
                           "remove it or update its text", location=str(path), type="capture", subtype="scope")
