"""Upgrade: what a new version of a pinned package changes in the book, before the book changes.

    python -m capture upgrade candle-core 0.11.1 [NAME VERSION ...]   try it (nothing committed changes)
    python -m capture upgrade --import candle-core-0.11.1 FILE        fragments the GPU machine captured
    python -m capture upgrade --report candle-core-0.11.1             the report again, from what is there
    python -m capture upgrade --adopt candle-core-0.11.1              copy the pins and fragments into the book

Everything happens in a scratch folder, .capture/upgrade/<name>/ (git-ignored):

- `base/`: a git worktree of the commit the upgrade starts from (the old pins);
- `new/`: a git worktree of the same commit whose pins are changed: crates/Cargo.toml's exact pins and
  `cargo update` (Cargo.lock), or pyproject.toml's pin and `uv lock` (uv.lock);
- `gpu/`: the bundle for a platform that cannot build (its route is "bundle"), with the changed pin files
  and a run.sh that applies them to a copy of the checkout there;
- `state.json`, `report.json` and `logs/`.

The experiments the upgrade touches (`targets`) are those whose inputs hash differs between the two
worktrees, and those that read the pinned crates' source from cargo's registry (`needs = ["cargo"]`), whose
inputs do not include the lock. Both are captured by the one code path `capture_side`, on one of two ways:

- this host is a platform's own machine: the new worktree's fragments of that platform are re-captured
  (`regenerate` there), and compared with the committed ones (the base worktree);
- it is not (another machine under the same key, or a platform the book does not have): the targets run
  twice here, in the base worktree and in the new one, under a platform key of this host's own
  (fingerprint.suggest_key), and those two runs are compared: same machine, same conditions. The book's
  platforms are not re-captured; the report says so and names the commands that re-capture them there.

What the two sides say is compared by capture/running/changes.py; the report (a page under
docs/dev/upgrades/ and a summary for the terminal) by capture/commands/upgrade.py. Nothing in the committed
book changes until `--adopt`, which refuses unless every fragment the new pins made stale is captured
again on its own machine, everything builds and no claim the pages expect to hold fails.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from capture.machines import fingerprint, identity as identitymod
from capture.machines.platform import Platform, machine_record
from capture.machines.roles import cargo_features
from capture.plan import inputs as inputsmod
from capture.plan import manifest as manifestmod
from capture.storage.keys import FragmentKey, check_platform_key
from capture.storage.paths import Layout, cache_home
from capture.storage.store import Store
from capture.toolchains import build as buildmod

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
VERSION = re.compile(r"[0-9][0-9A-Za-z.+-]{0,63}")
PIN_FILES = ("crates/Cargo.toml", "crates/Cargo.lock", "pyproject.toml", "uv.lock")
STATE_VERSION = 1


class UpgradeError(RuntimeError):
    """The upgrade cannot go on; the message says why and what to do."""


@dataclass(frozen=True)
class Bump:
    package: str
    version: str

    def __str__(self) -> str:
        return f"{self.package} {self.version}"


def parse_bumps(args: list[str]) -> list[Bump]:
    """`candle-core 0.11.1 candle-nn 0.11.1`, or `candle-core@0.11.1` / `torch==2.16.0`, into bumps."""
    words, out = list(args), []
    while words:
        w = words.pop(0)
        name, sep, version = w.partition("==") if "==" in w else w.partition("@")
        if not sep:
            if not words:
                raise UpgradeError(f"{w}: name a version too (`{w} 1.2.3`)")
            name, version = w, words.pop(0)
        if not NAME.fullmatch(name):
            raise UpgradeError(f"{name!r} is not a package name")
        if not VERSION.fullmatch(version):
            raise UpgradeError(f"{version!r} is not a version (for {name})")
        if any(b.package == name for b in out):
            raise UpgradeError(f"{name} is named twice")
        out.append(Bump(name, version))
    if not out:
        raise UpgradeError("name a package and the version to try: candle-core 0.11.1")
    return out


def upgrade_name(bumps: list[Bump]) -> str:
    return "+".join(f"{b.package}-{b.version}" for b in bumps)


@dataclass(frozen=True)
class Folder:
    """.capture/upgrade/<name>/ of one upgrade."""
    root: Path

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def base(self) -> Path:
        return self.root / "base"

    @property
    def new(self) -> Path:
        return self.root / "new"

    @property
    def gpu(self) -> Path:
        return self.root / "gpu"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def report_file(self) -> Path:
        return self.root / "report.json"

    def state(self) -> dict:
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("format") == STATE_VERSION else {}

    def save(self, state: dict) -> None:
        state = {**state, "format": STATE_VERSION}
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(self.state_file)


def folder(layout: Layout, name: str) -> Folder:
    if not NAME.fullmatch(name.replace("+", "-")[:64]) or "/" in name or name.startswith("."):
        raise UpgradeError(f"{name!r} is not an upgrade's name (see .capture/upgrade/)")
    return Folder(layout.scratch / "upgrade" / name)


# -- git -------------------------------------------------------------------------------------------

def git(root: Path, *args: str, check: bool = True) -> str:
    try:
        r = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=300)
    except OSError as e:
        raise UpgradeError(f"git {' '.join(args)}: {e}") from None
    if check and r.returncode != 0:
        raise UpgradeError(f"git {' '.join(args)} (in {root}) failed: {(r.stderr or r.stdout).strip()[-600:]}")
    return r.stdout


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def worktree(main: Path, path: Path, commit: str) -> None:
    """A detached worktree of `commit` at `path`, made again when it is something else."""
    if (path / ".git").exists():
        try:
            if head(path) == commit and not git(path, "status", "--porcelain", "--untracked-files=no").strip():
                return
        except UpgradeError:
            pass
        drop_worktree(main, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    git(main, "worktree", "add", "--detach", "--force", str(path), commit)


def drop_worktree(main: Path, path: Path) -> None:
    git(main, "worktree", "remove", "--force", str(path), check=False)
    shutil.rmtree(path, ignore_errors=True)
    git(main, "worktree", "prune", check=False)


# -- pins ------------------------------------------------------------------------------------------

def lock_packages(path: Path) -> dict[str, list[str]]:
    """package -> the versions a Cargo.lock or uv.lock pins (sorted); {} without the file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    out: dict[str, set[str]] = {}
    for p in data.get("package", []):
        if isinstance(p, dict) and isinstance(p.get("name"), str):
            out.setdefault(p["name"], set()).add(str(p.get("version", "")))
    return {k: sorted(v) for k, v in sorted(out.items())}


def lock_changes(base: Path, new: Path) -> dict[str, dict[str, list[list[str]]]]:
    """Per lock ("cargo", "python"): package -> [versions in base, versions in new], for those that differ."""
    out = {}
    for kind, rel in (("cargo", "crates/Cargo.lock"), ("python", "uv.lock")):
        a, b = lock_packages(base / rel), lock_packages(new / rel)
        changed = {k: [a.get(k, []), b.get(k, [])] for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}
        if changed:
            out[kind] = changed
    return out


def kind_of(root: Path, bump: Bump) -> str:
    if bump.package in lock_packages(root / "crates" / "Cargo.lock"):
        return "cargo"
    if bump.package in lock_packages(root / "uv.lock"):
        return "python"
    raise UpgradeError(f"neither crates/Cargo.lock nor uv.lock pins a package {bump.package!r}")


def _run_tool(cmd: list[str], cwd: Path, log: Path, env: dict | None = None, timeout: float = 1800) -> tuple[int, str]:
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
        text = (r.stdout or "") + (r.stderr or "")
        code = r.returncode
    except (OSError, subprocess.TimeoutExpired) as e:
        text, code = f"{e}\n", 127
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"$ {' '.join(cmd)}   (in {cwd})\n{text}\n[exit {code}]\n")
    return code, text


def _exact_pin(text: str, package: str, old: str | None, new: str, op: str) -> tuple[str, int]:
    """Replace `op`OLD by `op`NEW in the version requirement of `package` (a TOML key or a quoted requirement)."""
    name = re.escape(package)
    patterns = [  # Cargo.toml: name = "=1.0" / name = { version = "=1.0", ... }; pyproject: "name==1.0"
        rf'(^\s*"?{name}"?\s*=\s*(?:\{{[^}}\n]*?\bversion\s*=\s*)?"){re.escape(op)}([^"]+)(")',
        rf'(["\']{name}\s*){re.escape(op)}([^"\';,\s]+)(["\';,])',
    ]
    count = 0
    for pat in patterns:
        def sub(m):
            nonlocal count
            if old is not None and m.group(2) != old and op == "==":
                return m.group(0)
            count += 1
            return f"{m.group(1)}{op}{new}{m.group(3)}"
        text = re.sub(pat, sub, text, flags=re.M)
    return text, count


def pin(root: Path, bumps: list[Bump], log: Path, echo=print) -> dict[str, str]:
    """Change the pins in a worktree: exact pins in the Cargo.toml files and `cargo update`, or pyproject.toml
    and `uv lock`. Returns package -> the version the base pinned. UpgradeError when the tools refuse."""
    old: dict[str, str] = {}
    kinds = {b.package: kind_of(root, b) for b in bumps}
    cargo = [b for b in bumps if kinds[b.package] == "cargo"]
    python = [b for b in bumps if kinds[b.package] == "python"]
    if cargo:
        locked = lock_packages(root / "crates" / "Cargo.lock")
        for b in cargo:
            old[b.package] = ", ".join(locked[b.package])
        edited = False
        for toml in sorted((root / "crates").glob("*/Cargo.toml")) + [root / "crates" / "Cargo.toml"]:
            text = toml.read_text(encoding="utf-8")
            for b in cargo:
                text, n = _exact_pin(text, b.package, None, b.version, "=")
                edited |= n > 0
            toml.write_text(text, encoding="utf-8")
        crates = root / "crates"
        if edited:
            echo("cargo update --workspace (the exact pins in Cargo.toml changed)")
            code, out = _run_tool(["cargo", "update", "--workspace"], crates, log)
            if code != 0:
                raise UpgradeError(f"cargo update --workspace failed in {crates}:\n{_tail(out)}")
        for b in cargo:
            if lock_packages(crates / "Cargo.lock").get(b.package) != [b.version]:
                echo(f"cargo update -p {b.package} --precise {b.version}")
                code, out = _run_tool(["cargo", "update", "-p", b.package, "--precise", b.version], crates, log)
                if code != 0:
                    raise UpgradeError(f"cargo update -p {b.package} --precise {b.version} failed:\n{_tail(out)}")
            got = lock_packages(crates / "Cargo.lock").get(b.package)
            if got != [b.version]:
                raise UpgradeError(f"crates/Cargo.lock pins {b.package} at {', '.join(got or ['nothing'])} after "
                                   f"cargo update, not {b.version} (log: {log})")
    if python:
        locked = lock_packages(root / "uv.lock")
        project = root / "pyproject.toml"
        text = project.read_text(encoding="utf-8")
        for b in python:
            old[b.package] = ", ".join(locked[b.package])
            text, _ = _exact_pin(text, b.package, None, b.version, "==")
        project.write_text(text, encoding="utf-8")
        uv = shutil.which("uv")
        if uv is None:
            raise UpgradeError("uv.lock is changed with uv, and there is no uv on PATH (pip install uv)")
        args = [uv, "lock", *[a for b in python for a in ("--upgrade-package", f"{b.package}=={b.version}")]]
        echo(f"{' '.join(args[1:])}")
        code, out = _run_tool(args, root, log)
        if code != 0:
            raise UpgradeError(f"uv lock failed in {root}:\n{_tail(out)}")
        for b in python:
            got = lock_packages(root / "uv.lock").get(b.package)
            if not got or b.version not in got:
                raise UpgradeError(f"uv.lock pins {b.package} at {', '.join(got or ['nothing'])}, not {b.version}")
    return old


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def python_for(folder_: Folder, root: Path, bumps_python: bool, given: str | None, log: Path, echo=print) -> str:
    """The interpreter that runs the new side's Python snippets: `given`; else, when the upgrade changes a Python
    package, a venv synced from the new uv.lock (uv sync --locked --extra run); else this one."""
    if given:
        return given
    if not bumps_python:
        return sys.executable
    venv = folder_.root / "venv-new"
    uv = shutil.which("uv")
    if uv is None:
        raise UpgradeError("the new Python packages are installed with uv, and there is no uv on PATH; "
                           "or give --new-python PATH of an interpreter that has them")
    echo(f"uv sync --locked --extra run into {venv}")
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(venv)}
    code, out = _run_tool([uv, "sync", "--locked", "--no-install-project", "--extra", "run"], root, log, env=env)
    if code != 0:
        raise UpgradeError(f"uv sync failed:\n{_tail(out)}")
    return str(venv / "bin" / "python")


# -- what the upgrade touches ----------------------------------------------------------------------

def targets(base: Layout, new: Layout, only: list[str] | None = None) -> dict[str, str]:
    """experiment@role -> why the upgrade touches it: its inputs changed (which), or it reads the pinned crates'
    source (`needs = ["cargo"]`, whose inputs leave the lock out) while the lock changed."""
    from capture.evidence.book import changed_inputs

    manifest = manifestmod.load(new.manifest)
    old_manifest = manifestmod.load(base.manifest)
    lock_changed = lock_packages(base.crates / "Cargo.lock") != lock_packages(new.crates / "Cargo.lock")
    out = {}
    for exp in manifest.select(only):
        for role in exp.roles:
            key = exp.key(role)
            try:
                rec_new = inputsmod.inputs(exp, role, new)
                rec_old = inputsmod.inputs(old_manifest.get(exp.id), role, base)
            except (OSError, ValueError, manifestmod.ManifestError) as e:
                out[key] = f"its inputs cannot be read: {e}"
                continue
            if inputsmod.digest(rec_new) != inputsmod.digest(rec_old):
                out[key] = "inputs changed: " + ", ".join(changed_inputs(rec_old, rec_new))
            elif "cargo" in exp.needs and lock_changed:
                out[key] = "reads the pinned crates' source (needs cargo)"
    return out


def lock_closure(lock: Path, package: str) -> set[str]:
    """The packages `package` depends on in a Cargo.lock, itself included (names; every version)."""
    try:
        data = tomllib.loads(lock.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {package}
    deps: dict[str, set[str]] = {}
    for p in data.get("package", []):
        deps.setdefault(p["name"], set()).update(d.split(" ", 1)[0] for d in p.get("dependencies", []))
    seen, todo = set(), [package]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo += sorted(deps.get(n, ()))
    return seen


# -- building --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CompileError:
    package: str  # the package that did not compile ("" when cargo did not say)
    file: str  # crates/<member>/src/x.rs for ours; <registry>/name-version/... for a dependency
    line: int
    column: int
    code: str  # E0432, or ""
    message: str

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file else "(no location)"


_ERROR = re.compile(r"^error(?:\[(E\d+)\])?: (.*)$")
_AT = re.compile(r"^\s*--> (.+?):(\d+):(\d+)\s*$")
_COULD_NOT = re.compile(r"^error: could not compile `([^`]+)`")


def parse_cargo_errors(text: str, crates_dir: Path | None = None) -> tuple[list[CompileError], list[str]]:
    """The compiler errors in cargo's human output, each with its location, and the packages that did not compile."""
    errors, failed = [], []
    lines = text.splitlines()
    registry = re.compile(r".*/registry/src/[^/]+/")
    for i, line in enumerate(lines):
        m = _COULD_NOT.match(line)
        if m:
            if m.group(1) not in failed:
                failed.append(m.group(1))
            continue
        m = _ERROR.match(line)
        if not m or m.group(2).startswith(("could not compile", "aborting due to", "Compilation failed")):
            continue
        file, ln, col = "", 0, 0
        for nxt in lines[i + 1:i + 4]:
            at = _AT.match(nxt)
            if at:
                file, ln, col = at.group(1), int(at.group(2)), int(at.group(3))
                break
        if file:
            if registry.match(file):
                file = "<registry>/" + registry.sub("", file)
            elif not file.startswith("/"):
                file = f"crates/{file}"
            elif crates_dir is not None and file.startswith(str(crates_dir) + "/"):
                file = "crates/" + file[len(str(crates_dir)) + 1:]
        errors.append(CompileError("", file, ln, col, m.group(1) or "", m.group(2)))
    # which package each error belongs to: cargo prints `could not compile X` after X's errors
    out, start = [], 0
    for i, line in enumerate(lines):
        m = _COULD_NOT.match(line)
        if m:
            block = "\n".join(lines[start:i])
            for e in errors:
                if not e.package and e.message in block:
                    out.append(replace(e, package=m.group(1)))
            start = i + 1
    tagged = {(e.file, e.line, e.message) for e in out}
    out += [e for e in errors if (e.file, e.line, e.message) not in tagged]
    return out, failed


def members(crates: Path) -> dict[str, str]:
    """Workspace member folder -> its package name."""
    ws = tomllib.loads((crates / "Cargo.toml").read_text(encoding="utf-8"))
    out = {}
    for m in ws.get("workspace", {}).get("members", []):
        try:
            out[m] = tomllib.loads((crates / m / "Cargo.toml").read_text(encoding="utf-8"))["package"]["name"]
        except (OSError, ValueError, KeyError):
            out[m] = m
    return out


def drop_members(crates: Path, gone: list[str]) -> None:
    """Leave members out of the workspace (crates/Cargo.toml's members list), in a worktree only."""
    path = crates / "Cargo.toml"
    text = path.read_text(encoding="utf-8")
    m = re.search(r"^members\s*=\s*\[([^\]]*)\]", text, flags=re.M)
    if not m:
        raise UpgradeError(f"{path}: no `members = [...]` list to leave {', '.join(gone)} out of")
    kept = [x for x in re.findall(r'"([^"]+)"', m.group(1)) if x not in gone]
    text = text[:m.start()] + "members = [" + ", ".join(f'"{x}"' for x in kept) + "]" + text[m.end():]
    path.write_text(text, encoding="utf-8")


@dataclass
class BuildReport:
    ok: bool = True
    command: str = ""
    log: str = ""
    errors: list[CompileError] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # packages that did not compile
    dropped: list[str] = field(default_factory=list)  # workspace members left out so the rest could be captured
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"ok": self.ok, "command": self.command, "log": self.log, "failed": self.failed, "dropped": self.dropped,
                "seconds": round(self.seconds, 1), "errors": [e.__dict__ for e in self.errors]}

    @classmethod
    def from_json(cls, d: dict) -> "BuildReport":
        return cls(d.get("ok", True), d.get("command", ""), d.get("log", ""),
                   [CompileError(**e) for e in d.get("errors", [])], d.get("failed", []), d.get("dropped", []),
                   d.get("seconds", 0.0))


def build(layout: Layout, platform: Platform, log: Path, echo=None, note=None) -> BuildReport:
    """Build the Rust experiments of a worktree the way regenerate will (same features, same target dir), so its
    own build then finds everything built. When some crate does not compile, its errors are kept and the members
    it stops are left out of the worktree's workspace, and the rest is built, so what builds can be captured."""
    import time

    manifest = manifestmod.load(layout.manifest)
    crates = {e.build_crate: e.framework for e in manifest.experiments if e.build_crate}
    report = BuildReport()
    if not crates:
        return report
    t = time.perf_counter()
    while True:
        feats = cargo_features(platform, crates, layout.crates)
        try:
            buildmod.cargo_build(layout, feats, log, echo=echo)
            report.command = f"(cd crates && cargo build --release --locked --workspace{' --features ' + ','.join(feats) if feats else ''})"
            break
        except buildmod.BuildError as e:
            report.ok = False
            report.command = str(e).split("rerun: ", 1)[-1].rstrip(")") if "rerun: " in str(e) else str(e)
            errors, failed = parse_cargo_errors(e.log, layout.crates)
            report.errors += [x for x in errors if x not in report.errors]
            report.failed += [f for f in failed if f not in report.failed]
            current = members(layout.crates)
            by_name = {v: k for k, v in current.items()}
            lock = layout.crates / "Cargo.lock"
            gone = [by_name[f] for f in failed if f in by_name]
            for f in failed:
                if f not in by_name:  # a dependency: every member that depends on it
                    gone += [m for m, name in current.items() if f in lock_closure(lock, name) and m not in gone]
            if not failed:  # no compile error to act on (a missing tool, a resolution problem): keep its words
                report.errors.append(CompileError("", "", 0, 0, "", str(e).splitlines()[0]))
                break
            if not gone or len(gone) >= len(current):
                report.dropped += [m for m in current if m not in report.dropped]
                break
            report.dropped += gone
            if note:
                note(f"{', '.join(gone)} do(es) not build; left out of {layout.rel(layout.crates / 'Cargo.toml')} "
                     "so the rest can be captured")
            drop_members(layout.crates, gone)
            inputsmod._workspace_paths.cache_clear()
            code, out = _run_tool(["cargo", "update", "--workspace", "--offline"], layout.crates, log.with_suffix(".update.log"))
            if code != 0:
                _run_tool(["cargo", "update", "--workspace"], layout.crates, log.with_suffix(".update.log"))
    report.seconds = time.perf_counter() - t
    report.log = str(log)
    return report


def gpu_check(layout: Layout, log: Path, echo=None, note=None) -> BuildReport:
    """`cargo check` of the feature sets an NVIDIA platform's bundle builds (one step per framework, as
    capture/toolchains/build.py cargo_steps does), so the code behind them (`cfg(feature = "cuda")`, burn's Vulkan
    variant) is type-checked against the new pins here, without building a bundle. candle's CUDA kernels need nvcc at
    build time: from the CUDA kit when it is installed (capture/toolchains/cudakit.py), else candle is checked without."""
    import time

    from capture.machines.roles import candle_cuda_buildable, nvidia_build
    from capture.toolchains import cudakit, llvmkit, wheelkit

    manifest = manifestmod.load(layout.manifest)
    crates = {e.build_crate: e.framework for e in manifest.experiments if e.build_crate}
    env = dict(os.environ)
    if not candle_cuda_buildable():
        kit = cudakit.default_home()
        if (kit / "bin" / "nvcc").is_file():  # installed already (a bundle was built here): never downloaded for a check
            env.update(cudakit.build_env(kit))
        elif note:
            note(f"candle's CUDA path is not checked: no nvcc here and no CUDA kit at {kit} "
                 "(python -m capture bundle --candle-cuda installs one)")
    saved = os.environ.copy()
    os.environ.update(env)
    try:
        plan = nvidia_build(crates, layout.crates, candle_cuda_buildable())
    finally:
        os.environ.clear()
        os.environ.update(saved)
    report = BuildReport()
    t = time.perf_counter()
    log.parent.mkdir(parents=True, exist_ok=True)
    commands = []
    with open(log, "w", encoding="utf-8") as out:
        for step in buildmod.cargo_steps(layout, plan.features):
            cmd = ["cargo", "check", *step.cmd[2:]]
            try:
                kit = llvmkit.build_env(layout, list(step.features), log=note or print)
            except wheelkit.KitError as e:  # burn's CUDA cannot be built with the kit: said, and the rest checked
                report.ok = False
                report.errors.append(CompileError(",".join(step.packages), "", 0, 0, "", f"{' '.join(cmd)}: {e}"))
                rest = tuple(f for f in step.features if not llvmkit.pulls_burn_cuda(layout.crates, [f]))
                step = buildmod.CargoStep(step.packages, rest)
                cmd, kit = ["cargo", "check", *step.cmd[2:]], {}
            commands.append(" ".join(cmd))
            out.write(f"$ {' '.join(cmd)}\n")
            out.flush()
            proc = subprocess.Popen(cmd, cwd=layout.crates, env={**env, **kit}, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, errors="replace")
            text = []
            assert proc.stdout is not None
            for line in proc.stdout:
                out.write(line)
                text.append(line)
                if echo:
                    echo(line.rstrip())
            if proc.wait() != 0:
                report.ok = False
                errors, failed = parse_cargo_errors("".join(text), layout.crates)
                report.errors += errors or [CompileError(",".join(step.packages), "", 0, 0, "",
                                                         _tail("".join(text), 3).replace("\n", " "))]
                report.failed += [f for f in failed if f not in report.failed]
    report.command = " ; ".join(f"(cd crates && {c})" for c in commands)
    report.log = str(log)
    report.seconds = time.perf_counter() - t
    return report


# -- capturing -------------------------------------------------------------------------------------

def own_platform(layout: Layout, platform: Platform) -> bool:
    """Whether this host is the machine of its detected platform in the book (platform.json's fingerprint)."""
    try:
        ident = identitymod.read(layout.fragments, platform.key)
    except identitymod.IdentityError:
        return False
    if ident is None or ident.fingerprint is None:
        return False
    return fingerprint.same(ident.host, fingerprint.of_machine(machine_record(platform)))


def scratch_platform(layout: Layout, platform: Platform) -> Platform:
    """This host under a platform key of its own, which the book does not have: its runs never mix with a
    platform's fragments (and take the default drift, as a new machine does)."""
    key = fingerprint.suggest_key(fingerprint.of_machine(machine_record(platform)))
    if key in committed_platforms(layout) | {platform.key}:  # the book has a platform of that name: go beside it
        key = f"{key[:70]}-upgrade"
    return replace(platform, key=check_platform_key(key))


def committed_platforms(layout: Layout) -> set[str]:
    """The platform folders git holds in the checkout (not those an upgrade's own runs added)."""
    out = git(layout.root, "ls-tree", "--name-only", "HEAD", "docs/_fragments/", check=False)
    return {line.rsplit("/", 1)[-1] for line in out.splitlines() if line.strip()}


def capture_side(layout: Layout, platform: Platform, keys: list[str], python: str, out=sys.stderr):
    """Capture these experiment@role keys in one worktree for one platform (its docs/_fragments), forced: the one
    code path both ways use (a platform's own machine re-capturing, or this host running both pins)."""
    from capture.running.regenerate import Options, regenerate

    if not keys:
        return []
    parsed = [FragmentKey.parse(k) for k in keys]
    only = sorted({k.exp for k in parsed})
    roles = sorted({k.role for k in parsed})
    manifest = manifestmod.load(layout.manifest)
    return regenerate(layout, manifest, platform, Store(layout.fragments), Options(only=only, roles=roles, force=True,
                                                                                   python=python), out=out)


# -- the GPU machine's part ------------------------------------------------------------------------

GPU_RUN_SH = r"""#!/usr/bin/env bash
# Written by `python -m capture upgrade` for {name}: capture the upgrade's fragments on {platform}.
# On that machine, from the root of a checkout of commit {commit} (the upgrade's base):
#   bash {rel}/run.sh [regenerate options]        (default: --only {only})
# It copies the checkout to a scratch folder, puts the changed pin files there ({pins}),
# runs the bundle's run.sh in it and packs the fragments into fragments.tar.gz ($OUT when set, else here).
# Then, on the machine of the upgrade: python -m capture upgrade --import {name} fragments.tar.gz
set -euo pipefail
here="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
root="$(pwd)"
work="$(mktemp -d)"
tar -C "$root" --exclude=./.capture --exclude=./.git --exclude=./docs/_build --exclude=./.device -cf - . | tar -C "$work" -xf -
cp -a "$here/pins/." "$work/"
args=("$@")
[ ${{#args[@]}} -gt 0 ] || args=(--only {only} --force)
(cd "$work" && bash "$here/device/run.sh" "${{args[@]}}") || echo "run.sh: regenerate exited $?" >&2
dest="${{OUT:-$here}}"
mkdir -p "$dest"
tar -C "$work/docs/_fragments" -czf "$dest/fragments.tar.gz" .
echo "fragments: $dest/fragments.tar.gz"
"""


def prepare_gpu(layout_new: Layout, folder_: Folder, platform_key: str, only: list[str], commit: str,
                bundle_args: list[str], echo=print) -> Path:
    """The GPU machine's folder: the bundle built from the new worktree, the changed pin files, and run.sh."""
    from capture.toolchains.bundle import make_bundle

    gpu = folder_.gpu
    pins = gpu / "pins"
    shutil.rmtree(pins, ignore_errors=True)
    changed = [p for p in PIN_FILES if _differs(folder_.base / p, layout_new.root / p)]
    for rel in changed:
        (pins / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(layout_new.root / rel, pins / rel)
    target = os.environ.get("CARGO_TARGET_DIR") or str(layout_new.cargo_target)
    saved = os.environ.get("CARGO_TARGET_DIR")
    os.environ["CARGO_TARGET_DIR"] = target + "-gpu"
    try:
        make_bundle(layout_new, gpu / "device", candle_cuda="--candle-cuda" in bundle_args, echo=echo,
                    bins=folder_.root / "prebuilt-cuda")
    finally:
        if saved is None:
            os.environ.pop("CARGO_TARGET_DIR", None)
        else:
            os.environ["CARGO_TARGET_DIR"] = saved
    run = gpu / "run.sh"
    run.write_text(GPU_RUN_SH.format(name=folder_.name, platform=platform_key, commit=commit[:12],
                                     rel=f".capture/upgrade/{folder_.name}/gpu",
                                     only=" ".join(only) or "(all)", pins=", ".join(changed) or "none"), encoding="utf-8")
    run.chmod(0o755)
    return gpu


def _differs(a: Path, b: Path) -> bool:
    try:
        return a.read_bytes() != b.read_bytes()
    except OSError:
        return a.exists() != b.exists()


def import_fragments(layout_new: Layout, base_book_root: Path, source: Path, echo=print,
                     targets: dict[str, str] | None = None, since: str = "") -> dict[str, list[str]]:
    """Fragments captured elsewhere (the GPU machine's fragments.tar.gz, or a folder of platform folders) into the
    new worktree: only a book platform's, only from its own machine (platform.json's fingerprint), only the
    upgrade's own captures: an experiment role the upgrade touches (`targets`), fresh against the new worktree's
    inputs, and, for one whose inputs the pins do not change (it reads the pinned sources), captured after the upgrade
    began (`since`). The archive carries the whole fragment store of the checkout it ran in: the rest of it is the
    book's own fragments, which an import must not take for the upgrade's. Returns platform -> keys taken."""
    import tempfile

    from capture.evidence.book import Book

    with tempfile.TemporaryDirectory() as tmp:
        if source.is_file():
            with tarfile.open(source) as t:
                kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                t.extractall(tmp, **kw)
            src = Path(tmp)
        else:
            src = source
        if (src / "docs" / "_fragments").is_dir():
            src = src / "docs" / "_fragments"
        theirs = Store(src)
        book_new = Book(layout_new.root)
        known = set(Store(Layout(base_book_root).fragments).platforms())
        taken: dict[str, list[str]] = {}
        for plat in theirs.platforms():
            if plat not in known:
                echo(f"  {plat}: not a platform of the book; left out")
                continue
            want = identitymod.read(Layout(base_book_root).fragments, plat)
            keys = []
            for key in theirs.keys(plat):
                if targets is not None and key not in targets:
                    continue  # not touched by the pins: the checkout's own fragment, whatever its hash
                frag = theirs.read(plat, key)
                if frag is None or frag.corrupt or frag.torn:
                    continue
                if targets is not None and not targets[key].startswith("inputs changed") and \
                        str(frag.meta.get("started") or "") < since:
                    continue  # its inputs do not show the pins: only a capture made since the upgrade began counts
                host = fingerprint.of_fragment(frag.meta)
                if want is not None and want.fingerprint is not None and not fingerprint.same(host, want.host):
                    echo(f"  {plat}/{key}: captured on {fingerprint.describe(host)}, not on the platform's machine; left out")
                    continue
                try:
                    current, _ = book_new.current(FragmentKey.parse(key))
                except (OSError, ValueError, manifestmod.ManifestError):
                    continue
                if frag.inputs_hash != current:
                    continue  # captured from other inputs (the old pins, another commit): not the upgrade's
                Store(layout_new.fragments).write(plat, key, frag.text, frag.meta)
                keys.append(key)
            if keys:
                ident = identitymod.read(src, plat)
                if ident is not None:
                    identitymod.write(layout_new.fragments, ident)
            taken[plat] = keys
            echo(f"  {plat}: {len(keys)} fragments taken")
        return taken


# -- adopting --------------------------------------------------------------------------------------

def adoptable_files(folder_: Folder, book_platforms: set[str]) -> list[str]:
    """The files adoption copies: the pins, and the fragments of the book's platforms the new worktree changed."""
    out = []
    for line in git(folder_.new, "status", "--porcelain", "--untracked-files=all", "--", *PIN_FILES,
                    "docs/_fragments").splitlines():
        path = line[3:].strip().strip('"')
        if " -> " in path:
            path = path.split(" -> ", 1)[1]
        if path.startswith("docs/_fragments/"):
            plat = path.split("/")[2]
            if plat not in book_platforms or path.endswith((".lock",)) or ".failed." in path:
                continue
        out.append(path)
    return sorted(set(out))


def adopt(main: Layout, folder_: Folder, state: dict, echo=print) -> list[str]:
    """Copy the pins and re-captured fragments from the new worktree into the book's working tree, refusing a file
    the book changed since the upgrade began. The author commits them."""
    base = state["base"]
    plats = set(Store(Layout(folder_.base).fragments).platforms()) - {(state.get("host") or {}).get("scratch")}
    files = adoptable_files(folder_, plats)
    conflicts = []
    for rel in files:
        now = main.root / rel
        try:
            was = git(main.root, "show", f"{base}:{rel}", check=True)
        except UpgradeError:
            was = None
        have = now.read_text(encoding="utf-8") if now.is_file() else None
        if have != was:
            conflicts.append(rel)
    if conflicts:
        raise UpgradeError(f"the book changed {len(conflicts)} of the files the upgrade would replace since it began "
                           f"at {base[:12]}: {', '.join(conflicts[:8])}{' ...' if len(conflicts) > 8 else ''}; run the "
                           "upgrade again from the current commit")
    for rel in files:
        src, dst = folder_.new / rel, main.root / rel
        if src.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
        elif dst.exists():
            dst.unlink()
    return files


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def target_dir() -> Path:
    """Where the upgrade's cargo builds go: beside the book's shared target dir, never in it."""
    env = os.environ.get("CARGO_TARGET_DIR")
    return Path(env + "-upgrade") if env else cache_home() / "cargo-target-upgrade"
