"""Control characters shown, not sent: captured text and recorded values reach a page as visible symbols.

A program's output can hold raw control bytes (ESC of a colour code, BEL, VT, FF, DEL, NUL...). Put
into HTML as they are, they are invisible, invalid (HTML forbids most of them) or reach a reader's
terminal when the text is copied. So every C0 control except tab and line breaks becomes its Unicode
control picture (ESC -> ␛ U+241B, BEL -> ␇, NUL -> ␀), DEL -> ␡, a carriage return not followed by a
line feed -> ␍, and a C1 control (U+0080-U+009F) its escape, e.g. \\x9b. The stored text is unchanged:
this is how it is shown.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")


def _show(m: re.Match) -> str:
    c = m.group(0)
    o = ord(c)
    if o < 0x20:
        return chr(0x2400 + o)
    if o == 0x7F:
        return "\u2421"
    return f"\\x{o:02x}"


def visible(text: str) -> str:
    """`text` with its control characters replaced by visible symbols (tab and line breaks kept)."""
    return _CONTROL.sub(_show, text)
