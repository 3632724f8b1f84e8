"""Typed names: a fragment key (experiment@role) and a platform key (a safe folder name).

Every place that turns text into one of these goes through here, so a key read from a page,
the manifest, the environment or a file name is checked once, the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ROLES = ("cpu", "gpu")
EXPERIMENT_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")
# An id names files (<id>@<role>.failed.json, and temporary names about 40 characters longer): file systems
# allow 255 bytes a name, and a reader must be able to type it.
EXPERIMENT_ID_MAX = 64
# A platform key names a folder under docs/_fragments: lowercase letters and digits in words joined
# by single '-' or '_' (linux-x86_64-cpu). No dots, slashes or leading separators: it cannot leave the store.
PLATFORM_KEY = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)*")
PLATFORM_KEY_MAX = 80


class KeyError_(ValueError):
    """A key that is not well formed; the message says what a good one looks like."""


def check_platform_key(key: str, where: str = "platform key") -> str:
    if not isinstance(key, str) or len(key) > PLATFORM_KEY_MAX or not PLATFORM_KEY.fullmatch(key):
        raise KeyError_(
            f"{where} {key!r} is not a valid platform key: lowercase letters and digits joined by single "
            f"'-' or '_', at most {PLATFORM_KEY_MAX} characters, like linux-x86_64-cpu or macos-arm64-apple-m2-max"
        )
    return key


@dataclass(frozen=True, order=True)
class FragmentKey:
    exp: str
    role: str

    @classmethod
    def parse(cls, text: str) -> "FragmentKey":
        exp, sep, role = text.strip().partition("@")
        if not sep or role not in ROLES:
            raise KeyError_(f"{text!r}: write experiment@cpu or experiment@gpu")
        if not EXPERIMENT_ID.fullmatch(exp):
            raise KeyError_(f"{text!r}: an experiment id is lowercase letters, digits, '.', '_' or '-'")
        if len(exp) > EXPERIMENT_ID_MAX:
            raise KeyError_(f"{text[:40]!r}...: an experiment id has at most {EXPERIMENT_ID_MAX} characters, not {len(exp)}")
        return cls(exp, role)

    def __str__(self) -> str:
        return f"{self.exp}@{self.role}"
