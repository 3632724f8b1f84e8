"""Chinese paragraphs written across several source lines read as one.

Markdown turns a line break inside a paragraph into a space. Between two Chinese
characters that space shows (browsers do not drop it), so text wrapped in the source,

    调用一个张量运算之后，结果什么时候真正算出来？算在哪台设备上、和哪些运算合在一起、
    出了错在哪一行知道？

would read 「合在一起、 出了错」. This transform removes a line break (and the blanks
around it) when the characters on both sides are CJK (ideographs, kana, full-width
punctuation). A break next to Latin text stays a space: 「PyTorch 和」 is written that way
anyway. Code, literals and math are left alone.

The same pass keeps a number with its unit: in text written by hand (a page, an experiment's
title) "256 GiB" or "3 倍" gets a no-break space, as capture/evidence/fmt.py writes the measured figures,
so a line never ends between the two.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)

CJK = "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
SOFT_BREAK = re.compile(rf"(?<=[{CJK}])[ \t]*\n[ \t]*(?=[{CJK}])")
NUMBER_UNIT = re.compile(r"(?<=\d) (?=(?:ns|µs|us|ms|s|B|KiB|MiB|GiB|TiB|KB|MB|GB|倍|核|%)(?![A-Za-z]))")
NBSP = "\u00a0"
VERBATIM = (nodes.FixedTextElement, nodes.literal, nodes.raw, nodes.math)


def join_cjk_lines(text: str) -> str:
    return SOFT_BREAK.sub("", text)


def keep_units(text: str) -> str:
    return NUMBER_UNIT.sub(NBSP, text)


def _neighbour(element: nodes.Element, i: int, step: int) -> str:
    """The character next to child i, skipping empty siblings (MyST leaves some around markup)."""
    i += step
    while 0 <= i < len(element):
        text = element[i].astext()
        if text:
            return text[-1] if step < 0 else text[0]
        i += step
    return ""


def _join(element: nodes.Element) -> None:
    for i, child in enumerate(element.children):
        if isinstance(child, VERBATIM):
            continue
        if isinstance(child, nodes.Element):
            _join(child)
        else:
            text = str(child)
            if "\n" in text:
                # MyST gives a soft line break its own Text node: the characters that decide
                # are the neighbours' (which may be inline markup such as **粗体**).
                before, after = _neighbour(element, i, -1), _neighbour(element, i, +1)
                joined = join_cjk_lines(before + text + after)
                text = joined[len(before) : len(joined) - len(after)]
            text = keep_units(text)
            if text != child:
                element[i] = nodes.Text(text)


class JoinCJKLines(SphinxTransform):
    default_priority = 500

    def apply(self, **kwargs: Any) -> None:
        try:
            _join(self.document)
        except Exception as exc:  # a page is better with its line breaks than not built at all
            logger.warning(f"Chinese line joining skipped on this page: {type(exc).__name__}: {exc}",
                           location=self.document, type="book", subtype="zh-text")


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_transform(JoinCJKLines)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
