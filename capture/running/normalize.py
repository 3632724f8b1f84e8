"""Normaliser: an output's skeleton, for comparing a fresh run with a committed fragment.

Values that change from run to run (durations, rates, addresses, thread ids, temp paths,
process ids) become placeholders; per-experiment regexes from the manifest mask more.
"""

from __future__ import annotations

import re

_NUM = r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"

BUILTIN: list[tuple[str, str]] = [
    # durations as fmt_duration / Rust Debug print them: 5.943ms, 50.000µs, 1.2 s, 28.9325ms, 125.5 ns
    (rf"{_NUM}\s?(?:ns|µs|us|ms|s)\b", "<dur>"),
    # rates and throughputs: 544 GFLOP/s, 4.3 TB/s, 1.2 GB/s
    (rf"{_NUM}\s?[KMGTP]?(?:FLOP|B|op)/s", "<rate>"),
    (r"0x[0-9a-fA-F]{6,}", "<addr>"),
    (r"thread '([^']*)' \(\d+\)", r"thread '\1' (<tid>)"),
    (r"ThreadId\(\d+\)", "ThreadId(<tid>)"),
    (r"(?:/private)?/(?:tmp|var/folders)/[^\s'\"),:]+", "<tmp>"),
    (r"\bpid \d+", "pid <pid>"),
]


def skeleton(text: str, extra: tuple[str, ...] | list[str] = ()) -> str:
    """The text with run-to-run noise replaced; `extra` are regexes masked as <masked>."""
    out = text
    for rx in extra:
        out = re.sub(rx, "<masked>", out)
    for rx, repl in BUILTIN:
        out = re.sub(rx, repl, out)
    return out.rstrip() + "\n"


def diff(old: str, new: str) -> str:
    import difflib

    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "committed", "fresh"))
