"""The experiments manifest (docs/experiments.toml): what runs, how, where, and what it should end with."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROLES = ("cpu", "gpu")
FRAMEWORKS = ("torch", "burn", "candle", "none")
SOURCE_HASH_MODES = ("code", "lines", "exact")


class ManifestError(Exception):
    """A manifest problem, already phrased as `file:line: message`."""


@dataclass(frozen=True)
class Expect:
    """How a run is expected to end: an exit status, or killed by its timeout."""

    exit: int | None = 0  # None: any status
    timeout: bool = False

    @classmethod
    def parse(cls, text: str) -> "Expect":
        t = text.strip()
        if t == "timeout":
            return cls(exit=None, timeout=True)
        m = re.fullmatch(r"exit\s+(-?\d+|any)", t)
        if not m:
            raise ValueError(f"expect must be 'exit N', 'exit any' or 'timeout', not {text!r}")
        return cls(exit=None if m.group(1) == "any" else int(m.group(1)))

    def __str__(self) -> str:
        return "timeout" if self.timeout else f"exit {'any' if self.exit is None else self.exit}"

    def met_by(self, exit_status: int | None, timed_out: bool) -> bool:
        if self.timeout:
            return timed_out
        return not timed_out and (self.exit is None or exit_status == self.exit)


@dataclass(frozen=True)
class Experiment:
    id: str
    framework: str
    roles: tuple[str, ...]
    args: dict[str, tuple[str, ...]]  # role -> argument template
    expect: dict[str, Expect]  # role -> expectation
    timeout: float
    script: str | None = None  # Python: path relative to the repo root
    crate: str | None = None  # Rust: package in crates/
    bin: str | None = None  # Rust: binary name (defaults to the crate)
    mask: tuple[str, ...] = ()
    title: str = ""
    line: int = 0  # line of the entry in the manifest, for messages
    platforms: tuple[str, ...] = ()  # operating systems it runs on ("macos", "linux"); empty = all
    env: dict[str, str] = field(default_factory=dict)
    # what of the sources the inputs hash sees (capture/inputs.py): "code" ignores comments, blank
    # space and line positions; "lines" keeps line positions (outputs that quote file:line);
    # "exact" hashes the bytes (outputs that quote source text)
    source_hash: str = "code"

    @property
    def lang(self) -> str:
        return "python" if self.script else "rust"

    @property
    def binary(self) -> str:
        return self.bin or self.crate or ""

    def key(self, role: str) -> str:
        return f"{self.id}@{role}"


@dataclass(frozen=True)
class Manifest:
    path: Path
    experiments: tuple[Experiment, ...]

    def get(self, exp_id: str) -> Experiment:
        for e in self.experiments:
            if e.id == exp_id:
                return e
        known = ", ".join(e.id for e in self.experiments)
        raise ManifestError(f"{self.path}: no experiment {exp_id!r} (known: {known})")

    def select(self, only: list[str] | None) -> list[Experiment]:
        if not only:
            return list(self.experiments)
        return [self.get(i) for i in only]


def _per_role(value, roles, conv, what):
    """A manifest value that is either one value for all roles or a table {cpu=..., gpu=...}."""
    if isinstance(value, dict):
        unknown = set(value) - set(ROLES)
        if unknown:
            raise ValueError(f"{what}: unknown role(s) {sorted(unknown)}")
        missing = [r for r in roles if r not in value]
        if missing:
            raise ValueError(f"{what}: no value for role(s) {missing}")
        return {r: conv(value[r]) for r in roles}
    return {r: conv(value) for r in roles}


def _entry_lines(text: str) -> dict[str, int]:
    """Line numbers of `id = "..."` inside [[experiment]] tables, for error messages."""
    lines = {}
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"\s*id\s*=\s*[\"']([^\"']+)[\"']", line)
        if m:
            lines.setdefault(m.group(1), n)
    return lines


def load(path: Path) -> Manifest:
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(f"{path}: {e}") from None
    defaults = data.get("defaults", {})
    lines = _entry_lines(text)
    seen: set[str] = set()
    out = []
    for i, raw in enumerate(data.get("experiment", []), 1):
        exp_id = raw.get("id")
        where = f"{path}:{lines.get(exp_id, 0)}" if exp_id else f"{path}: [[experiment]] #{i}"
        try:
            out.append(_parse_one(raw, defaults, lines.get(exp_id, 0)))
        except (ValueError, TypeError, KeyError) as e:
            raise ManifestError(f"{where}: experiment {exp_id or '?'}: {e}") from None
        if exp_id in seen:
            raise ManifestError(f"{where}: duplicate experiment id {exp_id!r}")
        seen.add(exp_id)
    return Manifest(path, tuple(out))


def _parse_one(raw: dict, defaults: dict, line: int) -> Experiment:
    known = {"id", "framework", "script", "crate", "bin", "args", "roles", "timeout", "expect", "mask", "title", "env", "platforms", "source_hash"}
    unknown = set(raw) - known
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)}; allowed: {sorted(known)}")
    exp_id = raw["id"]
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", exp_id):
        raise ValueError("id must be lowercase letters, digits, '.', '_' or '-'")
    framework = raw.get("framework", "none")
    if framework not in FRAMEWORKS:
        raise ValueError(f"framework must be one of {FRAMEWORKS}, not {framework!r}")
    if bool(raw.get("script")) == bool(raw.get("crate")):
        raise ValueError("give exactly one of script (Python) or crate (Rust)")
    roles = tuple(raw.get("roles", ["cpu"]))
    if not roles or any(r not in ROLES for r in roles):
        raise ValueError(f"roles must be a non-empty subset of {ROLES}, not {list(roles)}")
    args = _per_role(raw.get("args", []), roles, lambda a: tuple(str(x) for x in a), "args")
    expect = _per_role(raw.get("expect", defaults.get("expect", "exit 0")), roles, Expect.parse, "expect")
    timeout = float(raw.get("timeout", defaults.get("timeout", 300)))
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    source_hash = raw.get("source_hash", "code")
    if source_hash not in SOURCE_HASH_MODES:
        raise ValueError(f"source_hash must be one of {SOURCE_HASH_MODES}, not {source_hash!r}")
    mask = tuple(raw.get("mask", ()))
    for rx in mask:
        re.compile(rx)
    return Experiment(
        id=exp_id,
        framework=framework,
        roles=roles,
        args=args,
        expect=expect,
        timeout=timeout,
        script=raw.get("script"),
        crate=raw.get("crate"),
        bin=raw.get("bin"),
        mask=mask,
        title=raw.get("title", ""),
        line=line,
        env={str(k): str(v) for k, v in raw.get("env", {}).items()},
        platforms=tuple(raw.get("platforms", ())),
        source_hash=source_hash,
    )
