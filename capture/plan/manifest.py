"""The experiments manifest (docs/experiments.toml): what runs, how, where, and what it should end with.

Every key of every entry is checked when the manifest is loaded, each mistake reported as
`docs/experiments.toml:LINE: experiment ID: reason` (LINE: the entry's `id` line; for a
duplicate id, the duplicate's), all of them at once. Whether a script or crate exists is
checked when it runs (capture.storage.paths), so a missing file fails that experiment only.
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from capture.storage.keys import EXPERIMENT_ID, EXPERIMENT_ID_MAX
from capture.storage.paths import CRATE_NAME, PathError, relative_shape
from capture.system.runner import DEFAULT_MAX_OUTPUT
from capture.system import regular

ROLES = ("cpu", "gpu")
FRAMEWORKS = ("torch", "burn", "candle", "none")
SOURCE_HASH_MODES = ("code", "lines", "exact")
OPERATING_SYSTEMS = ("macos", "linux")
PLACEHOLDERS = ("device", "binary")  # what `{...}` in args may name ({binary}: the path of `runs`'s binary)
KEYS = ("id", "framework", "script", "crate", "bin", "args", "roles", "timeout", "expect", "mask", "title", "env",
        "platforms", "source_hash", "max_output", "processes", "caches", "needs", "gpu_device", "features", "runs")
CACHE_RULES = ("cold", "warm")
NEEDS = ("cargo",)  # what a machine must have for the experiment to run there (else it is skipped)
DEFAULT_KEYS = ("timeout", "expect", "max_output")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
FEATURE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_+-]*")  # a cargo feature of the experiment's own crate


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
    # what of the sources the inputs hash sees (capture/plan/inputs.py): "code" ignores comments, blank
    # space and line positions; "lines" keeps line positions (outputs that quote file:line);
    # "exact" hashes the bytes (outputs that quote source text)
    source_hash: str = "code"
    max_output: int = DEFAULT_MAX_OUTPUT  # bytes of output beyond which the run fails (capture.system.runner)
    # separate processes per capture: records get a tag process=1..N, the output shows each run in turn
    processes: int = 1
    # the on-disk caches of drivers and frameworks (capture/plan/caches.py): "" as the machine has them,
    # "cold" a new empty folder for every process, "warm" one folder filled by an unrecorded run first
    caches: str = ""
    # tools the run needs beyond its language: "cargo" = the pinned crates' source in cargo's registry
    needs: tuple[str, ...] = ()
    # the gpu role's device when it is not the platform's own: a variant built beside it, e.g. burn on
    # vulkan where burn's GPU role is cuda (capture/machines/roles.py GPU_VARIANTS); skipped where not built
    gpu_device: str = ""
    # cargo features of its crate that this experiment's binary is built with, on top of the platform's
    # (e.g. candle's Accelerate on macOS): a build of its own (capture/toolchains/build.py feature_build), so it
    # needs cargo on the machine that runs it
    features: tuple[str, ...] = ()
    # Python experiments that inspect a run of a Rust experiment binary: the crate whose binary `{binary}`
    # in args names (built like any crate experiment's, or prebuilt); its sources join the inputs
    runs: str | None = None

    @property
    def lang(self) -> str:
        return "python" if self.script else "rust"

    @property
    def build_crate(self) -> str | None:
        """The crate this experiment needs built: its own (Rust), or the one whose binary it runs (`runs`)."""
        return self.crate or self.runs

    @property
    def binary(self) -> str:
        """The binary it runs: `bin` or its crate's (Rust), the `runs` crate's (Python), else ''."""
        return self.bin or self.build_crate or ""

    def key(self, role: str) -> str:
        return f"{self.id}@{role}"


@dataclass(frozen=True)
class Manifest:
    path: Path
    experiments: tuple[Experiment, ...]

    @property
    def display(self) -> str:
        return display_path(self.path)

    def where(self, exp: Experiment) -> str:
        """`docs/experiments.toml:LINE: experiment ID` for messages about one entry."""
        return f"{self.display}:{exp.line}: experiment {exp.id}"

    @cached_property
    def _by_id(self) -> dict[str, Experiment]:
        return {e.id: e for e in reversed(self.experiments)}  # the first of a repeated id, as a scan finds it

    def get(self, exp_id: str) -> Experiment:
        found = self._by_id.get(exp_id)  # an index: pages and status ask once per reference
        if found is not None:
            return found
        known = ", ".join(e.id for e in self.experiments)
        if len(exp_id) > EXPERIMENT_ID_MAX:
            raise ManifestError(f"{self.path}: no experiment {exp_id[:40] + '...'!r} ({len(exp_id)} characters; known: {known})")
        raise ManifestError(f"{self.path}: no experiment {exp_id!r} (known: {known})")

    def select(self, only: list[str] | None) -> list[Experiment]:
        if not only:
            return list(self.experiments)
        return [self.get(i) for i in only]


def display_path(path: Path) -> str:
    """How messages name the manifest: docs/experiments.toml when it sits in a docs/ folder."""
    return f"docs/{path.name}" if path.parent.name == "docs" else str(path)


def _tname(v) -> str:
    return {bool: "boolean", int: "integer", float: "float", str: "string", list: "array", dict: "table"}.get(type(v), type(v).__name__)


def _show(v) -> str:
    text = repr(v)
    return f"{_tname(v)} {text if len(text) <= 40 else text[:37] + '...'}"


def _did_you_mean(word: str, known) -> str:
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _unknown_keys(table: dict, known, what: str) -> list[str]:
    return [f"unknown key {k!r} in {what}{_did_you_mean(k, known)}; allowed: {', '.join(known)}" for k in table if k not in known]


def _string(v, what: str) -> str:
    if not isinstance(v, str):
        raise ValueError(f"{what} must be a string, not {_show(v)}")
    return v


def _string_list(v, what: str) -> tuple[str, ...]:
    if not isinstance(v, list):
        raise ValueError(f"{what} must be an array of strings, not {_show(v)}")
    for i, x in enumerate(v):
        if not isinstance(x, str):
            raise ValueError(f"{what}[{i}] must be a string, not {_show(x)}")
    return tuple(v)


def _per_role(value, roles, conv, what):
    """A manifest value that is either one value for all roles or a table {cpu=..., gpu=...}."""
    if isinstance(value, dict):
        unknown = [r for r in value if r not in ROLES]
        if unknown:
            raise ValueError(f"{what}: unknown role(s) {unknown}; a per-role table has keys {', '.join(ROLES)}")
        missing = [r for r in roles if r not in value]
        if missing:
            raise ValueError(f"{what}: no value for role(s) {missing}")
        return {r: conv(value[r], f"{what}.{r}") for r in roles}
    return {r: conv(value, what) for r in roles}


def _args(v, what: str) -> tuple[str, ...]:
    args = _string_list(v, what)
    for i, a in enumerate(args):
        _no_nul(a, f"{what}[{i}]")
        for name in re.findall(r"\{([^{}]*)\}", a):
            if name not in PLACEHOLDERS:
                known = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                raise ValueError(f"{what}: unknown placeholder {{{name}}} in {a!r}{_did_you_mean(name, PLACEHOLDERS)}; known: {known}")
    return args


def _expect(v, what: str) -> Expect:
    if not isinstance(v, str):
        raise ValueError(f"{what} must be a string: 'exit N', 'exit any' or 'timeout', not {_show(v)}")
    return Expect.parse(v)


def _timeout(v, what: str = "timeout") -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{what} must be a number of seconds, not {_show(v)}")
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{what} must be a positive number of seconds, not {v!r}")
    return float(v)


_SIZE_UNITS = {"": 1, "B": 1, "KB": 1000, "KiB": 1024, "MB": 1000**2, "MiB": 1024**2}


MAX_PROCESSES = 10


def _processes(v, what: str = "processes") -> int:
    """How many separate processes one capture runs (1..MAX_PROCESSES)."""
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_PROCESSES:
        raise ValueError(f"{what} must be an integer from 1 to {MAX_PROCESSES}, not {_show(v)}")
    return v


def _size(v, what: str = "max_output") -> int:
    """Bytes: an integer, or a string like "512 KiB" / "2 MB"."""
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise ValueError(f"{what} must be a number of bytes or a string like '512 KiB', not {_show(v)}")
    if isinstance(v, int):
        n = v
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(B|KB|KiB|MB|MiB)?\s*", v)
        if not m:
            raise ValueError(f"{what} {v!r}: write a number of bytes, or N KB / KiB / MB / MiB")
        n = int(float(m.group(1)) * _SIZE_UNITS[m.group(2) or ""])
    if n <= 0:
        raise ValueError(f"{what} must be positive, not {v!r}")
    return n


def _env(v) -> dict[str, str]:
    if not isinstance(v, dict):
        raise ValueError(f"env must be a table of strings, e.g. {{ RAYON_NUM_THREADS = \"1\" }}, not {_show(v)}")
    for k, x in v.items():
        if not ENV_NAME.fullmatch(k):
            raise ValueError(f"env: {k!r} is not an environment variable name")
        if not isinstance(x, str):
            raise ValueError(f"env.{k} must be a string (write {str(x).lower() if isinstance(x, bool) else x!s} in quotes), not {_show(x)}")
        _no_nul(x, f"env.{k}")
    return dict(v)


def _mask(v) -> tuple[str, ...]:
    masks = _string_list(v, "mask")
    for i, rx in enumerate(masks):
        try:
            re.compile(rx)
        except re.error as e:
            raise ValueError(f"mask[{i}] {rx!r} is not a valid regular expression: {e}") from None
    return masks


def _platforms(v) -> tuple[str, ...]:
    plats = _string_list(v, "platforms")
    for p in plats:
        if p not in OPERATING_SYSTEMS:
            raise ValueError(f"platforms: unknown operating system {p!r}{_did_you_mean(p, OPERATING_SYSTEMS)}; "
                             f"known: {', '.join(OPERATING_SYSTEMS)}")
    return plats


def _needs(v) -> tuple[str, ...]:
    needs = _string_list(v, "needs")
    for n in needs:
        if n not in NEEDS:
            raise ValueError(f"needs: unknown {n!r}{_did_you_mean(n, NEEDS)}; known: {', '.join(NEEDS)}")
    return needs


def _features(v) -> tuple[str, ...]:
    feats = _string_list(v, "features")
    for f in feats:
        if not FEATURE_NAME.fullmatch(f):
            raise ValueError(f"features: {f!r} is not a cargo feature name of the experiment's crate "
                             "(letters, digits, '_', '-', '+'; write `accelerate`, not `crate/accelerate`)")
    if len(set(feats)) != len(feats):
        raise ValueError(f"features: a feature is listed twice in {list(feats)}")
    return tuple(sorted(feats))


def _gpu_device(v, framework, roles) -> str:
    from capture.machines.roles import variant_devices

    known = variant_devices(framework or "")
    if not known:
        raise ValueError(f"gpu_device: {framework} has no GPU variants (capture/machines/roles.py GPU_VARIANTS)")
    device = _choice(v, known, "gpu_device")
    if "gpu" not in (roles or ()):
        raise ValueError("gpu_device names the device of the gpu role; roles must include \"gpu\"")
    return device


def _roles(v) -> tuple[str, ...]:
    roles = _string_list(v, "roles")
    if not roles or any(r not in ROLES for r in roles) or len(set(roles)) != len(roles):
        raise ValueError(f"roles must be a non-empty subset of {ROLES} without repeats, not {list(roles)}")
    return roles


def _script(v) -> str:
    try:
        p = relative_shape(v, "script")
    except PathError as e:
        raise ValueError(str(e)) from None
    if p.parts[0] != "snippets" or len(p.parts) < 2 or p.suffix != ".py":
        raise ValueError(f"script {v!r} must be a Python file under snippets/, e.g. snippets/exec_gpu.py")
    return v


def _name(v, what: str) -> str:
    if not isinstance(v, str) or not CRATE_NAME.fullmatch(v):
        raise ValueError(f"{what} {v!r} must be a name (letters, digits, '_' or '-'), e.g. design-bench")
    return v


def _choice(v, choices, what: str) -> str:
    if not isinstance(v, str) or v not in choices:
        raise ValueError(f"{what} must be one of {', '.join(choices)}, not {_show(v)}{_did_you_mean(v, choices) if isinstance(v, str) else ''}")
    return v


@dataclass
class _Lines:
    """Line numbers in the manifest text, for messages: the [defaults] table and each [[experiment]] entry."""

    defaults: int = 0
    entries: list[int] = field(default_factory=list)  # the entry's `id =` line (its header line without one)

    @classmethod
    def scan(cls, text: str) -> "_Lines":
        out = cls()
        current = None
        for n, line in enumerate(text.splitlines(), 1):
            if re.match(r"\s*\[\[\s*experiment\s*\]\]", line):
                out.entries.append(n)
                current = len(out.entries) - 1
            elif re.match(r"\s*\[\s*defaults\s*\]", line):
                out.defaults, current = n, None
            elif re.match(r"\s*\[", line):
                current = None
            elif current is not None and re.match(r"\s*id\s*=", line):
                out.entries[current] = n
                current = None  # the first id line of the entry
        return out

    def entry(self, i: int) -> int:
        return self.entries[i] if i < len(self.entries) else 0


def load(path: Path) -> Manifest:
    try:
        text = regular.read_text(path)
    except UnicodeDecodeError as e:
        raise ManifestError(f"{display_path(path)}: not UTF-8 (byte offset {e.start})") from None
    except OSError as e:
        raise ManifestError(f"{display_path(path)}: cannot read ({e if isinstance(e, regular.NotRegular) else e.strerror or e})") from None
    shown = display_path(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(f"{shown}: {e}") from None
    lines = _Lines.scan(text)
    errors = [f"{shown}:1: {m}" for m in _unknown_keys(data, ("defaults", "experiment"), "the manifest")]
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        errors.append(f"{shown}:{lines.defaults}: [defaults] must be a table, not {_show(defaults)}")
        defaults = {}
    errors += [f"{shown}:{lines.defaults}: {m}" for m in _unknown_keys(defaults, DEFAULT_KEYS, "[defaults]")]
    for key, check in (("timeout", _timeout), ("expect", _expect), ("max_output", _size)):
        if key in defaults:
            try:
                check(defaults[key], f"[defaults] {key}")
            except ValueError as e:
                errors.append(f"{shown}:{lines.defaults}: {e}")
    entries = data.get("experiment", [])
    if not isinstance(entries, list):
        errors.append(f"{shown}: experiment must be an array of tables ([[experiment]]), not {_show(entries)}")
        entries = []
    seen: dict[str, int] = {}
    out = []
    for i, raw in enumerate(entries):
        line = lines.entry(i)
        exp_id = raw.get("id") if isinstance(raw, dict) else None
        name = (exp_id if len(exp_id) <= EXPERIMENT_ID_MAX else exp_id[:40] + "...") if isinstance(exp_id, str) else "?"
        where = f"{shown}:{line}: experiment {name}"
        if not isinstance(raw, dict):
            errors.append(f"{where}: an [[experiment]] entry must be a table, not {_show(raw)}")
            continue
        problems: list[str] = []
        exp = _parse_one(raw, defaults, line, problems)
        errors += [f"{where}: {m}" for m in problems]
        if isinstance(exp_id, str):
            if exp_id in seen:
                errors.append(f"{where}: duplicate experiment id {exp_id!r} (first at line {seen[exp_id]})")
            else:
                seen[exp_id] = line
        if exp is not None and not problems:
            out.append(exp)
    if errors:
        raise ManifestError("\n".join(errors))
    return Manifest(path, tuple(out))


def _parse_one(raw: dict, defaults: dict, line: int, problems: list[str]) -> Experiment | None:
    """One entry, every key checked; each problem appended as a reason (the caller adds file:line: id)."""
    problems += _unknown_keys(raw, KEYS, "this entry")

    def get(key, check, default=None):
        if key not in raw:
            return default
        try:
            return check(raw[key])
        except ValueError as e:
            problems.append(str(e))
            return None

    if "id" not in raw:
        problems.append("no id")
    exp_id = get("id", _id)
    framework = get("framework", lambda v: _choice(v, FRAMEWORKS, "framework"), "none")
    script = get("script", _script)
    crate = get("crate", lambda v: _name(v, "crate"))
    bin_ = get("bin", lambda v: _name(v, "bin"))
    if ("script" in raw) == ("crate" in raw):
        problems.append("give exactly one of script (Python) or crate (Rust)")
    if "bin" in raw and "crate" not in raw:
        problems.append("bin names a binary of a crate; it needs crate")
    roles = get("roles", _roles, ("cpu",))
    roles = roles or ("cpu",)
    args = get("args", lambda v: _per_role(v, roles, _args, "args"), {r: () for r in roles})
    if "expect" in raw:
        expect = get("expect", lambda v: _per_role(v, roles, _expect, "expect"))
    else:
        try:
            expect = {r: _expect(defaults.get("expect", "exit 0"), "expect") for r in roles}
        except ValueError:
            expect = None  # reported with [defaults]
    timeout = get("timeout", _timeout, _default(defaults, "timeout", _timeout, 300.0))
    max_output = get("max_output", _size, _default(defaults, "max_output", _size, DEFAULT_MAX_OUTPUT))
    mask = get("mask", _mask, ())
    title = get("title", lambda v: _string(v, "title"), "")
    env = get("env", _env, {})
    platforms = get("platforms", _platforms, ())
    source_hash = get("source_hash", lambda v: _choice(v, SOURCE_HASH_MODES, "source_hash"), "code")
    processes = get("processes", _processes, 1)
    caches = get("caches", lambda v: _choice(v, CACHE_RULES, "caches"), "")
    needs = get("needs", _needs, ())
    gpu_device = get("gpu_device", lambda v: _gpu_device(v, framework, roles), "")
    features = get("features", _features, ())
    if "features" in raw and "crate" not in raw:
        problems.append("features are cargo features of a crate; they need crate")
    runs = get("runs", lambda v: _name(v, "runs"))
    if "runs" in raw and "script" not in raw:
        problems.append("runs names the crate whose binary a Python experiment runs; it needs script")
    uses_binary = any("{binary}" in a for per_role in (args or {}).values() for a in per_role)
    if uses_binary and "runs" not in raw:
        problems.append("args use {binary}; name the crate whose binary it is with runs")
    if problems:
        return None
    return Experiment(
        id=exp_id, framework=framework, roles=roles, args=args, expect=expect, timeout=timeout,
        script=script, crate=crate, bin=bin_, mask=mask, title=title, line=line, env=env,
        platforms=platforms, source_hash=source_hash, max_output=max_output, processes=processes,
        caches=caches, needs=needs, gpu_device=gpu_device, features=features or (), runs=runs,
    )


def _id(v, what: str = "id") -> str:
    if not isinstance(v, str) or not EXPERIMENT_ID.fullmatch(v):
        raise ValueError(f"id must be a string of lowercase letters, digits, '.', '_' or '-' (starting with a letter or digit), not {_show(v)}")
    if len(v) > EXPERIMENT_ID_MAX:
        raise ValueError(f"id has {len(v)} characters; at most {EXPERIMENT_ID_MAX} (it names files): shorten {_show(v)}")
    return v


def _no_nul(s: str, what: str) -> None:
    if "\0" in s:
        raise ValueError(f"{what} {_show(s)} holds a NUL character (\\0 or \\u0000), which no program argument or "
                         "environment value can carry; remove it")


def _default(defaults: dict, key: str, check, fallback):
    try:
        return check(defaults[key], key) if key in defaults else fallback
    except ValueError:
        return fallback  # reported with [defaults]
