"""{drift-table}: the measured drift per machine and kind of figure, from docs/drift.json (capture/evidence/drift.py);
{drift}: one of its factors in running text, so the drift page's prose quotes the table rather than a copy of it.

    :::{drift-table}
    :::

    CPU 上中位数一类挪过 {drift}`linux-x86_64-cpu median`，同一次运行里两个数之比 {drift}`linux-x86_64-cpu median run`；
    {drift}`linux-x86_64-nvidia-h200 own torch-chain8@cpu chain8.wall.median{...}` (a figure that keeps its own)

One row per platform and kind: the factor the verdict rule widens a spread by, where it came from
(re-runs of identical inputs, captures across changed inputs, or the default), how many pairs, the
95th percentile, the spread over repeats inside one capture, and the shared drift of two figures of
one process. Recomputed by `python -m capture drift`; nothing here is typed by hand.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxDirective, SphinxRole

from capture.evidence.drift import DATA, KINDS
from capture.sphinxext.common import DRIFT_PROBLEM, book, warn
from capture.sphinxext.tables import table_node

SOURCE = {"re-runs": "同一程序重跑", "re-runs and changed inputs": "重跑和输入改过的前后两次", "default": "默认值"}


def _x(v) -> str:
    return f"×{v:.4g}" if v else "—"


class DriftTableDirective(SphinxDirective):
    def run(self):
        b = book(self.env)
        self.env.note_dependency(str(b.layout.root / DATA))
        table = b.drifts.table
        if getattr(self.env.app, DRIFT_PROBLEM, None):  # a bad file: said once already (common.check_drift_file)
            return []
        if not table.get("platforms"):
            warn(f"drift-table: {DATA} is missing or empty; compute it with: python -m capture drift",
                 self.get_location(), "drift")
            return []
        header = ["机器", "哪类数", "漂移", "来源", "成对的数（记录）", "95% 分位", "一次捕获内重复的范围（95% 分位）",
                  "同一进程两个数之比的漂移", "同一次运行里两个数之比的漂移"]
        body = []
        for plat, rows in table["platforms"].items():
            label = b.short_label(plat) if plat in b.platforms() else plat
            for k in KINDS:
                r = rows.get(k) or {}
                cells = [label, k, _x(r.get("drift")), SOURCE.get(r.get("source"), r.get("source") or ""),
                         f'{r.get("pairs", 0)}（{r.get("records", 0)}）', _x(r.get("p95")), _x(r.get("spread_p95")), _x(r.get("shared")), _x(r.get("run"))]
                body.append([nodes.Text(c) for c in cells])
        return [table_node("各台机器、各类数在两次捕获之间的漂移", header, body)]


FIELDS = ("drift", "run", "shared", "max", "p95")  # a kind's row: what {drift} may quote


class DriftRole(SphinxRole):
    """{drift}`PLATFORM KIND [FIELD]` -> "×2.95" (FIELD: drift, the default, or run, shared, max, p95);
    {drift}`PLATFORM own LABEL` -> a figure's own drift (drift.json `figures`). A factor the table does not hold is
    a build warning naming it."""

    def run(self):
        b = book(self.env)
        self.env.note_dependency(str(b.layout.root / DATA))
        parts = self.text.split(None, 2)
        value, what = None, self.text
        if len(parts) >= 2 and parts[1] == "own" and len(parts) == 3:
            value = ((b.drifts.table.get("figures") or {}).get(parts[0]) or {}).get(parts[2])
        elif len(parts) in (2, 3) and parts[1] in KINDS and (len(parts) == 2 or parts[2] in FIELDS):
            row = ((b.drifts.table.get("platforms") or {}).get(parts[0]) or {}).get(parts[1]) or {}
            value = row.get(parts[2] if len(parts) == 3 else "drift")
        else:
            what = f"{self.text} (write PLATFORM KIND [{'|'.join(FIELDS)}] or PLATFORM own LABEL)"
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            if not getattr(self.env.app, DRIFT_PROBLEM, None):
                warn(f"{{drift}} {what}: not in {DATA}; recompute it with: python -m capture drift",
                     self.get_location(), "drift")
            return [nodes.inline(self.rawtext, "（？）", classes=["book-na"])], []
        return [nodes.inline(self.rawtext, _x(value), classes=["book-drift"])], []
