"""Restamp: carry fragments over a change of the inputs-hash scheme without re-running them.

A fragment whose recorded hash equals what its own (older) scheme gives for the current
sources was fresh: the same sources would produce the same output, so only its inputs record
and hash are rewritten in the current scheme. Anything else keeps its old stamp and shows up
as stale, as it should. The text, its sha256 and every other field stay exactly as captured.
Also writes a platform's identity file (platform.json) where a store predates it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from capture.storage import atomic
from capture.machines import identity
from capture.plan import inputs as inputsmod
from capture.storage.keys import FragmentKey, KeyError_
from capture.plan.manifest import Manifest
from capture.storage.paths import Layout
from capture.storage.store import Store, atomic_write


@dataclass
class Result:
    restamped: int = 0
    current: int = 0
    stale: list[str] = None  # "platform/file (why)" left as they were
    identities: list[str] = None
    swept: list[str] = None  # temporary files of processes that no longer run, removed

    def __post_init__(self):
        self.stale = self.stale or []
        self.identities = self.identities or []
        self.swept = self.swept or []


def _fix(store: Store, plat: str, key: FragmentKey) -> str:
    """The command that captures (platform, key) again, on that machine."""
    try:
        ident = identity.read(store.root, plat)
    except (OSError, ValueError):
        ident = None
    cmd = ident.regenerate_command([key.exp], [key.role]) if ident else f"nox -s regenerate -- --only {key.exp} --device {key.role}"
    return f"{cmd} (on {plat})"


def restamp(layout: Layout, manifest: Manifest, store: Store) -> Result:
    res = Result()
    ids = {e.id: e for e in manifest.experiments}
    for plat, why in store.folder_problems().items():
        res.stale.append(f"{plat}/ ({why})")
    for plat in store.platforms():
        res.swept += [f"{plat}/{p.name}" for p in atomic.sweep(store.root / plat)]  # an interrupted restamp's temporary files
        metas = []
        for path in sorted((store.root / plat).glob("*@*.json")):
            if path.stem.endswith(".skipped"):
                continue
            failed = path.stem.endswith(".failed")
            shown = f"{plat}/{path.name}"
            try:
                key = FragmentKey.parse(path.stem.removesuffix(".failed"))
            except KeyError_ as e:
                res.stale.append(f"{shown} (not a fragment's name: {e})")
                continue
            frag = store.read(plat, str(key), failed)
            if frag is None:
                continue
            if frag.corrupt:  # truncated, not JSON, a symlink...: nothing to carry over
                res.stale.append(f"{shown} (corrupt: {frag.corrupt}; capture it again: {_fix(store, plat, key)})")
                continue
            meta = frag.meta
            if not failed:
                metas.append(meta)
            exp = ids.get(key.exp)
            if exp is None or key.role not in exp.roles:
                res.stale.append(f"{shown} (no such experiment in the manifest)")
                continue
            scheme = (meta.get("inputs") or {}).get("hash_version", 1)
            if scheme == inputsmod.HASH_VERSION:
                res.current += 1
                continue
            if not isinstance(scheme, int) or isinstance(scheme, bool) or scheme < 1:
                res.stale.append(f"{shown} (its inputs record names no hash scheme this checkout knows: {scheme!r})")
                continue
            if scheme > inputsmod.HASH_VERSION:
                res.stale.append(f"{shown} (captured with inputs-hash scheme {scheme}, newer than this checkout's "
                                 f"{inputsmod.HASH_VERSION}: restamp cannot help; update the checkout, e.g. git pull)")
                continue
            try:
                was_fresh = meta.get("inputs_hash") == inputsmod.inputs_hash(exp, key.role, layout, scheme)
                new = inputsmod.inputs(exp, key.role, layout) if was_fresh else None
            except (OSError, ValueError) as e:  # a source the manifest names is missing or unreadable
                res.stale.append(f"{shown} (its sources cannot be read: {e})")
                continue
            if not was_fresh:
                res.stale.append(f"{shown} (stale before the scheme changed)")
                continue
            meta["inputs"], meta["inputs_hash"] = new, inputsmod.digest(new)
            js = path.parent / path.name  # the file store.read just vouched for (not a symlink out of the store)
            atomic_write(js, json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
            res.restamped += 1
        try:
            ident = identity.read(store.root, plat)
        except identity.IdentityError as e:  # another machine's identity: named, never replaced from here
            res.stale.append(f"{plat}/{identity.FILE} ({e})")
            continue
        if metas and ident is None:
            identity.write(store.root, identity.from_metadata(plat, metas))
            res.identities.append(plat)
    return res
