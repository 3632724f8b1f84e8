"""{platform-table}: the machines whose runs a page shows, one row each, from what their runs recorded.

    :::{platform-table}
    :experiments: torch-ret, burn-ret
    :::

Columns: the machine, its CPU and memory, the GPU and driver, and per framework of the listed
experiments the versions that ran there (torch as installed, burn/candle from Cargo.lock, rustc).
It replaces version lines written by hand: a new machine adds a row by capturing.
"""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from capture.evidence.fmt import with_unit
from capture.storage.keys import FragmentKey, KeyError_
from capture.plan.manifest import ManifestError
from capture.sphinxext.common import book, depend, fragment_href, warn
from capture.sphinxext.reader import FRAMEWORKS
from capture.sphinxext.tables import table_node


class PlatformTableDirective(SphinxDirective):
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = {"experiments": directives.unchanged_required}

    def run(self):
        b = book(self.env)
        where = self.get_location()
        try:
            exps = [b.manifest.get(e.strip()) for e in self.options["experiments"].split(",") if e.strip()]
        except (KeyError, ManifestError, KeyError_) as e:
            warn(f"platform-table: {e}", where, "platforms")
            return []
        keys = [FragmentKey(e.id, r) for e in exps for r in e.roles]
        depend(self.env, b, keys)
        header = ["机器（本书简称）", "CPU 与内存", "GPU", "各框架用的设备（CPU 一侧 / GPU 一侧）", "版本", "捕获日期"]
        body = []
        for plat in b.platforms():
            frags = [(k, f) for k in keys if (f := b.fragment(plat, k)) is not None]
            if not frags:
                continue
            ident = b.identity(plat)
            versions, devices, dates = {}, {}, []
            for k, f in frags:
                v = f.meta.get("versions", {})
                fw = f.meta.get("framework")
                if fw == "torch" and v.get("torch"):
                    notes = [] if v.get("torch_matches_pin") is not False else [f"本书固定 {v.get('torch_pin')}"]
                    if v.get("threads"):  # torch's own default (macOS: the performance cores), what alike.py compares
                        notes.append(f"{v['threads']} 个 CPU 线程")
                    versions["PyTorch"] = v["torch"] + (f"（{'；'.join(notes)}）" if notes else "")
                for name, label in (("burn", "burn"), ("candle-core", "candle")):
                    if fw == label and v.get(name):
                        versions[label] = v[name]
                if (v.get("rust_build") or {}).get("rustc"):
                    versions["rustc"] = v["rust_build"]["rustc"].split(" (")[0].removeprefix("rustc ")
                devices.setdefault(fw, {})[k.role] = f.meta.get("device")
                dates.append(f.meta.get("started", "")[:10])
            cpu = f"{ident.cpu}，{with_unit(str(ident.cores), '核')}，{with_unit(str(ident.memory_gib), 'GiB')} 内存，{ident.os_pretty}"
            gpu = f"{ident.gpu}（驱动 {ident.gpu_driver}）" if ident.gpu and ident.gpu_driver else (ident.gpu or "无")
            dev = "；".join(f"{FRAMEWORKS.get(fw, fw)} {d.get('cpu', '—')} / {d.get('gpu', '—')}" for fw, d in devices.items())
            ver = "，".join(f"{k} {v}" for k, v in versions.items())
            name = nodes.inline()
            name += nodes.reference(ident.display_name, ident.display_name, refuri=fragment_href(self.env, plat, "platform"))
            short = b.short_label(plat)
            if not all(word in ident.display_name for word in short.split()):  # 「2 核 CPU」 is already in its full name
                name += nodes.Text(f"（{short}）")
            dates = sorted(d for d in dates if d)
            span = dates[0] if dates and dates[0] == dates[-1] else (f"{dates[0]} 至 {dates[-1]}" if dates else "")
            if any(b.state(plat, k).state == "stale" for k, _ in frags):  # the one place a reader learns what （旧） is
                span += "；之后代码改过，这台机器还没有重跑的数标着（旧）"
            body.append([name, nodes.Text(cpu), nodes.Text(gpu), nodes.Text(dev), nodes.Text(ver), nodes.Text(span)])
        return [table_node(self.arguments[0] if self.arguments else None, header, body, ("book-records-table", "book-platform-table"))]
