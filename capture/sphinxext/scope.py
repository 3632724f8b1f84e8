"""{per-platform} FILTER: prose about one kind of machine, shown once for each captured platform it fits.

    ::::{per-platform} cuda
    在这台机器上，……{num}`median(torch-ret@gpu:ret.synced)` ……
    ::::

FILTER uses the words of a claim's :where: (all, gpu, cpu, cuda, vulkan, metal, mps, nvidia,
apple, linux, macos, or platform keys); a platform fits when any of its devices does. The body
is rendered once per fitting platform (tabs, the book's platform order, synchronised with the
page's other platform tabs), and every {num}, {meta} and claim inside reads that platform only.
With no fitting platform nothing is shown: a paragraph about the Mac appears with the Mac's data.

    :captured: candle-source@cpu     (optional) only the platforms holding these fragments: for prose
                                     about something not every machine measures (a skipped experiment)
"""

from __future__ import annotations

import re

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from capture.evidence.claims import WhereError, check_known, parse_where, platform_matches
from capture.storage.keys import FragmentKey, KeyError_
from capture.plan.manifest import ManifestError
from capture.sphinxext.common import book, platform_tabs, scoped, warn
from capture.sphinxext.reader import tip


class PerPlatformDirective(SphinxDirective):
    required_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = {"captured": directives.unchanged_required}

    def run(self):
        b = book(self.env)
        try:
            tokens = parse_where(self.arguments[0])
            check_known(tokens, b)
            needed = [FragmentKey.parse(k.strip()) for k in self.options.get("captured", "").split(",") if k.strip()]
            for key in needed:
                b.experiment(key)
        except (WhereError, KeyError_, ManifestError) as e:
            warn(f"per-platform: {e}", self.get_location(), "scope")
            return []
        plats = [p for p in b.platforms() if platform_matches(tokens, b.identity(p))
                 and all(b.fragment(p, k) is not None for k in needed)]
        items = []
        for plat in plats:
            box = nodes.container(classes=["book-per-platform"])
            box["classes"].append(f"book-plat-{plat}")
            with scoped(self.env, plat):
                self.state.nested_parse(self.content, self.content_offset, box)
            items.append((plat, b.short_label(plat), [box], b.label(plat)))
        if not items:
            return []
        if len(items) == 1:
            plat, short, content, label = items[0]
            box = nodes.container(classes=["book-platform-note"])
            box += content
            # the machine leads the first paragraph (run-in), the full name in its tooltip
            first = next(iter(box.findall(nodes.paragraph)), None)
            # "在 H200 上：在这台机器上，……" says the machine twice: the head takes the place of the text's own
            said = drop_this_machine(first) if first is not None else None
            words = {"on": f"在 {short} 上，", "of": f"在 {short} 那台机器的", None: f"在 {short} 上："}[said]
            head = nodes.strong("", "", tip(words, label), classes=["book-per-platform-head"])
            if first is not None:
                first.insert(0, head)
            else:
                box.insert(0, nodes.paragraph("", "", head))
            return [box]
        return [platform_tabs(items, classes=["book-per-platform-tabs"])]


THIS_MACHINE = re.compile(r"^\s*在?这台机器上[，,：:]?\s*")
THIS_MACHINES = re.compile(r"^\s*这台机器的")


def drop_this_machine(para: nodes.paragraph) -> str | None:
    """Remove a leading 「（在）这台机器上，」 ("on") or 「这台机器的」 ("of") from the paragraph: the block's head names
    the machine in its place. Which one it removed, or None."""
    first = next(iter(para.findall(nodes.Text)), None)
    if first is None or first.parent is not para:
        return None
    text = first.astext()
    for kind, pattern in (("on", THIS_MACHINE), ("of", THIS_MACHINES)):
        m = pattern.match(text)
        if m:
            rest = text[m.end():]
            if kind == "of":  # 「那台机器的 CPU」: a space before a Latin word, as the pages write it
                rest = rest.lstrip()
                rest = (" " if rest[:1].isascii() and rest[:1].isalnum() else "") + rest
            para.replace(first, nodes.Text(rest))
            return kind
    return None


class UntilCapturedDirective(SphinxDirective):
    """{until-captured} FILTER: text about machines not captured yet, shown only while none fits FILTER.

        ::::{until-captured} macos
        Mac 的记录到来之前，表里没有 Metal 那一栏。
        ::::

    FILTER uses the words of {per-platform}. The block disappears by itself when a fitting platform's
    fragments arrive (its first capture), so such a sentence cannot outlive its truth. The box names the
    command that fills it: `nox -s regenerate` on that machine.
    """

    required_arguments = 1
    final_argument_whitespace = True
    has_content = True

    def run(self):
        b = book(self.env)
        try:
            tokens = parse_where(self.arguments[0])
            check_known(tokens, b)
        except WhereError as e:
            warn(f"until-captured: {e}", self.get_location(), "scope")
            return []
        for key in b.store.platforms():  # any captured fragment of a fitting platform ends the wait
            if platform_matches(tokens, b.identity(key)) and b.store.keys(key):
                return []
        box = nodes.container(classes=["book-until-captured", "book-notice", "book-notice-na"])
        self.state.nested_parse(self.content, self.content_offset, box)
        return [box]
