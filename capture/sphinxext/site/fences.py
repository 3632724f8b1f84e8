"""A directive closed by an inner fence: rejected at build time.

MyST reads a fenced directive's body as raw lines up to the first closing fence of the same
character that is at least as long as its opening one; only then does it parse the body. So in

    ::::{dropdown} 动脑筋答案
    ::::{per-platform} gpu
    ……
    ::::                 <- meant to close per-platform, closes the dropdown
    答案的其余部分          <- now outside the dropdown: shown before the puzzle is opened
    ::::

the inner block's closing line ends the outer one, and what follows spills out of it, silently.
An inner fence must be shorter than every fence it sits in. This module reads each Markdown page
as MyST does (colon and backtick fences, code fences whose body is not Markdown) and warns, with
the page and line, about an inner opening fence with the same character and at least the outer's
length, naming both lines: make the outer fence longer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|:{3,}|~{3,})(?P<info>.*)$")
# directives whose body MyST parses as Markdown again (everything else in backticks is raw text)
RAW_BODY = re.compile(r"^\{(?:code-block|code|sourcecode|literalinclude|snippet|output|mermaid|math|raw|"
                      r"datachart|eval-rst|csv-table|list-table)\}")


@dataclass
class Open:
    char: str
    length: int
    line: int
    name: str
    raw: bool  # the body is raw text (a code block): nothing inside it is a fence


def _name(info: str) -> str:
    info = info.strip()
    m = re.match(r"\{([^}]+)\}", info)
    return m.group(1) if m else (info.split()[0] if info else "code")


def problems(text: str) -> list[tuple[int, int, str]]:
    """(inner line, outer line, message) for each inner fence that would close an enclosing one (1-based lines)."""
    stack: list[Open] = []
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if not m:
            continue
        fence, info = m.group("fence"), m.group("info")
        char, length = fence[0], len(fence)
        if stack and stack[-1].raw:
            top = stack[-1]
            if char == top.char and length >= top.length and not info.strip():
                stack.pop()
            continue
        if not info.strip():  # a closing fence: closes the innermost open one it can close
            while stack:
                top = stack.pop()
                if char == top.char and length >= top.length:
                    break
            continue
        if char == "`" and "`" in info:
            continue  # not a fence (CommonMark: a backtick fence's info string has no backtick)
        for outer in stack:
            if outer.char == char and length >= outer.length:
                out.append((n, outer.line,
                            f"{{{_name(info)}}} opens with {fence} inside {{{outer.name}}} (line {outer.line}, "
                            f"{outer.char * outer.length}): its closing {fence} would close {{{outer.name}}} too, and what "
                            f"follows would spill out of it; make the outer fence longer than {length} "
                            f"(e.g. {outer.char * (length + 1)}{{{outer.name}}})"))
                break
        raw = char in "`~" and (not info.strip().startswith("{") or bool(RAW_BODY.match(info.strip())))
        stack.append(Open(char, length, n, _name(info), raw))
    return out


def check_source(app: Sphinx, docname: str, source: list[str]) -> None:
    """source-read: warn about every fence that would close an enclosing directive."""
    path = app.env.doc2path(docname)
    if not str(path).endswith(".md"):
        return
    for line, _outer, msg in problems(source[0]):
        logger.warning(msg, location=(docname, line), type="book", subtype="fence")


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("source-read", check_source)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
