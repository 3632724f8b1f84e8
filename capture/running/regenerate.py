"""Regenerate: plan what is stale for this platform, build once, run, capture into the store.

Nothing is lost when a run fails or is interrupted: a failure (a wrong exit, a timeout, output
past max_output, invalid records, a missing script or crate, Ctrl-C, SIGTERM, SIGHUP) is written
beside the last good fragment as <key>.failed.*, which stays as it was. Each process has its own
scratch folder (.capture/runs/<platform>/<pid>-<random>/), removed when every job succeeded.

A run may change nothing in the repository outside that folder (capture/running/repowatch.py): one that did
fails, naming the files, and the fragment store is put back as it was before the run. Every process a
run starts ends with it (capture/system/reaper.py). A job that fails in a way no rule foresaw fails alone:
the rest of the batch runs, and its traceback goes to a log in the scratch folder.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from capture.toolchains import build as buildmod
from capture.plan import caches
from capture.machines import fingerprint, hosts
from capture.plan import inputs as inputsmod
from capture.system import oserror, reaper
from capture.running import repowatch, sanitize
from capture.plan.manifest import Experiment, Manifest
from capture.storage.paths import Layout, PathError
from capture.machines.platform import Platform, exec_failure, load_average, machine_record
from capture.system.progress import Progress
from capture.storage.records import Parsed, read_file
from capture.machines.roles import cargo_features, resolve
from capture.system.runner import Interrupted, run, signals_deferred, signals_interrupt
from capture.storage.store import Fragment, Store, StoreUnusable
from capture.machines.versions import lock_versions, probe_python


@dataclass
class Job:
    exp: Experiment
    role: str
    device: str | None
    hash: str = ""
    inputs: dict = field(default_factory=dict)
    skip_reason: str = ""
    old: Fragment | None = None
    error: str = ""  # why it cannot run at all (a missing or escaping script/crate), naming the manifest line
    corrupt: str | None = None  # one of its files in the store (fragment, failure or skip record) is corrupt
    done: bool = False  # its outcome is settled (published or recorded as failed)

    @property
    def key(self) -> str:
        return self.exp.key(self.role)


@dataclass
class Outcome:
    key: str
    status: str  # fresh | ok | failed | skipped
    message: str = ""
    wall_s: float = 0.0
    old: Fragment | None = None
    new: Fragment | None = None


@dataclass
class Options:
    only: list[str] | None = None
    roles: list[str] | None = None
    force: bool = False
    python: str = sys.executable
    prebuilt: Path | None = None  # run binaries built elsewhere, skip cargo
    adopt: bool = False  # capture every fragment of the platform on this host, then replace it (capture/machines/hosts.py)
    yes: bool = False  # with adopt: delete the platform's fragments the manifest no longer names without asking
    ask: Callable[[str], bool] | None = None  # with adopt: a y/N question (a terminal); None: refuse unless `yes`
    # the reader's own machine (capture/commands/yours.py): how long the batch should take (progress lines say
    # what is left), and a host without cargo skips the Rust experiments with the reason (a skip record), not a
    # failed build for each
    estimate: object = None  # capture/system/progress.py Estimate
    skip_without_cargo: bool = False


def source_problem(exp: Experiment, layout: Layout, where: str) -> str:
    """Why the experiment's script or crate cannot be used (missing, or outside its root), or ''."""
    try:
        if exp.script:
            layout.script(exp.script)
        if exp.build_crate:
            layout.crate(exp.build_crate)
    except PathError as e:
        return f"{where}: {e}"
    return ""


def plan(layout: Layout, manifest: Manifest, platform: Platform, store: Store, opts: Options) -> list[Job]:
    prebuilt = buildmod.load_prebuilt(opts.prebuilt) if opts.prebuilt else None
    prebuilt_gpu, prebuilt_variants = (prebuilt.gpu_devices, prebuilt.gpu_variants) if prebuilt else (None, None)
    jobs = []
    for exp in manifest.select(opts.only):
        for role in exp.roles:
            if opts.roles and role not in opts.roles:
                continue
            res = resolve(platform, exp.framework, role, prebuilt_gpu, exp.gpu_device, prebuilt_variants)
            if exp.platforms and platform.os not in exp.platforms:
                res = type(res)(None, f"runs only on {', '.join(exp.platforms)}")
            elif "cargo" in exp.needs and shutil.which("cargo") is None:
                res = type(res)(None, "needs cargo (it reads the pinned crates' source from cargo's registry); none on PATH here")
            elif opts.skip_without_cargo and res.device and exp.build_crate and not opts.prebuilt and shutil.which("cargo") is None:
                res = type(res)(None, f"needs cargo to build its Rust program (crate {exp.build_crate}); none on PATH "
                                      "here: install Rust with rustup (https://rustup.rs) and run the command again")
            elif exp.features and (opts.prebuilt or shutil.which("cargo") is None):
                res = type(res)(None, f"needs cargo: its binary is built with features {', '.join(exp.features)} "
                                      "of its own, which prebuilt binaries do not carry")
            job = Job(exp, role, res.device, skip_reason=res.reason)
            if res.device:
                job.old = store.read(platform.key, job.key)
                job.corrupt = (job.old.corrupt if job.old is not None else None) or store.corrupt_beside(platform.key, job.key)
                job.error = source_problem(exp, layout, manifest.where(exp))
                if not job.error:
                    try:
                        job.inputs = inputsmod.inputs(exp, role, layout)
                    except (OSError, ValueError) as e:  # a source it reads is missing or unreadable
                        job.error = f"{manifest.where(exp)}: {e}"
                    else:
                        job.hash = inputsmod.digest(job.inputs)
            jobs.append(job)
    return jobs


def needs_run(job: Job, force: bool) -> bool:
    """Run when forced, never captured, torn, corrupt (any of its files), its inputs changed, or it was
    captured on another device than its role maps to here now (burn's NVIDIA GPU role: vulkan -> cuda)."""
    if not job.device:
        return False
    if bool(job.error or job.corrupt) or force or job.old is None or job.old.torn or job.old.inputs_hash != job.hash:
        return True
    return job.old.meta.get("device") not in (None, job.device)


def regenerate(layout: Layout, manifest: Manifest, platform: Platform, store: Store, opts: Options, out=sys.stderr) -> list[Outcome]:
    """Run what is stale (or everything, with force) and publish fragments. Returns one outcome per job.

    Refuses (hosts.HostMismatch, nothing written) when this host is not the platform's machine,
    unless opts.adopt.
    """
    why = store.folder_problems().get(platform.key)
    if why:  # a file, a link out of the store, an unreadable folder where the platform's folder goes
        raise StoreUnusable(why)
    here = fingerprint.of_machine(machine_record(platform))
    if opts.adopt:
        return _adopt(layout, manifest, platform, store, opts, here, out)
    hosts.guard(layout, store, platform.key, here, platform)
    with contextlib.suppress(PathError):
        store.repair(platform.key)  # a publish cut between its renames by a process now gone: the old pair back
    jobs = plan(layout, manifest, platform, store, opts)
    todo = [j for j in jobs if needs_run(j, opts.force)]
    outcomes: list[Outcome] = []
    progress = Progress(len(jobs), out, opts.estimate)
    for j in jobs:
        if not j.device:
            outcomes.append(Outcome(j.key, "skipped", j.skip_reason))
            # a GPU platform that cannot run this one says why, for the pages; so does the reader's machine
            if platform.has_gpu or (opts.skip_without_cargo and j.role != "gpu"):
                try:
                    store.write_skip(platform.key, j.key, j.skip_reason)
                except OSError as e:
                    raise StoreUnusable(oserror.explain(e, "the fragment store", store.root / platform.key)) from None
        elif j not in todo:
            outcomes.append(Outcome(j.key, "fresh", old=j.old))
    for o in outcomes:
        progress.line(o.key, o.status, o.message)
    if not todo:
        progress.summary(outcomes)
        return outcomes

    context = _Context(layout, platform, opts, manifest)
    with store.lock(), signals_interrupt():
        try:
            _write_identity(store, context)
        except OSError as e:
            raise StoreUnusable(oserror.explain(e, "the fragment store", store.root / platform.key)) from None
        try:
            for job in todo:
                progress.start(job.key, job.device)
                try:
                    outcome = _run_job(job, context, store, progress)
                except KeyboardInterrupt as e:
                    how = f"{e.args[0]}" if isinstance(e, Interrupted) else "Ctrl-C"
                    if not job.done:
                        _record_failure(store, job, context, f"interrupted ({how}); the last good fragment is unchanged\n",
                                        None, False, 0.0)
                    progress.line(job.key, "failed", f"interrupted ({how})")
                    raise
                except OSError as e:  # the store or the scratch folder cannot take it (read-only, full...): this job only
                    outcome = Outcome(job.key, "failed", _os_failure(e, context, store), old=job.old)
                except Exception as e:  # noqa: BLE001 -- an input no rule foresaw, or a bug: this job fails, the rest run
                    outcome = _internal_error(job, context, store, e)
                job.done = True
                outcomes.append(outcome)
                progress.line(job.key, outcome.status, outcome.message, outcome.wall_s)
        finally:
            context.close(clean=all(o.status != "failed" for o in outcomes) and all(j.done for j in todo))
    progress.summary(outcomes)
    return outcomes


def _adopt(layout: Layout, manifest: Manifest, platform: Platform, store: Store, opts: Options, here: dict, out) -> list[Outcome]:
    """Capture every fragment this host can make into a staging store; replace the platform only when all are in."""
    if opts.only or opts.roles:
        raise hosts.HostMismatch("--adopt captures every fragment of the platform: leave out --only and --device")
    stage = hosts.staging(layout, platform.key)
    hosts.refuse_losing(layout, store, platform.key, platform, here)  # before anything runs
    hosts.guard(layout, stage, platform.key, here)  # a staged adoption begun by another host
    wanted = {f"{e.id}@{r}" for e in manifest.experiments for r in e.roles}
    gone = hosts.dropped(store, stage, platform.key, wanted)
    hosts.confirm_dropping(layout, store, platform.key, gone, opts.yes, opts.ask, out)  # before anything runs
    with store.lock():
        print(f"adopting {platform.key} on this host ({fingerprint.describe(here)}): every fragment is captured into "
              f"{layout.rel(stage.root)} first", file=out)
        outcomes = regenerate(layout, manifest, platform, stage, replace(opts, adopt=False), out)
        missing = set(hosts.not_captured(store, stage, platform.key))  # skipped or n/a here: not captured either
        why = {o.key: f"{o.key} (not captured here: {o.status}: {o.message or 'no fragment'})" for o in outcomes
               if o.key in missing and o.status != "failed"}
        outcomes = [replace(o, status="failed", message=why[o.key]) if o.key in why else o for o in outcomes]
        failed = [o.key for o in outcomes if o.status == "failed"]
        if failed:
            shown = [why.get(k, k) for k in failed[:8]]
            print(f"adoption not finished: {len(failed)} failed ({', '.join(shown)}{' ...' if len(failed) > 8 else ''}); "
                  f"{layout.rel(store.root / platform.key)} is unchanged. Fix them and run the same command again: "
                  f"the fragments captured so far are kept in {layout.rel(stage.root)}", file=out)
            return outcomes
        hosts.swap(layout, store, platform.key)
    print(f"adopted: {layout.rel(store.root / platform.key)} now holds {len(store.keys(platform.key))} fragments "
          f"captured on this host, and its platform.json names this host"
          + (f"; deleted {len(gone)} that no experiment names: {hosts.listed(gone)}" if gone else ""), file=out)
    return outcomes


def _os_failure(e: OSError, ctx: "_Context", store: Store) -> str:
    """Which folder refused (the scratch folder or the fragment store), its path, and the fix."""
    where = oserror.path_of(e, store.root / ctx.platform.key)
    scratch = str(ctx.layout.scratch)
    if where == scratch or where.startswith(scratch + os.sep):
        return oserror.explain(e, "the scratch folder", ctx.layout.scratch)
    return oserror.explain(e, "the fragment store", store.root / ctx.platform.key)


def _internal_error(job: Job, ctx: "_Context", store: Store, e: Exception) -> Outcome:
    """A job that raised what no rule foresaw fails alone: its traceback goes to a log, a failure record says where."""
    import traceback

    where = "(no log: the scratch folder cannot be written)"
    try:
        log = ctx.run_dir / f"{job.key}.error.log"
        log.write_text("".join(traceback.format_exception(e)), encoding="utf-8")
        where = ctx.layout.rel(log)
    except OSError:
        pass
    msg = (f"internal error while capturing {job.key} ({ctx.manifest.where(job.exp)}): {type(e).__name__}: {e}; "
           f"the traceback is in {where}; please report it with that file")
    try:
        _record_failure(store, job, ctx, msg + "\n", None, False, 0.0)
    except Exception:  # noqa: BLE001 -- the outcome still says it
        pass
    return Outcome(job.key, "failed", msg, old=job.old)


class _Context:
    """What all jobs of one regenerate share, computed lazily (a no-op regenerate computes none of it)."""

    def __init__(self, layout: Layout, platform: Platform, opts: Options, manifest: Manifest):
        self.layout, self.platform, self.opts, self.manifest = layout, platform, opts, manifest
        self._machine = None
        self._python = {}
        self._binaries = None
        self._build_error = None
        self._feature_builds: dict = {}  # (crate, features) -> Binaries | BuildError
        self._run_dir: Path | None = None
        # this invocation's run: its fragments were captured in one sitting (capture/evidence/runs.py)
        self.run_id = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]

    def own_store(self, store: Store) -> bool:
        """Whether `store` (this regenerate holds its lock) is the repository's fragment store."""
        try:
            return store.root.resolve() == self.layout.fragments.resolve()
        except OSError:
            return False

    @property
    def run_dir(self) -> Path:
        """This process's own scratch folder (never shared with another regenerate or check)."""
        if self._run_dir is None:
            self._run_dir = self.layout.run_dir(self.platform.key)
        return self._run_dir

    def close(self, clean: bool) -> None:
        """After a run where everything succeeded, remove its scratch folder, and those that earlier runs,
        now dead, kept for their logs; keep this one (its logs) otherwise."""
        if clean and self._run_dir is not None:
            shutil.rmtree(self._run_dir, ignore_errors=True)
            for old in self._run_dir.parent.iterdir():
                pid = old.name.split("-", 1)[0]
                if old.is_dir() and pid.isdigit() and not reaper.alive(int(pid)):
                    shutil.rmtree(old, ignore_errors=True)


    @property
    def machine(self) -> dict:
        if self._machine is None:
            self._machine = machine_record(self.platform)
        return self._machine

    @property
    def host(self) -> dict:
        return fingerprint.of_machine(self.machine)

    def python(self, torch: bool) -> dict:
        if torch not in self._python:
            self._python[torch] = probe_python(self.opts.python, torch)
        return self._python[torch]

    def binaries(self, progress: Progress):
        if self._binaries is None and self._build_error is None:
            if self.opts.prebuilt:
                self._binaries = buildmod.load_prebuilt(self.opts.prebuilt)
            else:
                crates = {e.build_crate: e.framework for e in self.manifest.experiments
                          if e.build_crate and not source_problem(e, self.layout, "")}
                feats = cargo_features(self.platform, crates, self.layout.crates)
                progress.note(f"building Rust experiments: cargo build --release --workspace {' '.join('--features ' + f for f in feats)}")
                began = time.monotonic()
                try:
                    self._binaries = buildmod.cargo_build(
                        self.layout, feats, self.run_dir / "cargo-build.log", echo=progress.tick
                    )
                    progress.note(f"built in {time.monotonic() - began:.0f} s")
                except buildmod.BuildError as e:
                    self._build_error = e
        if self._build_error:
            raise self._build_error
        return self._binaries


    def feature_binaries(self, exp: Experiment, progress: Progress):
        """The binaries of `exp.crate` built with the experiment's own `features` (one build per set)."""
        key = (exp.crate, exp.features)
        if key not in self._feature_builds:
            feats = cargo_features(self.platform, {exp.crate: exp.framework}, self.layout.crates)
            progress.note(f"building {exp.crate} with features {', '.join(exp.features)} for {exp.id}")
            try:
                self._feature_builds[key] = buildmod.feature_build(
                    self.layout, exp.crate, feats, exp.features,
                    self.run_dir / f"cargo-build-{exp.crate}+{'+'.join(exp.features)}.log", echo=progress.tick)
            except buildmod.BuildError as e:
                self._feature_builds[key] = e
        got = self._feature_builds[key]
        if isinstance(got, buildmod.BuildError):
            raise got
        return got


def _write_identity(store: Store, ctx: "_Context") -> None:
    """platform.json beside this platform's fragments: what pages and status know of this machine."""
    from capture.machines import identity

    prebuilt = None
    if ctx.opts.prebuilt:
        b = buildmod.load_prebuilt(ctx.opts.prebuilt)
        prebuilt = {"gpu_devices": b.gpu_devices, "features": b.features}
    identity.write(store.root, identity.of_machine(ctx.platform, ctx.machine, prebuilt))


def _command(job: Job, ctx: _Context, progress: Progress) -> tuple[list[str], dict]:
    exp = job.exp
    args = [a.replace("{device}", job.device) for a in exp.args[job.role]]
    if exp.script:
        versions = {"python": ctx.python(exp.framework == "torch")}
        if exp.runs:  # the script runs an experiment binary: the path goes in for {binary}
            bins = ctx.binaries(progress)
            exe = bins.path(exp.binary)
            if not exe.is_file():
                raise buildmod.BuildError(f"binary {exe} not found (crate {exp.runs}, which {exp.id} runs)", "")
            args = [a.replace("{binary}", str(exe)) for a in args]
            versions["build"] = bins.record()
        return [ctx.opts.python, str(ctx.layout.script(exp.script)), *args], versions
    bins = ctx.feature_binaries(exp, progress) if exp.features else ctx.binaries(progress)
    exe = bins.path(exp.binary)
    if not exe.is_file():
        raise buildmod.BuildError(f"binary {exe} not found (crate {exp.crate}, bin {exp.binary})", "")
    return [str(exe), *args], {"build": bins.record()}


def _run_job(job: Job, ctx: _Context, store: Store, progress: Progress) -> Outcome:
    exp = job.exp
    if job.error:
        _record_failure(store, job, ctx, job.error + "\n", None, False, 0.0)
        return Outcome(job.key, "failed", job.error, old=job.old)
    try:
        cmd, versions = _command(job, ctx, progress)
    except buildmod.BuildError as e:
        _record_failure(store, job, ctx, f"{e}\n\n{e.log[-4000:]}", None, False, 0.0)
        return Outcome(job.key, "failed", str(e).splitlines()[0], old=job.old)
    except PathError as e:  # the script changed under us since the plan
        msg = f"{ctx.manifest.where(exp)}: {e}"
        _record_failure(store, job, ctx, msg + "\n", None, False, 0.0)
        return Outcome(job.key, "failed", msg, old=job.old)
    py = versions.get("python", {})
    if exp.script and ("torch_error" in py or "python_error" in py):
        msg = py.get("python_error") or py.get("torch_error")
        _record_failure(store, job, ctx, f"cannot run Python snippets: {msg}\n", None, False, 0.0)
        return Outcome(job.key, "failed", msg, old=job.old)
    if exp.framework == "torch" and job.role == "gpu" and py.get("accelerator") is None:
        return Outcome(job.key, "skipped", f"torch in {ctx.opts.python} sees no accelerator")

    scratch = ctx.run_dir
    env = {
        **os.environ,
        **exp.env,
        "BOOK_ROLE": job.role,
        "BOOK_DEVICE": job.device,
        "BOOK_PLATFORM": ctx.platform.key,
        "PYTHONUNBUFFERED": "1",
        "PYTHONIOENCODING": "utf-8",  # the output is read as UTF-8, whatever this terminal's encoding is
        "PYTHONHASHSEED": "0",
        "RUST_BACKTRACE": "0",
    }
    started = dt.datetime.now(dt.timezone.utc)
    load_before = load_average()
    expect = exp.expect[job.role]
    watched = repowatch.take(ctx.layout, own_lock=ctx.own_store(store))
    try:
        result, parsed, rec_bytes, files = _run_processes(job, ctx, cmd, env, expect, scratch)
    except OSError as e:  # the program could not start: wrong binary format (ENOEXEC), not executable, missing
        _record_failure(store, job, ctx, exec_failure(cmd[0], e) + "\n", None, False, 0.0)
        return Outcome(job.key, "failed", exec_failure(cmd[0], e), old=job.old)
    damage = _damage(ctx.layout, watched)
    load_after = load_average()
    meta = {
        "experiment": exp.id,
        "role": job.role,
        "device": job.device,
        "framework": exp.framework,
        "platform": ctx.platform.key,
        "inputs_hash": job.hash,
        "inputs": job.inputs,
        "command": [_display_path(c, ctx.layout) for c in cmd],
        "expected": str(expect),
        "exit_status": result.exit_status,
        "timed_out": result.timed_out,
        "outcome": "timeout" if result.timed_out else f"exit {result.exit_status}",
        "started": started.isoformat(timespec="seconds"),
        "run": ctx.run_id,
        "wall_s": round(result.wall_s, 3),
        "timeout_s": exp.timeout,
        "load_before": load_before,
        "load_after": load_after,
        "machine": ctx.machine,
        "host": ctx.host,
        "versions": {**_version_record(ctx, exp, versions)},
        "records": sanitize.records(parsed.records, sanitize.here(ctx.layout.root)),
    }
    if exp.processes > 1:
        meta["processes"] = exp.processes
    if exp.caches:
        meta["caches"] = exp.caches
    failure = damage or _scratch_full(ctx, scratch, expect, result) or \
        _failure(exp, job, ctx, expect, result, meta["outcome"], parsed.errors, rec_bytes)
    if not failure:
        with signals_deferred():
            store.write(ctx.platform.key, job.key, result.text, meta)
            job.done = True
        for f in files:
            f.unlink(missing_ok=True)
        return Outcome(job.key, "ok", meta["outcome"], result.wall_s, job.old, store.read(ctx.platform.key, job.key))
    meta["failure"] = failure.splitlines()[0]
    if parsed.errors:
        meta["record_errors"] = parsed.errors[:50]
    with signals_deferred():
        store.write_failure(ctx.platform.key, job.key, result.text, meta)
        job.done = True
    tail = "\n".join(result.text.rstrip().splitlines()[-8:])
    hint = "".join(f"\nhint: {h}" for h in failure_hints(result.text))
    return Outcome(
        job.key,
        "failed",
        f"{failure}; output kept in "
        f"{ctx.layout.rel(store.root / ctx.platform.key / (job.key + '.failed.txt'))}\n{tail}{hint}",
        result.wall_s,
        job.old,
    )


def _run_processes(job: Job, ctx: _Context, cmd: list[str], env: dict, expect, scratch: Path):
    """Run the command exp.processes times, each a fresh process, stopping at the first that fails.

    One process: its output and records as they are. Several: the outputs one after another, each
    under a `[process k/N]` line, and every record tagged process=k. Returns the combined result,
    the parsed records, the largest records file (bytes) and the scratch files to remove on success.
    """
    exp = job.exp
    n = exp.processes
    texts, records, errors, files = [], [], [], []
    wall, rec_bytes, result = 0.0, 0, None
    cache_dir = scratch / f"{job.key}.caches"
    if exp.caches == "warm":  # one unrecorded run fills the caches the recorded ones then find
        env = caches.apply(env, caches.fresh(cache_dir))
        log = scratch / f"{job.key}.warmup.log"
        files.append(log)
        warm = run(cmd, cwd=ctx.layout.root, env={**env, "BOOK_RECORDS": str(scratch / f"{job.key}.warmup.jsonl")},
                   timeout=exp.timeout, log=log, max_output=exp.max_output)
        files.append(scratch / f"{job.key}.warmup.jsonl")
        if not expect.met_by(warm.exit_status, warm.timed_out):
            text = sanitize.text(warm.text, sanitize.here(ctx.layout.root))
            return replace(warm, text=f"[warm-up run, caches = \"warm\"]\n{text}"), Parsed([], []), 0, files
    for k in range(1, n + 1):
        stem = job.key if n == 1 else f"{job.key}.p{k}"
        rec_file, log = scratch / f"{stem}.records.jsonl", scratch / f"{stem}.log"
        rec_file.unlink(missing_ok=True)
        files += [rec_file, log]
        if exp.caches == "cold":
            env = caches.apply(env, caches.fresh(cache_dir))
        result = run(cmd, cwd=ctx.layout.root, env={**env, "BOOK_RECORDS": str(rec_file)}, timeout=exp.timeout,
                     log=log, max_output=exp.max_output)
        text = sanitize.text(result.text, sanitize.here(ctx.layout.root))  # no personal paths
        texts.append(text if n == 1 else f"[process {k}/{n}]\n{text}")
        parsed = read_file(rec_file)
        rec_bytes = max(rec_bytes, rec_file.stat().st_size if rec_file.is_file() else 0)
        wall += result.wall_s
        if n > 1:
            for r in parsed.records:
                r.setdefault("tags", {})["process"] = str(k)
            parsed.errors[:] = [f"process {k}: {e}" for e in parsed.errors]
        records += parsed.records
        errors += parsed.errors
        if result.over_cap or parsed.errors or not expect.met_by(result.exit_status, result.timed_out):
            break
    assert result is not None
    if exp.caches:
        shutil.rmtree(cache_dir, ignore_errors=True)
    combined = replace(result, text="".join(t if t.endswith("\n") or not t else t + "\n" for t in texts) if n > 1 else texts[0],
                       wall_s=wall)
    return combined, Parsed(records, errors), rec_bytes, files


def _damage(layout: Layout, watched: repowatch.Snapshot) -> str:
    """Why a run may not be published because it changed the repository ('' when it did not); the fragment
    store is put back as it was before the run."""
    files, store_files = repowatch.changes(layout, watched)
    if not files and not store_files:
        return ""
    lost = repowatch.restore(layout, watched, store_files)
    shown = [f"{f} (restored)" if f not in lost else f"{f} (NOT restored)" for f in store_files] + files
    more = f" and {len(shown) - 20} more" if len(shown) > 20 else ""
    them = "the others" if store_files else "them"
    fix = f"; restore {them} with `git checkout -- {' '.join(files[:20])}` (or remove them if new)" if files else ""
    return (f"the run changed files outside its scratch folder: {', '.join(shown[:20])}{more}. A run may write only "
            f"in its scratch folder (the folder of BOOK_RECORDS){fix}; if you changed them yourself meanwhile, rerun")


def _scratch_full(ctx: _Context, scratch: Path, expect, result) -> str:
    """A run that failed because its scratch folder's disk is full says so (its output there may be empty)."""
    if expect.met_by(result.exit_status, result.timed_out) and not result.over_cap:
        return ""
    if not oserror.full(scratch):
        return ""
    return (f"the scratch folder {ctx.layout.rel(scratch)} is full (no space left on device): the run could not write "
            f"its output or records there ({result.output_bytes} bytes kept); free space on that disk, then run the command again")


def _failure(exp: Experiment, job: Job, ctx: _Context, expect, result, outcome: str, record_errors: list[str], rec_bytes: int) -> str:
    """Why this run may not be published ('' when it may): output past its cap, invalid records, a wrong ending."""
    where = ctx.manifest.where(exp)
    if result.over_cap:
        return (f"output passed max_output ({result.output_bytes} > {exp.max_output} bytes); kept truncated, not published. "
                f"If that much output is intended, raise max_output at {where}")
    if rec_bytes > exp.max_output:
        return (f"records file passed max_output ({rec_bytes} > {exp.max_output} bytes); not published. "
                f"If that many records are intended, raise max_output at {where}")
    if record_errors:
        shown = "; ".join(record_errors[:5]) + (f"; and {len(record_errors) - 5} more" if len(record_errors) > 5 else "")
        return f"invalid records (BOOK_RECORDS file): {shown}; fix what the snippet records"
    if not expect.met_by(result.exit_status, result.timed_out):
        return f"expected {expect}, got {outcome}"
    return ""


# Failures whose fix is a setting of the machine, not of the book (see docs/dev/platforms.md).
_HINTS = [
    ("Unable to dynamically load the", "the CUDA libraries (cuBLAS, cuRAND, NVRTC) are not on LD_LIBRARY_PATH; "
     "on a machine with torch+cu13 add its site-packages/nvidia/cu13/lib (docs/dev/platforms.md, Linux + NVIDIA GPU)"),
    ("AdapterUnavailable", "no Vulkan adapter: install the Vulkan loader and point VK_DRIVER_FILES at the driver's "
     "ICD json (docs/dev/platforms.md, Linux + NVIDIA GPU)"),
]


def failure_hints(text: str) -> list[str]:
    return [hint for needle, hint in _HINTS if needle in text]


def _version_record(ctx: _Context, exp: Experiment, versions: dict) -> dict:
    out = {}
    if "python" in versions:
        py = versions["python"]
        out.update({k: py.get(k) for k in ("python", "torch", "threads") if k in py})
        if exp.framework == "torch":
            pin = inputsmod.torch_pin(ctx.layout)
            out["torch_pin"] = pin
            out["torch_matches_pin"] = (py.get("torch") or "").split("+")[0] == pin
    if "build" in versions:
        out["rust_build"] = versions["build"]
        out.update(lock_versions(ctx.layout.crates / "Cargo.lock"))
    return out


def _display_path(arg: str, layout: Layout) -> str:
    p = Path(arg)
    if p.is_absolute() and p.exists():
        rel = layout.rel(p)
        return rel if not rel.startswith("/") else p.name
    return arg


def _record_failure(store: Store, job: Job, ctx: _Context, text: str, exit_status, timed_out: bool, wall: float) -> None:
    text = sanitize.text(text, sanitize.here(ctx.layout.root))
    meta = {
        "experiment": job.exp.id,
        "role": job.role,
        "device": job.device,
        "platform": ctx.platform.key,
        "inputs_hash": job.hash,
        "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "failure": text.splitlines()[0] if text else "failed",
        "exit_status": exit_status,
        "timed_out": timed_out,
        "wall_s": wall,
    }
    with signals_deferred():
        store.write_failure(ctx.platform.key, job.key, text, meta)
        job.done = True
