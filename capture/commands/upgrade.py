"""Upgrade a pinned framework: try it in a scratch worktree, report what it changes, adopt it when the pages hold.

    python -m capture upgrade candle-core 0.11.1 [NAME VERSION ...] [--only ID ...] [--no-bundle]
    python -m capture upgrade --import candle-core-0.11.1 fragments.tar.gz   (what the GPU machine captured)
    python -m capture upgrade --report candle-core-0.11.1                    (the report again)
    python -m capture upgrade --adopt candle-core-0.11.1                     (pins and fragments into the book)
    python -m capture upgrade --drop candle-core-0.11.1                      (remove its worktrees)
    nox -s upgrade -- candle-core 0.11.1

The work is in capture/running/upgrade.py (worktrees, pins, builds, captures) and capture/running/changes.py
(what changed); this module runs the steps with a progress line, and writes the report twice: a page for the
author, docs/dev/upgrades/<name>.md (Chinese, reached from docs/dev/upgrades.md), and a summary for the terminal.
Nothing else in the book's working tree changes until --adopt.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from capture.evidence.book import Book
from capture.evidence.fmt import fmt_value
from capture.evidence.query import Value, parse_refs
from capture.machines import fingerprint
from capture.machines.platform import Platform, detect, machine_record
from capture.plan import manifest as manifestmod
from capture.running import changes
from capture.running import upgrade as up
from capture.storage.keys import FragmentKey
from capture.storage.paths import Layout, find_root
from capture.system.progress import Progress

PAGES = Path("docs") / "dev" / "upgrades"


class Steps:
    """`upgrade [k/N] what` on stderr, one line a step: the progress of a long upgrade."""

    def __init__(self, total: int, out):
        self.total, self.k, self.out, self.t0 = total, 0, out, time.monotonic()

    def step(self, text: str) -> None:
        self.k += 1
        print(f"upgrade [{self.k}/{self.total}] {text}  ({time.monotonic() - self.t0:.0f} s)", file=self.out, flush=True)

    def note(self, text: str) -> None:
        print(f"      {text}", file=self.out, flush=True)


def _env_target(path: Path):
    """CARGO_TARGET_DIR for one side's builds (each side its own: both build the same binary names)."""
    class _Ctx:
        def __enter__(self):
            self.saved = os.environ.get("CARGO_TARGET_DIR")
            os.environ["CARGO_TARGET_DIR"] = str(path)

        def __exit__(self, *exc):
            if self.saved is None:
                os.environ.pop("CARGO_TARGET_DIR", None)
            else:
                os.environ["CARGO_TARGET_DIR"] = self.saved
    return _Ctx()


def start(layout: Layout, bumps: list[up.Bump], platform: Platform, only: list[str] | None = None,
          python: str | None = None, new_python: str | None = None, bundle: bool = True, again: bool = False,
          page: Path | None = None, out=sys.stderr, check_gpu: bool = False) -> dict:
    """Run an upgrade end to end (see the module doc); returns the report (also written to report.json and the page)."""
    name = up.upgrade_name(bumps)
    folder = up.folder(layout, name)
    steps = Steps(7, out)
    commit = up.head(layout.root)
    state = folder.state()
    wanted = [[b.package, b.version] for b in bumps]
    if state and state.get("bumps") != wanted:
        steps.note(f"{folder.root} holds another upgrade; starting again from {commit[:12]}")
        drop(layout, folder)
        state = {}
    elif state and state.get("base") != commit:  # the book moved on: go on from where the upgrade began
        steps.note(f"going on with the upgrade begun at {str(state['base'])[:12]} (the book is at {commit[:12]} now; "
                   f"--drop {name} to start again from it)")
        commit = state["base"]
    if again:
        state = {k: v for k, v in state.items() if k in ("base", "bumps", "started", "old", "pinned", "kinds")}
    folder.root.mkdir(parents=True, exist_ok=True)
    folder.logs.mkdir(parents=True, exist_ok=True)
    state.update({"base": commit, "bumps": wanted, "started": state.get("started") or up.now_iso()})
    folder.save(state)

    steps.step(f"worktrees at {commit[:12]}: {layout.rel(folder.base)} (old pins), {layout.rel(folder.new)} (new)")
    up.worktree(layout.root, folder.base, commit)
    if not state.get("pinned"):
        up.worktree(layout.root, folder.new, commit)
    base, new = Layout(folder.base), Layout(folder.new)

    steps.step("pins: " + ", ".join(str(b) for b in bumps))
    if not state.get("pinned"):
        try:
            state["old"] = up.pin(new.root, bumps, folder.logs / "pins.log", echo=steps.note)
        except up.UpgradeError as e:
            state["pin_error"] = str(e)
            folder.save(state)
            report = make_report(layout, folder, state)
            _write(layout, folder, report, page, out)
            return report
        state["kinds"] = {b.package: up.kind_of(base.root, b) for b in bumps}
        state["pinned"] = True
        state.pop("pin_error", None)
        folder.save(state)
    locks = up.lock_changes(base.root, new.root)
    for kind, pkgs in locks.items():
        steps.note(f"{kind} lock: {len(pkgs)} package(s) changed: " + ", ".join(
            f"{p} {'/'.join(a) or '-'} -> {'/'.join(b) or '-'}" for p, (a, b) in list(pkgs.items())[:8])
            + (" ..." if len(pkgs) > 8 else ""))

    steps.step("what the new pins touch")
    touched = up.targets(base, new, only)
    state["targets"] = touched
    steps.note(f"{len(touched)} experiment roles: " + ", ".join(sorted(touched)[:12]) + (" ..." if len(touched) > 12 else ""))
    own = up.own_platform(base, platform)
    here = fingerprint.of_machine(machine_record(platform))
    known = (state.get("host") or {}).get("scratch")  # a run going on: the key its captures already use
    state["host"] = {"describe": fingerprint.describe(here), "platform": platform.key, "own": own}
    scratch = None if own else replace(platform, key=known) if known else up.scratch_platform(base, platform)
    state["host"]["scratch"] = scratch.key if scratch else None
    folder.save(state)
    target = up.target_dir()
    python_old = python or sys.executable
    python_new = up.python_for(folder, new.root, any(k == "python" for k in state.get("kinds", {}).values()),
                               new_python, folder.logs / "python.log", echo=steps.note)

    steps.step(f"build with the new pins (CARGO_TARGET_DIR={target})")
    rust = any(FragmentKey.parse(k).exp in _rust_ids(new) for k in touched)
    if rust and "build" not in state:
        with _env_target(target):
            live = Progress(1, out)
            live.start("cargo build", "new pins")
            report = up.build(new, platform, folder.logs / "cargo-build-new.log", echo=live.tick, note=steps.note)
            live.line("cargo build (new pins)", "ok" if report.ok else "failed",
                      "" if report.ok else f"{len(report.errors)} errors; left out: {', '.join(report.dropped) or 'none'}",
                      report.seconds)
        state["build"] = report.to_json()
        folder.save(state)
    if check_gpu and rust and "gpu_check" not in state:
        with _env_target(Path(str(target) + "-gpu")):
            live = Progress(1, out)
            live.start("cargo check", "GPU features")
            checked = up.gpu_check(new, folder.logs / "cargo-check-gpu.log", echo=live.tick, note=steps.note)
            live.line("cargo check (GPU features, new pins)", "ok" if checked.ok else "failed",
                      "" if checked.ok else f"{len(checked.errors)} errors", checked.seconds)
        state["gpu_check"] = checked.to_json()
        folder.save(state)
    build = up.BuildReport.from_json(state.get("build", {}))
    unbuilt = {e.id for e in manifestmod.load(new.manifest).experiments
               if (e.build_crate in build.dropped) or (e.runs and e.runs in build.dropped)}
    runnable = sorted(k for k in touched if FragmentKey.parse(k).exp not in unbuilt)

    steps.step("capture " + ("here, on this platform's own machine" if own else
                             f"here, both pins (this host is not the machine of {platform.key}: {scratch.key})"))
    if own:
        if "captured_new" not in state:
            with _env_target(target):
                outcomes = up.capture_side(new, platform, runnable, python_new, out)
            state["captured_new"] = {o.key: [o.status, o.message[:300]] for o in outcomes}
            folder.save(state)
    else:
        for side, lay, py, tgt in (("base", base, python_old, Path(str(target) + "-base")),
                                   ("new", new, python_new, target)):
            if f"captured_{side}" in state:
                continue
            steps.note(f"{side}: {layout.rel(lay.root)} ({len(runnable)} experiment roles)")
            with _env_target(tgt):
                outcomes = up.capture_side(lay, scratch, runnable, py, out)
            state[f"captured_{side}"] = {o.key: [o.status, o.message[:300]] for o in outcomes}
            folder.save(state)

    steps.step("the GPU machine's part")
    state["bundle"] = gpu_part(layout, folder, state, platform, own, runnable, bundle, steps)
    folder.save(state)

    steps.step("report")
    state["finished"] = up.now_iso()
    folder.save(state)
    report = make_report(layout, folder, state)
    _write(layout, folder, report, page, out)
    return report


def _rust_ids(layout: Layout) -> set[str]:
    return {e.id for e in manifestmod.load(layout.manifest).experiments if e.build_crate}


def gpu_part(layout: Layout, folder: up.Folder, state: dict, platform: Platform, own: bool, runnable: list[str],
             bundle: bool, steps: Steps) -> dict:
    """For each book platform that cannot build (route "bundle") and is not this host: what to run there; the bundle
    itself when asked for and cargo is here."""
    base_book = Book(folder.base)
    out = {}
    for plat in base_book.platforms():
        if plat == (state.get("host") or {}).get("scratch"):
            continue
        ident = base_book.identity(plat)
        if ident.route != "bundle" or (own and plat == platform.key):
            continue
        keys = [k for k in state.get("targets", {}) if base_book.fragment(plat, FragmentKey.parse(k)) is not None]
        if not keys:
            continue
        only = sorted({FragmentKey.parse(k).exp for k in keys})
        entry = {"platform": plat, "keys": keys, "folder": f".capture/upgrade/{folder.name}/gpu",
                 "command": f"bash .capture/upgrade/{folder.name}/gpu/run.sh",
                 "import": f"python -m capture upgrade --import {folder.name} fragments.tar.gz"}
        prior = state.get("bundle", {}).get(plat, {})
        if prior.get("built"):
            out[plat] = {**entry, **{k: prior[k] for k in ("built", "bytes") if k in prior}}
            continue
        if not bundle:
            entry["skipped"] = "--no-bundle"
        elif shutil.which("cargo") is None:
            entry["skipped"] = "no cargo here"
        else:
            steps.note(f"{plat}: bundle from the new worktree ({' '.join(ident.bundle.get('args', []))}); a long build")
            live = Progress(1, steps.out)
            live.start("bundle", plat)

            def echo(text: str) -> None:  # cargo's lines on the live line only; the bundle's own notes as lines
                if text.lstrip().startswith(("Compiling", "Downloaded", "Downloading", "Fresh", "Checking", "Building",
                                             "Running", "Finished", "Updating", "Locking", "warning")):
                    live.tick(text)
                else:
                    live.note(text)
            try:
                up.prepare_gpu(Layout(folder.new), folder, plat, only, state["base"], ident.bundle.get("args", []),
                               echo=echo)
                entry["built"] = up.now_iso()
                entry["bytes"] = sum(p.stat().st_size for p in folder.gpu.rglob("*") if p.is_file())
            except (Exception, SystemExit) as e:  # noqa: BLE001 -- the report says why; the rest stands
                entry["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:600]
            live.line(f"bundle for {plat}", "failed" if entry.get("error") else "ok", entry.get("error", ""))
        out[plat] = entry
    return out


def drop(layout: Layout, folder: up.Folder) -> None:
    for wt in (folder.base, folder.new):
        if wt.exists():
            up.drop_worktree(layout.root, wt)
    shutil.rmtree(folder.root, ignore_errors=True)


# -- the report ------------------------------------------------------------------------------------

def make_report(layout: Layout, folder: up.Folder, state: dict) -> dict:
    """The report, from what the two worktrees hold now (so --import and --report only re-read)."""
    bumps = [up.Bump(p, v) for p, v in state.get("bumps", [])]
    report = {
        "name": folder.name,
        "bumps": [{"package": b.package, "version": b.version, "old": (state.get("old") or {}).get(b.package, ""),
                   "kind": (state.get("kinds") or {}).get(b.package, "")} for b in bumps],
        "base": state.get("base", ""),
        "started": state.get("started", ""),
        "finished": state.get("finished", ""),
        "worktree": f".capture/upgrade/{folder.name}/new",
        "host": state.get("host", {}),
        "pin_error": state.get("pin_error", ""),
        "locks": {},
        "targets": state.get("targets", {}),
        "build": state.get("build", {"ok": True}),
        "gpu_check": state.get("gpu_check"),
        "captured": {s: state.get(f"captured_{s}", {}) for s in ("base", "new")},
        "comparisons": [],
        "pending": {},
        "bundle": state.get("bundle", {}),
        "notes": state.get("notes", []),
    }
    if state.get("pin_error") or not folder.new.is_dir():
        report["blockers"] = [f"the pins could not be changed: {state.get('pin_error') or 'no worktree'}"]
        report["adoptable"] = False
        return report
    base, new = Layout(folder.base), Layout(folder.new)
    report["locks"] = up.lock_changes(base.root, new.root)
    old_book, new_book = Book(base.root), Book(new.root)
    package = bumps[0].package if bumps else ""
    bumped = {framework_of(b.package) for b in bumps}
    keys = sorted(state.get("targets", {}))
    old_v = ", ".join(f"{b['package']} {b['old']}" for b in report["bumps"])
    new_v = ", ".join(f"{b['package']} {b['version']}" for b in report["bumps"])
    host = state.get("host", {})
    book_platforms = [p for p in old_book.platforms() if p != host.get("scratch")]
    # the book's platforms whose fragments the new worktree holds captured again (here, or imported)
    for plat in book_platforms:
        recaptured = [k for k in keys if _recaptured(old_book, new_book, plat, k)]
        if not recaptured:
            continue
        how = "re-captured on the platform's own machine" + (" (this host)" if plat == host.get("platform") and
                                                              host.get("own") else " (imported)")
        result = changes.compare(changes.Side(old_book, plat, f"{old_v} (committed)"),
                                 changes.Side(new_book, plat, f"{new_v} (re-captured)"),
                                 recaptured, plat, package, base.root, plat)
        how_zh = "在平台自己的机器上重新捕获" + ("（就是这台主机）" if "this host" in how else "（从那台机器带回来的）")
        mark_controls(result, new_book.manifest, bumped)
        result["sentences"] = changes.sentences(result, new.root / "docs")
        report["comparisons"].append({"platform": plat, "how": how, "how_zh": how_zh, "book": True, **result})
    if host.get("scratch") and host["scratch"] in new_book.platforms():
        k2 = host["scratch"]
        stand_in = host.get("platform") if host.get("platform") in book_platforms else k2
        result = changes.compare(changes.Side(old_book, k2, f"{old_v} (this host)"),
                                 changes.Side(new_book, k2, f"{new_v} (this host)"),
                                 [k for k in keys if new_book.fragment(k2, FragmentKey.parse(k)) is not None
                                  or old_book.fragment(k2, FragmentKey.parse(k)) is not None],
                                 stand_in, package, base.root if stand_in != k2 else None, stand_in)
        mark_controls(result, new_book.manifest, bumped)
        result["sentences"] = changes.sentences(result, new.root / "docs")
        report["comparisons"].append({"platform": k2, "how": f"this host, both pins (stands in for {stand_in})",
                                      "how_zh": f"这台主机上新旧固定版本各跑一遍（代替 `{stand_in}`，不进书）",
                                      "book": False, **result})
    # what each book platform still needs: fragments fresh before and stale with the new pins (and, apart, those
    # already stale at the base commit: not the upgrade's doing, but not captured with the new pins either)
    manifest = new_book.manifest
    report["stale_at_base"] = {}
    for plat in book_platforms:
        stale, before = [], []
        for exp in manifest.experiments:
            for role in exp.roles:
                fk = FragmentKey(exp.id, role)
                if _matches(new_book, plat, fk):
                    continue
                if _matches(old_book, plat, fk):
                    stale.append(str(fk))
                elif old_book.fragment(plat, fk) is not None and str(fk) in report["targets"]:
                    before.append(str(fk))
        if before:
            report["stale_at_base"][plat] = before
        if stale:
            ident = old_book.identity(plat)
            exps = sorted({FragmentKey.parse(k).exp for k in stale})
            roles = sorted({FragmentKey.parse(k).role for k in stale})
            if ident.route == "bundle":
                cmd = (f"{report['bundle'].get(plat, {}).get('command') or 'python -m capture upgrade ... (with cargo, to build the bundle)'}"
                       f" on {ident.display_name}, then here: python -m capture upgrade --import {folder.name} fragments.tar.gz")
            else:
                cmd = (f"on {ident.display_name} ({fingerprint.describe(ident.host)}): "
                       f"nox -s upgrade -- {' '.join(f'{b.package} {b.version}' for b in bumps)}")
            report["pending"][plat] = {"keys": stale, "experiments": exps, "roles": roles, "command": cmd,
                                       "display": ident.display_name}
    report["blockers"] = blockers(report)
    report["adoptable"] = not report["blockers"]
    return report


def framework_of(package: str) -> str:
    """The book's framework a pinned package belongs to ("" for one that belongs to none of them)."""
    if package.startswith("candle"):
        return "candle"
    if package.startswith(("burn", "cubecl", "cubek")):
        return "burn"
    return "torch" if package == "torch" else ""


def mark_controls(result: dict, manifest, bumped: set[str]) -> None:
    """Mark what the comparison says of experiments on a framework the upgrade did not change (only the lock moved
    under them): their changes are the noise between the two sides, the yardstick for the rest."""
    if not bumped or "" in bumped:
        return
    def control(key: str) -> bool:
        try:
            return manifest.get(FragmentKey.parse(key).exp).framework not in bumped
        except (ValueError, manifestmod.ManifestError):
            return False
    for f in result["figures"]:
        f["control"] = control(f["key"])
    for o in result["outputs"]:
        o["control"] = control(o["key"])
    for v in result["verdicts"]:
        keys = {r.key for r in parse_refs(v["expr"])[1]}
        v["control"] = bool(keys) and all(control(k) for k in keys)
    for n in result["numbers"]:
        text = n["text"].partition("|")[0] if n["role"] == "num" else n["text"].partition(":")[0]
        keys = {r.key for r in parse_refs(text)[1]} if n["role"] == "num" else {text.strip()}
        n["control"] = bool(keys) and all(control(k) for k in keys)
    result["controls"] = sorted({k for k in result["fragments"] if control(k)})


def _matches(book: Book, plat: str, fk: FragmentKey) -> bool:
    """Whether the platform holds a fragment captured from the inputs the book's checkout has now."""
    frag = book.fragment(plat, fk)
    if frag is None or frag.corrupt:
        return False
    try:
        return frag.inputs_hash == book.current(fk)[0]
    except (OSError, ValueError, manifestmod.ManifestError):
        return False


def _recaptured(old_book: Book, new_book: Book, plat: str, key: str) -> bool:
    fk = FragmentKey.parse(key)
    a, b = old_book.fragment(plat, fk), new_book.fragment(plat, fk)
    if b is None or b.corrupt:
        return False
    return a is None or a.meta.get("started") != b.meta.get("started") or a.inputs_hash != b.inputs_hash


def prerelease(version: str) -> bool:
    """0.23.0-pre.1, 2.16.0rc1, 1.0.0a2: a version the book reports on and never adopts."""
    return bool(re.search(r"-|[A-Za-z]", version.split("+", 1)[0]))


def blockers(report: dict) -> list[str]:
    """Why the upgrade may not be adopted (empty: it may)."""
    out = [f"{b['package']} {b['version']} is a pre-release: the book reports on it and does not adopt it"
           for b in report.get("bumps", []) if prerelease(b["version"])]
    b = report.get("build") or {}
    if not b.get("ok", True):
        out.append("some experiments no longer build: " + ", ".join(b.get("failed") or ["(see the build log)"]))
    g = report.get("gpu_check") or {}
    if not g.get("ok", True):
        out.append("the GPU feature sets do not compile: " + ", ".join(g.get("failed") or ["(see the check log)"]))
    if report.get("pending"):
        out.append("fragments the new pins make stale are not captured again on their machines: " + "; ".join(
            f"{p} ({len(v['keys'])})" for p, v in report["pending"].items()))
    for c in report.get("comparisons", []):
        # this host's two runs are no book platform's, but what fails there would fail on the book's machine too
        where = c["platform"] if c.get("book") else f"on this host (standing in for {c['drift_platform']})"
        failed = [f"{k} ({v['failed'][:60]})" for k, v in c["fragments"].items() if v.get("failed")]
        if failed:
            out.append(f"{where}: runs fail with the new pins: {', '.join(failed[:8])}")
        was = {x["where"] for x in c["claims_failing"]["old"]}
        now = [x for x in c["claims_failing"]["new"] if x["where"] not in was]
        if now:
            out.append(f"{where}: claims the pages expect to hold fail with the new pins: "
                       + "; ".join(f"{x['where']} ({x['why'][:80]})" for x in now[:6]))
    if not any(c.get("book") for c in report.get("comparisons", [])) and report.get("targets"):
        out.append("no platform of the book was captured again: this host is not the machine of any of them")
    return out


def _write(layout: Layout, folder: up.Folder, report: dict, page: Path | None, out) -> None:
    folder.report_file.write_text(json.dumps(report, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    target = page or layout.root / PAGES / f"{folder.name}.md"
    if target:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render_page(report), encoding="utf-8")
        report["page"] = layout.rel(target)
    print(summary(report), file=out)


# -- the terminal summary (English) ----------------------------------------------------------------

def _vers(report: dict) -> str:
    return ", ".join(f"{b['package']} {b['old'] or '?'} -> {b['version']}" for b in report["bumps"])


def summary(report: dict) -> str:
    lines = [f"upgrade {_vers(report)} (worktree {report['worktree']}, from {report['base'][:12]})"]
    if report.get("pin_error"):
        lines.append(f"  the pins could not be changed: {report['pin_error'].splitlines()[0]}")
    for kind, pkgs in report.get("locks", {}).items():
        lines.append(f"  {kind} lock: {len(pkgs)} package(s) changed")
    host = report.get("host", {})
    if host:
        if host.get("own"):
            lines.append(f"  this host is the machine of {host['platform']}: its fragments were captured again")
        else:
            lines.append(f"  this host ({host.get('describe')}) is not the machine of {host.get('platform')}: both pins "
                         f"ran here as {host.get('scratch')}; the book's platforms were not captured again")
    b = report.get("build") or {}
    if not b.get("ok", True):
        lines.append(f"  build: {', '.join(b.get('failed') or ['?'])} no longer build(s); "
                     f"{len(b.get('errors') or [])} compiler errors, e.g.:")
        for e in (b.get("errors") or [])[:5]:
            lines.append(f"    {e['file']}:{e['line']}: {('[' + e['code'] + '] ') if e['code'] else ''}{e['message'][:120]}")
    g = report.get("gpu_check")
    if g:
        lines.append("  GPU feature sets (cargo check): " + ("compile" if g.get("ok") else
                     f"do not compile ({', '.join(g.get('failed') or ['?'])}), e.g.:"))
        for e in (g.get("errors") or [])[:5]:
            lines.append(f"    {e['file'] or '-'}:{e['line']}: {('[' + e['code'] + '] ') if e['code'] else ''}{e['message'][:160]}")
    for c in report.get("comparisons", []):
        beyond = [f for f in c["figures"] if f["beyond"] and not f.get("control")]
        lines.append(f"  {c['platform']} ({c['how']}): {len(c['verdicts'])} verdicts changed, {len(c['numbers'])} numbers, "
                     f"{len(beyond)} of {len(c['figures'])} figures beyond their drift, {len(c['outputs'])} outputs "
                     "changed shape")
        if c.get("controls"):
            cb = [f for f in c["figures"] if f["beyond"] and f.get("control")]
            cv = [v for v in c["verdicts"] if v.get("control")]
            lines.append(f"    controls (experiments whose framework the upgrade did not change; only the lock moved): "
                         f"{len(cb)} of {sum(1 for f in c['figures'] if f.get('control'))} figures beyond their drift, "
                         f"{len(cv)} verdicts changed: the noise between the two sides")
        for k, f in c["fragments"].items():
            if f.get("failed"):
                lines.append(f"    fails with the new pins: {k}: {f['failed'][:160]}")
        for v in c["verdicts"][:10]:
            lines.append(f"    verdict {v['where']}: {v['old']} -> {v['new']}{' (control)' if v.get('control') else ''}")
        for f in sorted(beyond, key=lambda f: -abs(math.log(f["ratio"])))[:6]:
            lines.append(f"    figure {f['figure']}: x{f['ratio']:.3g} (moved x{f['move']:.3g} beyond its repeats, "
                         f"drift x{f['drift']:.3g})")
        for o in c["outputs"][:6]:
            what = (o["records"][0]["record"] + f": {o['records'][0]['old']} -> {o['records'][0]['new']}") if o["records"] \
                else "text"
            lines.append(f"    output {o['key']}: {what[:140]}")
    for plat, p in report.get("pending", {}).items():
        lines.append(f"  {plat}: {len(p['keys'])} fragments to capture again there: {p['command']}")
    for plat, keys in (report.get("stale_at_base") or {}).items():
        lines.append(f"  {plat}: {len(keys)} more were stale at the base commit already (to capture with the new pins too)")
    for plat, g in report.get("bundle", {}).items():
        if g.get("error"):
            lines.append(f"  bundle for {plat}: failed: {g['error'][:200]}")
        elif g.get("skipped"):
            lines.append(f"  bundle for {plat}: not built ({g['skipped']})")
        elif g.get("built"):
            lines.append(f"  bundle for {plat}: {g['folder']} ({g.get('bytes', 0) / 2**20:.1f} MiB); there: {g['command']}")
    for note in report.get("notes") or []:
        lines.append(f"  note: {note}")
    if report.get("adoptable"):
        lines.append(f"  adoptable: python -m capture upgrade --adopt {report['name']}")
    else:
        lines.append("  not adoptable: " + "; ".join(report.get("blockers") or ["?"]))
    if report.get("page"):
        lines.append(f"  report: {report['page']} (data: .capture/upgrade/{report['name']}/report.json)")
    return "\n".join(lines)


# -- the page (Chinese, for the author) -----------------------------------------------------------

def code(text: object, table: bool = False) -> str:
    """Inline code that holds any text: a backtick fence longer than any run inside, on one line; in a table row
    (`table`) its pipes escaped."""
    s = " ".join(str(text).split())
    s = s.replace("|", "\\|") if table else s
    if not s:
        return "—"
    longest = cur = 0
    for ch in s:
        cur = cur + 1 if ch == "`" else 0
        longest = max(longest, cur)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def tcode(text: object) -> str:
    return code(text, table=True)


def cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|") or "—"


def _secs(v: float, unit: str) -> str:
    return fmt_value(Value(v, unit)).replace("\u00a0", " ")


def _answer_zh(a: str) -> str:
    return {"yes": "是", "no": "否", "cannot tell": "说不清", "-": "（没有值）"}.get(
        a, a.replace("about the same (within x", "差不多（相差不到 ").replace(")", " 倍）") if a.startswith("about") else a)


def render_page(report: dict) -> str:
    vers = "、".join(f"{b['package']} {b['old'] or '?'} → {b['version']}" for b in report["bumps"])
    out = [f"# 升级：{vers}", ""]
    out.append(f"这一页由 `python -m capture upgrade` 写出（{report.get('finished') or report.get('started')}），"
               f"基准是提交 `{report['base'][:12]}`，新的固定版本在工作树 `{report['worktree']}` 里。"
               "书里提交了的东西（固定版本、片段）在采纳之前一样都没变。")
    out.append("")
    if report.get("adoptable"):
        out.append(f"**结论：可以采纳。** `python -m capture upgrade --adopt {report['name']}` 把固定版本和重新捕获的片段"
                   "复制进书里，再由作者提交。")
    else:
        out.append("**结论：不采纳。** 原因：")
        out.append("")
        for b in report.get("blockers") or []:
            out.append(f"- {cell(b)}")
    out.append("")
    for note in report.get("notes") or []:
        out.append(f"> 作者的说明：{cell(note)}")
        out.append("")
    host = report.get("host") or {}
    out.append("## 在哪里跑的")
    out.append("")
    if report.get("pin_error"):
        out.append("固定版本改不过去，什么也没有运行：")
        out.append("")
        out.append("```text")
        out.append(report["pin_error"])
        out.append("```")
        out.append("")
        return "\n".join(out) + "\n"
    if host.get("own"):
        out.append(f"这台主机（{cell(host.get('describe'))}）就是平台 `{host.get('platform')}` 的机器："
                   "受影响的片段在新工作树里重新捕获，和提交了的片段比较。")
    elif host:
        out.append(f"这台主机（{cell(host.get('describe'))}）**不是**书里任何平台的机器"
                   f"（它被认作 `{host.get('platform')}`，但指纹不符），所以书的平台没有在这里重新捕获。"
                   f"受影响的实验在这里跑了两遍，旧的固定版本一遍、新的一遍，都记在平台键 `{host.get('scratch')}` 下，"
                   "两遍互相比较：同一台机器、同样的条件。这两遍的数不进书。")
    out.append("")
    pend = report.get("pending") or {}
    if pend:
        out.append("还要在各自机器上重新捕获的平台：")
        out.append("")
        for plat, p in pend.items():
            out.append(f"- `{plat}`（{cell(p['display'])}）：{len(p['keys'])} 个片段"
                       f"（{cell(', '.join(p['experiments'][:12]))}{' …' if len(p['experiments']) > 12 else ''}）。"
                       f"命令：{code(p['command'])}")
        out.append("")
    for plat, keys in (report.get("stale_at_base") or {}).items():
        out.append(f"- `{plat}` 另有 {len(keys)} 个受影响的片段在基准提交里就已经过期了（不是这次升级造成的；"
                   f"它们同样要用新的固定版本重新捕获）：{cell(', '.join(sorted(keys)[:16]))}{' …' if len(keys) > 16 else ''}。")
    for plat, g in (report.get("bundle") or {}).items():
        if g.get("built"):
            out.append(f"- `{plat}` 的预构建包：{code(g['folder'])}（{g.get('bytes', 0) / 2**20:.1f} MiB）。"
                       f"在那台机器上从基准提交的检出里运行 {code(g['command'])}，"
                       f"带回 `fragments.tar.gz` 之后在这里运行 {code(g['import'])}。")
        elif g.get("error"):
            out.append(f"- `{plat}` 的预构建包没有做成：{code(g['error'])}")
        elif g.get("skipped"):
            out.append(f"- `{plat}` 的预构建包没有做（{cell(g['skipped'])}）。")
    out.append("")

    out.append("## 固定的版本")
    out.append("")
    locks = report.get("locks") or {}
    if not locks:
        out.append("锁文件没有变化。")
    for kind, pkgs in locks.items():
        out.append(f"{'crates/Cargo.lock' if kind == 'cargo' else 'uv.lock'} 里变了 {len(pkgs)} 个包：")
        out.append("")
        out.append("| 包 | 之前 | 之后 |")
        out.append("| --- | --- | --- |")
        for p, (a, b) in pkgs.items():
            out.append(f"| `{p}` | {cell(', '.join(a) or '（没有）')} | {cell(', '.join(b) or '（没有）')} |")
        out.append("")

    out.append("## 构建")
    out.append("")
    b = report.get("build") or {}
    if b.get("ok", True):
        out.append("用新的固定版本，所有 Rust 实验都构建成功" + (f"（{b['seconds']:.0f} 秒）。" if b.get("seconds", 0) >= 1 else "。"))
    else:
        out.append(f"这些包用新的固定版本编译不过：{cell(', '.join(b.get('failed') or ['?']))}。"
                   + (f"为了捕获其余能构建的实验，新工作树的工作区里暂时去掉了 {cell(', '.join(b.get('dropped') or []))}。"
                      if b.get("dropped") else ""))
        out.append(f"完整日志：`{b.get('log', '')}`；重新运行：{code(b.get('command', ''))}。")
        out.append("")
        out.append("| 位置 | 错误 |")
        out.append("| --- | --- |")
        for e in b.get("errors") or []:
            where = f"{e['file']}:{e['line']}" if e["file"] else "—"
            out.append(f"| {tcode(where)} | {tcode((e['code'] + ': ' if e['code'] else '') + e['message'])} |")
    out.append("")

    g = report.get("gpu_check")
    if g:
        out.append("### GPU 的代码路径")
        out.append("")
        out.append("NVIDIA 平台的预构建包打开的 feature（每个框架一步，和 `bundle` 一样）在这里用 `cargo check` 检查了一遍，"
                   "只在这些 feature 下编译的代码（`cfg(feature = \"cuda\")`、burn 的 Vulkan 变体）也对着新的固定版本做了类型检查："
                   + ("都能编译。" if g.get("ok") else f"编译不过的：{cell(', '.join(g.get('failed') or ['?']))}。"))
        out.append(f"命令：{code(g.get('command', ''))}；日志：`{g.get('log', '')}`。")
        out.append("")
        if g.get("errors"):
            out.append("| 位置 | 错误 |")
            out.append("| --- | --- |")
            for e in g["errors"]:
                where = f"{e['file']}:{e['line']}" if e["file"] else "—"
                out.append(f"| {tcode(where)} | {tcode((e['code'] + ': ' if e['code'] else '') + e['message'])} |")
            out.append("")
    targets = report.get("targets") or {}
    out.append("## 受影响的实验")
    out.append("")
    out.append(f"输入变了（或读固定版本的源码）的实验角色 {len(targets)} 个：")
    out.append("")
    for k, why in sorted(targets.items()):
        out.append(f"- `{k}`：{cell(why)}")
    out.append("")

    for c in report.get("comparisons") or []:
        out += _comparison(c)
    return "\n".join(out).rstrip() + "\n"


def _comparison(c: dict) -> list[str]:
    out = [f"## 比较：`{c['platform']}`", ""]
    out.append(f"{c.get('how_zh') or cell(c['how'])}。旧的一边：{_label_zh(c['old']['label'])}；"
               f"新的一边：{_label_zh(c['new']['label'])}。"
               f"漂移按平台 `{c['drift_platform']}` 量过的（`docs/drift.json`）；没有量过的种类用默认的 √2。")
    out.append("")
    frags = c["fragments"]
    failed = {k: v for k, v in frags.items() if v.get("failed")}
    if failed:
        out.append("新的固定版本下运行失败的：")
        out.append("")
        for k, v in failed.items():
            out.append(f"- `{k}`：{code(v['failed'])}")
        out.append("")

    out.append("### 变了的是非")
    out.append("")
    if not c["verdicts"]:
        out.append("页面上的断言、是非表、图的分支、`{cmp}` 比较和表里的是非，两边的回答都一样。")
    else:
        out.append("| 位置 | 之前 | 之后 | 表达式 |")
        out.append("| --- | --- | --- | --- |")
        for v in c["verdicts"]:
            mark = "（对照）" if v.get("control") else ""
            out.append(f"| {tcode(v['page'] + ':' + str(v['line']) + v['where'][len(v['where'].split(' ')[0]):])}{mark} | "
                       f"{_answer_zh(v['old'])} | {_answer_zh(v['new'])} | {tcode(v['expr'])} |")
    out.append("")
    was = {x["where"] for x in c["claims_failing"]["old"]}
    now = [x for x in c["claims_failing"]["new"] if x["where"] not in was]
    if now:
        out.append("页面预期成立、新的固定版本下不成立的断言：")
        out.append("")
        for x in now:
            out.append(f"- {code(x['where'])}：{code(x['text'])}；{code(x['why'])}")
        out.append("")

    out.append("### 页面上受影响的句子")
    out.append("")
    sent = c.get("sentences") or changes.sentences(c)
    if not sent:
        out.append("没有。")
    else:
        out.append("每一行后面是它所在的节：节里的文字说的可能是同一件事，但没有表达式替它核对，要人去读。")
        out.append("")
    for s in sent:
        where = f"（节「{cell(s['section'])}」）" if s.get("section") else ""
        out.append(f"- {code(s['page'] + ':' + str(s['line']))}{where}：{code(s['sentence'][:300])}"
                   f"（{cell('; '.join(s['why'])[:200])}）")
    out.append("")

    out.append("### 句子里的数")
    out.append("")
    if not c["numbers"]:
        out.append("`{num}` 和 `{meta}` 显示的值都没有变。")
    else:
        out.append("| 位置 | 之前 | 之后 | 引用 |")
        out.append("| --- | --- | --- | --- |")
        for n in c["numbers"]:
            out.append(f"| {tcode(n['page'] + ':' + str(n['line']))}{'（对照）' if n.get('control') else ''} | "
                       f"{cell(n['old'] or '（没有）')} | "
                       f"{cell(n['new'] or '（没有）')} | {tcode(n['text'])} |")
    out.append("")

    figs = c["figures"]
    beyond = [f for f in figs if f["beyond"]]
    out.append("### 计时")
    out.append("")
    if c.get("controls"):
        cf = [f for f in figs if f.get("control")]
        out.append(f"**对照。** {len(c['controls'])} 个片段的实验用的框架这次没有升级，两边只有锁文件不同（标着「对照」）："
                   f"它们的 {len(cf)} 个计时数里有 {sum(1 for f in cf if f['beyond'])} 个超出了漂移，"
                   f"{sum(1 for v in c['verdicts'] if v.get('control'))} 个是非变了。这就是两边之间的噪声，"
                   "读其余的变化时拿它作尺子。")
        out.append("")
    out.append(f"{len(figs)} 个计时数，{len(beyond)} 个挪动超出了它的漂移（超出重复范围的挪动，按 `drift.move` 量，"
               "大于它自己的或它这一类的漂移）。")
    out.append("")
    if beyond:
        # the record's name first and alone: a whole figure label is wider than a phone, and a first column wider
        # than the screen cannot stay in view while the table scrolls (tests/site/test_reader.py)
        out.append("| 记录 | 之前（中位数） | 之后 | 之后 ÷ 之前 | 超出重复的挪动 | 漂移 | 实验和标签 | 历史（平台自己的机器上，按版本） |")
        out.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for f in sorted(beyond, key=lambda f: -abs(math.log(f["ratio"]))):
            key, _, rest = f["figure"].partition(" ")
            name, _, tags = rest.partition("{")
            out.append(f"| {tcode(name)}{'（对照）' if f.get('control') else ''} | {_secs(statistics.median(f['old']), f['unit'])} | "
                       f"{_secs(statistics.median(f['new']), f['unit'])} | ×{f['ratio']:.3g} | ×{f['move']:.3g} | "
                       f"×{f['drift']:.3g}{'（它自己的）' if f['own_drift'] else ''} | "
                       f"{tcode(key + (' {' + tags if tags else ''))} | {cell(_history(f))} |")
        out.append("")
    within = [f for f in figs if not f["beyond"]]
    if within:
        out.append("在漂移之内的：" + "、".join(f"{code(f['figure'])} ×{f['ratio']:.3g}" for f in within[:40])
                   + (" …" if len(within) > 40 else "") + "。")
        out.append("")

    out.append("### 输出的形状")
    out.append("")
    if not c["outputs"]:
        out.append("输出归一化之后都一样，记录里的文字也没变。")
    for o in c["outputs"]:
        out.append(f"`{o['key']}`：")
        out.append("")
        for r in o["records"]:
            out.append(f"- 记录 {code(r['record'])}：{code(r['old'])} → {code(r['new'])}")
        if o["diff"]:
            out.append("")
            out.append("```diff")
            out += [ln.replace("```", "ˋˋˋ") for ln in o["diff"][:40]]
            out.append("```")
        out.append("")
    return out


def _label_zh(label: str) -> str:
    for en, zh in (("(committed)", "（提交了的）"), ("(re-captured)", "（重新捕获的）"), ("(this host)", "（这台主机）")):
        label = label.replace(en, zh)
    return cell(label)


def _history(f: dict) -> str:
    """The figure across versions: each version's captures on the platform's machine (medians), then this one."""
    by: dict[str, list[float]] = {}
    for h in f.get("history") or []:
        by.setdefault(h["version"], []).append(h["median"])
    parts = []
    for v, ms in by.items():
        lo, hi = min(ms), max(ms)
        span = _secs(lo, f["unit"]) if lo == hi else f"{_secs(lo, f['unit'])}–{_secs(hi, f['unit'])}"
        parts.append(f"{v}: {len(ms)} 次 {span}")
    return "；".join(parts) or "（没有提交过的历史）"


# -- command line ----------------------------------------------------------------------------------

def main(argv: list[str] | None = None, layout: Layout | None = None) -> int:
    from capture.commands.cli import upgrade_arguments

    p = argparse.ArgumentParser(prog="python -m capture upgrade", description=__doc__.split("\n\n")[0])
    upgrade_arguments(p)
    args = p.parse_args(argv)
    return run(args, layout or Layout(find_root()))


def run(args, layout: Layout) -> int:
    """`python -m capture upgrade ...` (its options: capture/commands/cli.py upgrade_arguments)."""
    page = Path(args.page).resolve() if args.page else None
    try:
        if args.drop:
            drop(layout, up.folder(layout, args.drop))
            print(f"dropped {up.folder(layout, args.drop).root}", file=sys.stderr)
            return 0
        if args.report or args.import_ or args.adopt:
            name = args.report or (args.import_[0] if args.import_ else args.adopt)
            folder = up.folder(layout, name)
            state = folder.state()
            if not state:
                print(f"error: no upgrade {name} here (.capture/upgrade/{name}/state.json); start one: "
                      "python -m capture upgrade PACKAGE VERSION", file=sys.stderr)
                return 2
            if getattr(args, "note", None):
                state.setdefault("notes", []).append(f"{up.now_iso()[:10]}: {args.note}")
                folder.save(state)
            if args.import_:
                src = Path(args.import_[1]).resolve()
                if not src.exists():
                    print(f"error: {src}: no such file or folder", file=sys.stderr)
                    return 2
                taken = up.import_fragments(Layout(folder.new), folder.base, src,
                                            echo=lambda s: print(s, file=sys.stderr),
                                            targets=state.get("targets") or {}, since=state.get("started", ""))
                state.setdefault("imported", {}).update({k: v for k, v in taken.items() if v})
                folder.save(state)
            report = make_report(layout, folder, state)
            if args.adopt:
                print(summary(report), file=sys.stderr)
                if not report["adoptable"]:
                    print(f"error: not adopted: {'; '.join(report['blockers'])}", file=sys.stderr)
                    return 1
                files = up.adopt(layout, folder, state, echo=lambda s: print(s, file=sys.stderr))
                print(f"adopted {report['name']}: {len(files)} files copied into the book's working tree "
                      f"({', '.join(files[:6])}{' ...' if len(files) > 6 else ''}); review and commit them "
                      "(git add crates docs/_fragments pyproject.toml uv.lock), then run python -m capture drift",
                      file=sys.stderr)
                return 0
            _write(layout, folder, report, page, sys.stderr)
            return 0
        bumps = up.parse_bumps(args.spec)
        platform = detect()
        start(layout, bumps, platform, args.only, args.python, args.new_python, bundle=not args.no_bundle,
              again=args.again, page=page, check_gpu=args.check_gpu)
        return 0
    except up.UpgradeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except manifestmod.ManifestError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("upgrade interrupted; the book's working tree is untouched, the worktrees stay in .capture/upgrade/ "
              "(run the same command again to go on)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
