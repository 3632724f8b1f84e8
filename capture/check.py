"""Check: re-run what this machine can run into a scratch store, compare skeletons with the committed fragments."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from capture.manifest import Manifest
from capture.normalize import diff, skeleton
from capture.paths import Layout
from capture.platform import Platform
from capture.regenerate import Options, regenerate
from capture.store import Store


def check(layout: Layout, manifest: Manifest, committed: Store, platform: Platform, *, only=None, roles=None, python=sys.executable, out=sys.stderr) -> int:
    with tempfile.TemporaryDirectory(prefix="capture-check-") as tmp:
        scratch = Store(Path(tmp))
        outcomes = regenerate(layout, manifest, platform, scratch, Options(only=only, roles=roles, force=True, python=python), out=out)
        problems = []
        for o in outcomes:
            if o.status == "skipped":
                continue
            exp_id, role = o.key.split("@")
            exp = manifest.get(exp_id)
            if o.status == "failed":
                problems.append(f"{o.key}: the fresh run failed: {o.message}")
                continue
            old = committed.read(platform.key, o.key)
            regen = f"nox -s regenerate -- --only {exp_id} --device {role}"
            if old is None:
                problems.append(f"{o.key}: no committed fragment for {platform.key}; run `{regen}` and commit it")
                continue
            new = scratch.read(platform.key, o.key)
            if old.inputs_hash != new.inputs_hash:
                problems.append(f"{o.key}: committed fragment is stale (inputs changed); run `{regen}` and commit it")
                continue
            a, b = skeleton(old.text, exp.mask), skeleton(new.text, exp.mask)
            if a != b:
                problems.append(f"{o.key}: output no longer matches the committed fragment:\n{diff(a, b)}")
    for p in problems:
        print(f"MISMATCH {p}", file=out)
    print(f"check: {len(outcomes)} jobs, {len(problems)} problems", file=out)
    return 1 if problems else 0
