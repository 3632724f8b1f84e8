"""{meta}`experiment@role:path.in.metadata`: a fact about a captured run (a version, the GPU, the device) in a sentence.

    {meta}`torch-ret@gpu:versions.torch`   -> 2.11.0+cu130
    {meta}`burn-ret@gpu:machine.gpu`       -> NVIDIA H200
    {meta}`burn-ret@gpu:device`            -> cuda
Shown from the page's platform, else the first in book_platforms that captured it.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxRole

from capture.manifest import ManifestError
from capture.sphinxext.common import book, fragment_href, logger, page_platform, platform_label


class MetaRole(SphinxRole):
    def run(self):
        b = book(self.env)
        where = (self.env.docname, self.lineno)
        key, _, path = self.text.partition(":")
        exp_id, _, role = key.partition("@")
        try:
            lk = b.find(exp_id, role, page_platform(self.env, {}))
        except ManifestError as e:
            logger.warning(f"{{meta}} {self.text}: {e}", location=where)
            return [nodes.inline(self.rawtext, "（？）")], []
        if lk.fragment is None:
            if lk.state != "not-applicable" and not b.expected_absent(exp_id, role):
                logger.warning(f"{{meta}} {self.text}: {lk.state}; regenerate with: {lk.regen_command}", location=where)
            return [nodes.inline(self.rawtext, "（未测）", classes=["book-na"])], []
        value = lk.fragment.meta
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            logger.warning(f"{{meta}} {self.text}: no field {path!r} in the metadata", location=where)
            return [nodes.inline(self.rawtext, "（？）")], []
        self.env.note_dependency(str(b.layout.fragments / lk.platform / f"{key}.json"))
        text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        return [nodes.reference(self.rawtext, text, refuri=fragment_href(self.env, lk.platform, key, "json"),
                                classes=["book-num"], reftitle=platform_label(lk.platform))], []
