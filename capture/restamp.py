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

from capture import identity
from capture import inputs as inputsmod
from capture.manifest import Manifest
from capture.paths import Layout
from capture.store import Store, atomic_write


@dataclass
class Result:
    restamped: int = 0
    current: int = 0
    stale: list[str] = None  # "platform/key" left as they were
    identities: list[str] = None

    def __post_init__(self):
        self.stale = self.stale or []
        self.identities = self.identities or []


def restamp(layout: Layout, manifest: Manifest, store: Store) -> Result:
    res = Result()
    ids = {e.id: e for e in manifest.experiments}
    for plat in store.platforms():
        metas = []
        for path in sorted((store.root / plat).glob("*@*.json")):
            if path.stem.endswith(".skipped"):
                continue
            meta = json.loads(path.read_text(encoding="utf-8"))
            key = path.stem.removesuffix(".failed")
            exp_id, _, role = key.partition("@")
            if not path.stem.endswith(".failed"):
                metas.append(meta)
            exp = ids.get(exp_id)
            old = meta.get("inputs") or {}
            scheme = old.get("hash_version", 1)
            if exp is None or role not in exp.roles:
                res.stale.append(f"{plat}/{path.name} (no such experiment in the manifest)")
                continue
            if scheme == inputsmod.HASH_VERSION:
                res.current += 1
                continue
            if meta.get("inputs_hash") != inputsmod.inputs_hash(exp, role, layout, scheme):
                res.stale.append(f"{plat}/{path.name}")
                continue
            new = inputsmod.inputs(exp, role, layout)
            meta["inputs"], meta["inputs_hash"] = new, inputsmod.digest(new)
            atomic_write(path, json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
            res.restamped += 1
        if metas and identity.read(store.root, plat) is None:
            identity.write(store.root, identity.from_metadata(plat, metas))
            res.identities.append(plat)
    return res
