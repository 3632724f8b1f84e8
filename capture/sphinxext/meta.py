"""{meta}`experiment@role:path.in.metadata`: a fact about a captured run (a version, the GPU, the device) in a sentence.

    {meta}`torch-ret@gpu:versions.torch`   -> 2.11.0+cu130
    {meta}`burn-ret@gpu:machine.gpu`       -> NVIDIA H200
    {meta}`burn-ret@gpu:device`            -> cuda
From the platform the text is about, exactly like {num} (see capture/sphinxext/numbers.py).
"""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxRole

from capture.storage.keys import FragmentKey, KeyError_
from capture.evidence.controls import visible
from capture.plan.manifest import ManifestError
from capture.sphinxext.common import book, depend, fragment_href, report_state, stale_mark, warn
from capture.sphinxext.numbers import na, scoped_platform


class MetaRole(SphinxRole):
    def run(self):
        b = book(self.env)
        where = self.get_location()
        keytext, _, path = self.text.partition(":")
        try:
            key = FragmentKey.parse(keytext)
            b.experiment(key)
        except (KeyError_, ManifestError) as e:
            warn(f"{{meta}} {self.text}: {e}", where, "meta")
            return [na(self.rawtext, "（？）", str(e))], []
        plat = scoped_platform("{meta}", self.env, b, where)
        if plat is None:
            return [na(self.rawtext, "（未指明平台）", self.text)], []
        depend(self.env, b, [key], [plat])
        st = b.state(plat, key)
        report_state(st, where, f"{{meta}} {self.text}")
        if not st.usable:
            return [na(self.rawtext, "（此平台未测）", f"{b.label(plat)}: {st.detail}")], []
        value = st.fragment.meta
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            warn(f"{{meta}} {self.text}: no field {path!r} in the metadata of {key} on {plat}", where, "meta")
            return [na(self.rawtext, "（？）", path)], []
        text = visible(", ".join(map(str, value)) if isinstance(value, list) else str(value))
        ref = nodes.reference(self.rawtext, text, refuri=fragment_href(self.env, plat, key), classes=["book-num", f"book-plat-{plat}"],
                              reftitle=b.label(plat))
        ref["support_smartquotes"] = False  # data shows as recorded
        mark = stale_mark(b, [st])
        return [ref] + ([mark] if mark is not None else []), []
