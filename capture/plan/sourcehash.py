"""What of a source file an output can depend on: the text the inputs hash sees.

Three modes (an experiment picks one in the manifest, `source_hash`, default "code"):
- "code":  comments, blank lines and spacing removed; only the tokens and their order count.
- "lines": as "code", but each token keeps its line number, for outputs that quote file:line
           (a panic location or a traceback in the project's own files).
- "exact": the bytes (CRLF read as LF), for outputs that quote source text.
TOML files (Cargo.toml, Cargo.lock, rust-toolchain.toml) are compared as parsed data, so
their comments and layout never count. Anything that cannot be tokenised is hashed exactly.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tokenize
import tomllib
from pathlib import Path
from capture.system import regular

MODES = ("code", "lines", "exact")
# The newest normalisation: 3 folds Python f-strings into one token (see python_tokens); 2 did not.
SCHEME = 3


_DIGESTS: dict[tuple[Path, str, int], tuple[tuple[int, int, int], str]] = {}  # (path, mode, scheme) -> (stamp, digest)


def stamp(path: Path) -> tuple[int, int, int]:
    """What tells a file changed without reading it: a cache key for one process (e.g. one docs build)."""
    st = path.stat()
    return st.st_size, st.st_mtime_ns, st.st_ino


def digest(path: Path, mode: str = "code", scheme: int = SCHEME) -> str:
    """sha256 of the normalised text. scheme 2 differs only for Python f-strings (see python_tokens)."""
    # A docs build asks for the same files (Cargo.lock, shared helpers) dozens of times: parse each once.
    key, now = (path, mode, scheme), stamp(path)
    hit = _DIGESTS.get(key)
    if hit and hit[0] == now:
        return hit[1]
    data = regular.read_bytes(path).replace(b"\r\n", b"\n")
    value = hashlib.sha256(normalised(path.name, data, mode, scheme).encode("utf-8", "surrogateescape")).hexdigest()
    _DIGESTS[key] = (now, value)
    return value


def normalised(name: str, data: bytes, mode: str = "code", scheme: int = SCHEME) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown source hash mode {mode!r} (one of {MODES})")
    text = data.decode("utf-8", "surrogateescape")
    if mode == "exact":
        return text
    try:
        if name.endswith(".py"):
            return python_tokens(text, mode == "lines", fold_strings=scheme >= 3)
        if name.endswith(".rs"):
            return rust_tokens(text, mode == "lines")
        if name.endswith(".toml") or name == "Cargo.lock":
            return json.dumps(tomllib.loads(text), sort_keys=True, ensure_ascii=False)
    except (SyntaxError, tokenize.TokenError, tomllib.TOMLDecodeError, UnicodeError, _LexError):
        pass  # a broken file is hashed exactly: the run will report it
    return text


# -- Python -------------------------------------------------------------------------------------
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
# Python 3.12 tokenizes an f-string into parts (3.14 a t-string too); 3.11 gives one STRING token.
# Folding the parts back into one STRING makes the hash the same on every Python (scheme 3).
_STRING_START = {getattr(tokenize, n) for n in ("FSTRING_START", "TSTRING_START") if hasattr(tokenize, n)}
_STRING_END = {getattr(tokenize, n) for n in ("FSTRING_END", "TSTRING_END") if hasattr(tokenize, n)}


def _folded(tokens, text: str):
    """The tokens with each f-/t-string (start .. end, nested ones included) as one STRING token."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    offset = lambda pos: starts[pos[0] - 1] + pos[1]  # noqa: E731  (row is 1-based, col in characters)
    depth, first = 0, None
    for tok in tokens:
        if tok.type in _STRING_START:
            depth, first = depth + 1, first if depth else tok
            continue
        if depth:
            if tok.type in _STRING_END:
                depth -= 1
                if not depth:
                    span = text[offset(first.start):offset(tok.end)]
                    yield tokenize.TokenInfo(tokenize.STRING, span, first.start, tok.end, first.line)
            continue
        yield tok


def python_tokens(text: str, keep_lines: bool, fold_strings: bool = True) -> str:
    """The token stream without comments and spacing. fold_strings=False is scheme 2: the running
    interpreter's own tokens, which differ between 3.11 and 3.12 for f-strings (kept for restamp)."""
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    if fold_strings:
        tokens = _folded(tokens, text)
    out = []
    for tok in tokens:
        if tok.type in _SKIP:
            continue
        # INDENT carries the indentation text; only its presence matters
        s = "" if tok.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE) else tok.string
        head = f"{tok.start[0]}:" if keep_lines else ""
        out.append(f"{head}{tokenize.tok_name[tok.type]} {s}")
    return "\n".join(out)


# -- Rust ---------------------------------------------------------------------------------------
class _LexError(ValueError):
    pass


_RAW_STR = re.compile(r'b?r(#*)"')
_CHAR = re.compile(r"b?'(?:[^'\\\n]|\\(?:[nrt0\\'\"]|x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}))'")
_WORD = re.compile(r"[A-Za-z0-9_]")


def rust_segments(text: str):
    """Split Rust source into ("code" | "str" | "comment", text) pieces."""
    i, n, start = 0, len(text), 0
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            yield "code", text[start:i]
            j = text.find("\n", i)
            j = n if j < 0 else j
            yield "comment", text[i:j]
            i = start = j
        elif text.startswith("/*", i):
            yield "code", text[start:i]
            depth, j = 1, i + 2
            while depth and j < n:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            if depth:
                raise _LexError("unterminated block comment")
            yield "comment", text[i:j]
            i = start = j
        elif (m := _RAW_STR.match(text, i)) and (i == 0 or not _WORD.match(text[i - 1])):
            yield "code", text[start:i]
            end = text.find('"' + m.group(1), m.end())
            if end < 0:
                raise _LexError("unterminated raw string")
            j = end + 1 + len(m.group(1))
            yield "str", text[i:j]
            i = start = j
        elif c == '"' or (c == "b" and text.startswith('b"', i) and (i == 0 or not _WORD.match(text[i - 1]))):
            yield "code", text[start:i]
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                raise _LexError("unterminated string")
            yield "str", text[i : j + 1]
            i = start = j + 1
        elif c in "'b" and (m := _CHAR.match(text, i)) and (c == "'" or i == 0 or not _WORD.match(text[i - 1])):
            yield "code", text[start:i]
            yield "str", m.group(0)
            i = start = m.end()
        else:
            i += 1
    yield "code", text[start:]


def _squeeze(code: str) -> str:
    """Drop spacing between tokens; keep one space where two words would otherwise join."""
    return re.sub(r"\s+", lambda m: " " if _joins(code, m) else "", code)


def _joins(code: str, m) -> bool:
    a, b = m.start() - 1, m.end()
    return a >= 0 and b < len(code) and bool(_WORD.match(code[a])) and bool(_WORD.match(code[b]))


def rust_tokens(text: str, keep_lines: bool) -> str:
    pieces = []
    for kind, piece in rust_segments(text):
        if kind == "comment":
            pieces.append("\n" * piece.count("\n") if keep_lines else " ")
        elif kind == "str":
            pieces.append(("\x00" + piece + "\x00"))
        else:
            pieces.append(piece)
    joined = "".join(pieces)
    # squeeze spacing only outside string literals (marked by \x00 pairs)
    parts = joined.split("\x00")
    for k in range(0, len(parts), 2):
        if keep_lines:
            parts[k] = "\n".join(_squeeze(line) for line in parts[k].split("\n"))
        else:
            parts[k] = _squeeze(parts[k])
    out = "\x00".join(parts)
    # trailing space never counts; leading lines do when positions are kept
    return out.rstrip() if keep_lines else out.strip()
