"""Check: re-run what this machine can run into a scratch store, compare skeletons with the committed fragments.

The re-runs go to a store of their own under this process's scratch folder
(.capture/check/<platform>/<pid>-<random>/), and their logs and records to another folder of
this process only, so a check never touches what a concurrent regenerate is writing. It takes no
lock: it only reads the committed store, and a committed fragment caught between the two renames
of a concurrent publish (torn) is read again before it counts as a problem.
"""

from __future__ import annotations

import shutil
import sys
import time

from capture.plan.manifest import Manifest
from capture.running.normalize import diff, skeleton
from capture.storage.paths import Layout
from capture.machines.platform import Platform
from capture.running.regenerate import Options, regenerate
from capture.storage.store import Fragment, Store

TORN_RETRIES = 20  # x 0.1 s: how long a publish by a concurrent regenerate may take between its renames


def read_settled(store: Store, platform: str, key: str) -> Fragment | None:
    """The committed fragment; when torn (and not corrupt), read again for a moment: it may be mid-publish."""
    frag = store.read(platform, key)
    for _ in range(TORN_RETRIES):
        if frag is None or not frag.torn or frag.corrupt:
            break
        time.sleep(0.1)
        frag = store.read(platform, key)
    return frag


def check(layout: Layout, manifest: Manifest, committed: Store, platform: Platform, *, only=None, roles=None,
          python=sys.executable, out=sys.stderr) -> int:
    scratch_dir = layout.run_dir(platform.key, kind="check")
    try:
        scratch = Store(scratch_dir)
        outcomes = regenerate(layout, manifest, platform, scratch, Options(only=only, roles=roles, force=True, python=python), out=out)
        notes: list[str] = []
        problems = compare(manifest, committed, scratch, platform.key, outcomes, foreign=_foreign(committed, platform), notes=notes)
    finally:
        shutil.rmtree(scratch_dir, ignore_errors=True)
    for n in notes:
        print(f"note: {n}", file=out)
    for p in problems:
        print(f"MISMATCH {p}", file=out)
    print(f"check: {len(outcomes)} jobs, {len(problems)} problems", file=out)
    return 1 if problems else 0


def _foreign(committed: Store, platform: Platform) -> bool:
    """Whether this host is not the platform's machine: its fingerprint and the platform's differ
    (capture/machines/hosts.py, as `regenerate` and the docs build decide it)."""
    from capture.machines import fingerprint as fpmod
    from capture.machines.hosts import machine_of
    from capture.machines.platform import machine_record

    try:
        stored, _ = machine_of(committed, platform.key)
        return stored is not None and not fpmod.same(stored, fpmod.of_machine(machine_record(platform)))
    except (OSError, ValueError):
        return False


def compare(manifest: Manifest, committed: Store, fresh: Store, platform: str, outcomes, *, foreign: bool = False,
            notes: list[str] | None = None) -> list[str]:
    """What differs between the fresh runs and the committed fragments, one message per job. On a host that is not
    the platform's machine (`foreign`), a committed fragment whose program changed since is that machine's to
    capture again: a note (in `notes`), not a problem here, as the docs build treats another machine's stale
    fragments."""
    problems = []
    for o in outcomes:
        if o.status == "skipped":
            continue
        exp_id, role = o.key.split("@")
        exp = manifest.get(exp_id)
        regen = f"nox -s regenerate -- --only {exp_id} --device {role}"
        if o.status == "failed":
            problems.append(f"{o.key}: the fresh run failed: {o.message}")
            continue
        old = read_settled(committed, platform, o.key)
        if old is None:
            problems.append(f"{o.key}: no committed fragment for {platform}; run `{regen}` and commit it")
            continue
        if old.corrupt:
            problems.append(f"{o.key}: committed fragment is corrupt ({old.corrupt}); run `{regen} --force` and commit it")
            continue
        if old.torn:
            problems.append(f"{o.key}: committed fragment is torn (text and metadata disagree); run `{regen}` and commit it")
            continue
        new = fresh.read(platform, o.key)
        if new is None or new.corrupt:
            problems.append(f"{o.key}: the fresh run left no readable fragment ({new.corrupt if new else 'none'})")
            continue
        if old.inputs_hash != new.inputs_hash:
            if foreign and notes is not None:
                notes.append(f"{o.key}: committed fragment is stale (inputs changed); {platform}'s own machine "
                             f"captures it again (`{regen}` there)")
                continue
            problems.append(f"{o.key}: committed fragment is stale (inputs changed); run `{regen}` and commit it")
            continue
        a, b = skeleton(old.text, exp.mask), skeleton(new.text, exp.mask)
        if a != b:
            problems.append(f"{o.key}: output no longer matches the committed fragment:\n{diff(a, b)}")
    return problems
