"""{ran-where}: what ran where, generated from the fragment store (the page docs/appendix/ran-where.md).

    :::{ran-where} totals        one row per machine: how many fragments are fresh, stale, missing...,
                                 the wall time of its runs, the dates
    :::{ran-where} experiments   one row per experiment and role, one column per machine: state,
                                 date, wall time, versions, links to the raw output and metadata
    :::{ran-where} waiting       what no machine has captured yet, and the command that would

The states are those of `nox -s status` (capture.evidence.status.collect over capture.evidence.book.Book.state):
the page and the command line cannot disagree. Machines are the captured platforms, in the book's
order. The page is re-read whenever the store changes (capture/sphinxext/freshness.py).
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from capture.evidence import status
from capture.evidence.fmt import fmt_value
from capture.storage.keys import FragmentKey
from capture.evidence.query import Value
from capture.sphinxext.common import WAITING_FOR, book, depend, fragment_href, warn
from capture.sphinxext.reader import detail_words, tip, with_code
from capture.sphinxext.tables import table_node

KINDS = ("totals", "experiments", "waiting")
STATE_WORDS = {
    "fresh": "新鲜",
    "stale": "过期",
    "missing": "缺失",
    "failed": "失败",
    "torn": "不完整",
    "corrupt": "损坏",
    "foreign": "别的机器捕获的",
    "n/a": "不运行",
}
MARKS = {"fresh": "✓ ", "n/a": ""}  # every other state is a problem: ⚠
TOTAL_COLUMNS = ("fresh", "stale", "missing", "failed", "torn", "corrupt", "foreign", "n/a")


def _lines(*parts: nodes.Node | str | None, wrap: bool = False) -> nodes.inline:
    """A table cell of several short lines (each kept on one line unless `wrap`)."""
    cell = nodes.inline(classes=["book-cell-lines"] + (["book-cell-wrap"] if wrap else []))
    for part in parts:
        if part is None or part == "":
            continue
        line = nodes.inline(classes=["book-cell-line"])
        line += nodes.Text(part) if isinstance(part, str) else part
        cell += line
    return cell


def versions_text(meta: dict) -> str:
    v = meta.get("versions") or {}
    out = []
    if v.get("torch"):
        out.append(f"torch {v['torch']}")
    for name, label in (("burn", "burn"), ("candle-core", "candle")):
        if v.get(name) and meta.get("framework") == label:
            out.append(f"{label} {v[name]}")
    rustc = (v.get("rust_build") or {}).get("rustc")
    if rustc:
        out.append(rustc.split(" (")[0])
    return "，".join(out)


def wall_text(seconds: float | None) -> str:
    return fmt_value(Value(seconds, "s")) if isinstance(seconds, (int, float)) else ""


class RanWhereDirective(SphinxDirective):
    required_arguments = 1
    option_spec = {"class": directives.class_option}

    def run(self):
        kind = self.arguments[0].strip()
        if kind not in KINDS:
            warn(f"ran-where: expected one of {', '.join(KINDS)}, got {kind!r}", self.get_location(), "ran-where")
            return []
        b = book(self.env)  # notes this page: it is re-read when the store changes
        keys = [FragmentKey(e.id, r) for e in b.manifest.experiments for r in e.roles]
        depend(self.env, b, keys)
        plats = b.platforms()
        entries = status.collect(b, plats)
        return [getattr(self, kind)(b, plats, keys, entries)]

    # -- one row per machine ------------------------------------------------------------------
    def totals(self, b, plats, keys, entries):
        header = ["机器", *(STATE_WORDS[s] for s in TOTAL_COLUMNS), "运行时间合计", "捕获日期"]
        body = []
        for plat in plats:
            mine = [e for e in entries if e.platform == plat]
            counts = {s: sum(e.state == s for e in mine) for s in TOTAL_COLUMNS}
            frags = [f for k in keys if (f := b.fragment(plat, k)) is not None and not getattr(f, "corrupt", None)]
            wall = sum(f.meta.get("wall_s") or 0 for f in frags)
            dates = sorted(d for f in frags if (d := (f.meta.get("started") or "")[:10]))
            span = "" if not dates else dates[0] if dates[0] == dates[-1] else f"{dates[0]} 至 {dates[-1]}"
            name = nodes.reference(b.label(plat), b.short_label(plat), refuri=fragment_href(self.env, plat, "platform"),
                                   reftitle=b.label(plat))
            body.append([name, *(nodes.Text(str(counts[s])) for s in TOTAL_COLUMNS), nodes.Text(wall_text(wall)), nodes.Text(span)])
        return table_node("每台机器的合计", header, body, ("book-records-table", "book-ran-where", "book-ran-where-totals"))

    # -- one row per experiment and role, one column per machine --------------------------------
    def experiments(self, b, plats, keys, entries):
        by = {(e.platform, e.key): e for e in entries}
        header = ["实验 @ 设备角色", *(tip(b.short_label(p), b.label(p)) for p in plats)]
        body = []
        for key in keys:
            exp = b.experiment(key)
            title = nodes.inline("", "", *with_code(exp.title)) if exp.title else None
            row: list[nodes.Node] = [_lines(nodes.literal(str(key), str(key)), title, wrap=True)]
            for plat in plats:
                row.append(self._cell(b, plat, key, by.get((plat, str(key)))))
            body.append(row)
        return table_node("每个实验、每个设备角色", header, body, ("book-records-table", "book-ran-where", "book-ran-where-experiments"))

    def _cell(self, b, plat, key, entry):
        if entry is None:
            return nodes.Text("—")
        word = MARKS.get(entry.state, "⚠ ") + STATE_WORDS.get(entry.state, entry.state)
        frag = b.fragment(plat, key)
        if entry.state == "n/a" or frag is None or getattr(frag, "corrupt", None):
            return _lines(nodes.inline(word, word, classes=[f"book-state-{entry.state.replace('/', '')}"]),
                          detail_words(entry.detail) if entry.state == "n/a" else None, wrap=True)
        meta = frag.meta
        links = nodes.inline()
        links += nodes.reference("原始输出", "原始输出", refuri=fragment_href(self.env, plat, key, "txt"))
        links += nodes.Text(" · ")
        links += nodes.reference("元数据", "元数据", refuri=fragment_href(self.env, plat, key, "json"))
        when = " · ".join(x for x in ((meta.get("started") or "")[:10], wall_text(meta.get("wall_s"))) if x)
        return _lines(nodes.inline(word, word, classes=[f"book-state-{entry.state}"]), when, versions_text(meta), links,
                      wrap=True)

    # -- what no machine has yet -------------------------------------------------------------------
    def waiting(self, b, plats, keys, entries):
        by = {(e.platform, e.key): e.state for e in entries}
        header = ["实验 @ 设备角色", "在等哪台机器", "在那台机器上运行"]
        body = []
        for key in keys:
            states = {p: by.get((p, str(key))) for p in plats}
            lacking = [p for p in plats if states[p] in ("missing", "failed", "torn", "corrupt", "foreign")]
            if not lacking and any(s in ("fresh", "stale") for s in states.values()):
                continue
            who = "、".join(b.short_label(p) for p in lacking) if lacking else \
                f"{WAITING_FOR.get(b.awaiting(key), b.awaiting(key))}（已捕获的机器都不运行它）"
            cmd = f"nox -s regenerate -- --only {key.exp} --device {key.role}"
            body.append([nodes.literal(str(key), str(key)), nodes.Text(who), nodes.literal(cmd, cmd)])
        if not body:
            return nodes.paragraph(text="没有在等的：每个实验的每个设备角色，在每台能运行它的机器上都捕获过了。")
        return table_node("还在等机器的", header, body, ("book-records-table", "book-ran-where", "book-ran-where-waiting"))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("ran-where", RanWhereDirective)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
