"""One platform, one machine: regenerate refuses to write a platform from a host that is not its machine.

A platform's machine is the fingerprint in its platform.json (capture/machines/fingerprint.py). A host with
another fingerprint gets a refusal that changes no file, with the ways on that work on that host (the second
only where the host can run every role the platform holds):

- capture this host as a platform of its own (`BOOK_PLATFORM=<new key> nox -s regenerate`, then
  add the key to `book_platforms` in conf.py), or
- adopt the platform on this host (`nox -s regenerate -- --adopt`): every fragment this host can
  make is captured into a staging store (.capture/adopt/<key>/), and only when all of them are
  captured does the staged folder replace the platform's folder, identity included. An adoption
  that fails or is interrupted leaves the old platform whole; running --adopt again continues it.
  The platform's fragments of experiments the manifest no longer names are not captured again, so the swap
  deletes them: they are listed first, and the adoption runs only once that is confirmed (y on a terminal,
  or --yes); without either it stops before running anything.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from capture.machines import fingerprint as fpmod
from capture.machines import identity as identitymod
from capture.storage.paths import Layout
from capture.storage.store import Store

COMPLETE = "complete"  # marker in a staging folder whose fragments are all captured (the swap may finish it)


class HostMismatch(RuntimeError):
    """This host is not the machine of the platform it would write; the message says what to do."""


def machine_of(store: Store, key: str) -> tuple[dict | None, str]:
    """The fingerprint of the platform's machine and where it was read from; (None, "") for a new platform."""
    p = identitymod.path(store.root, key)
    try:
        ident = identitymod.read(store.root, key)
    except identitymod.IdentityError:  # broken (or a symlink): the fragments still say whose they are
        ident = None
    if ident is not None:
        return ident.host, str(p)
    metas = [f.meta for k in store.keys(key) if (f := store.read(key, k)) is not None and not f.corrupt]
    if not metas:
        return None, ""
    hosts = [h for m in metas if (h := fpmod.of_fragment(m)) is not None]
    return (hosts[0] if hosts else None), f"{store.root / key} (its fragments)"


# `regenerate`'s exit status when it captured nothing because this host is not the detected platform's
# machine (not chosen with BOOK_PLATFORM): `nox -s regenerate` reports it and goes on, so a reader's
# `nox -s regenerate docs` on another machine still builds the site from the committed fragments.
OTHER_HOST_EXIT = 4


def guard(layout: Layout, store: Store, key: str, here: dict, platform=None) -> None:
    """Raise HostMismatch when `key` is another machine's platform. Writes nothing.

    `platform` (this host, as detected): the `--adopt` way on is offered only where it would be accepted,
    not where this host cannot run a role the platform holds (refuse_losing)."""
    finish_swap(layout, store, key)
    want, source = machine_of(store, key)
    if want is None or fpmod.same(want, here):
        return
    n = len(store.keys(key))
    diffs = "\n".join(f"  {d}" for d in fpmod.differences(want, here))
    new_key = fpmod.suggest_key(here)
    own = (f"capture this host as a platform of its own: BOOK_PLATFORM={new_key} nox -s regenerate\n"
           f"    (then add \"{new_key}\" to book_platforms in conf.py so the pages show it)")
    lost = lost_roles(store, key, platform) if platform is not None else []
    if lost:  # --adopt would be refused here: not offered
        ways = (f"Nothing was written. One way on:\n  - {own}\n"
                f"{key} cannot be adopted on this host: it cannot run what the platform holds ({'; '.join(lost)}); "
                "adopt it (nox -s regenerate -- --adopt) on a machine that can")
    else:
        ways = (f"Nothing was written. Two ways on:\n  - {own}\n"
                f"  - or adopt {key} on this host: nox -s regenerate -- --adopt\n"
                f"    (captures all of its fragments here, {n} now; the platform and its identity are replaced only\n"
                "    when every one is captured, so an interrupted adoption leaves the old platform whole)")
    raise HostMismatch(
        f"this host is not the machine whose fragments are under {layout.rel(store.root / key)}:\n"
        f"  that platform: {fpmod.describe(want)} ({layout.rel(Path(source.split(' (')[0]))})\n"
        f"  this host:     {fpmod.describe(here)}\n"
        f"what differs (platform vs this host):\n{diffs}\n{ways}\n"
        "To see this machine beside the book's machines without changing the book: nox -s yours "
        "(your own platform under .capture/yours/, and a local site that shows it as 「你的机器」)"
    )


def lost_roles(store: Store, key: str, platform) -> list[str]:
    """What the platform runs that this host cannot ("gpu: torch on cuda"): adopting it here would lose it.

    Read from its platform.json, or, when that is missing or broken, from its fragments' metadata."""
    from capture.machines.roles import resolve

    try:
        ident = identitymod.read(store.root, key)
    except identitymod.IdentityError:
        ident = None
    if ident is None:
        metas = [f.meta for k in store.keys(key) if (f := store.read(key, k)) is not None and not f.corrupt]
        ident = identitymod.from_metadata(key, metas)
    lost = []
    for role, devices in sorted((ident.roles or {}).items()):
        for framework, device in sorted((devices or {}).items() if isinstance(devices, dict) else ()):
            if device and resolve(platform, framework, role).device is None:
                lost.append(f"{role}: {framework} on {device}")
    return lost


def refuse_losing(layout: Layout, store: Store, key: str, platform, here: dict) -> None:
    """HostMismatch, before anything runs, when adopting `key` here would drop a role it has."""
    lost = lost_roles(store, key, platform)
    if lost:
        raise HostMismatch(
            f"cannot adopt {key} on this host ({fpmod.describe(here)}): it cannot run what "
            f"{layout.rel(store.root / key)} holds ({'; '.join(lost)}), and an adoption replaces every fragment, "
            "so those would be lost. Nothing was run or written. Adopt it on a machine that can run them, "
            f"or capture this host as a platform of its own: BOOK_PLATFORM={fpmod.suggest_key(here)} nox -s regenerate")


class Unconfirmed(RuntimeError):
    """An adoption that would delete fragments the manifest no longer names, not confirmed; nothing was run or written."""


SHOWN = 12  # keys named in a list of fragments an adoption deletes; the rest are counted


def dropped(store: Store, stage: Store, key: str, wanted: set[str]) -> list[str]:
    """The platform's fragments an adoption deletes: those of no experiment and role of the manifest (`wanted`)
    that the staged folder does not hold either (it captures only what the manifest names)."""
    staged = set(stage.keys(key))
    return [k for k in store.keys(key) if k not in wanted and k not in staged]


def listed(keys: list[str]) -> str:
    """`a@cpu, b@cpu, ... and 84 more`: the first SHOWN keys, the rest counted."""
    more = f" and {len(keys) - SHOWN} more" if len(keys) > SHOWN else ""
    return ", ".join(keys[:SHOWN]) + more


def confirm_dropping(layout: Layout, store: Store, key: str, gone: list[str], yes: bool, ask, out) -> None:
    """Before an adoption runs: list the fragments it would delete and have that confirmed (`yes`, or `ask`, a
    y/N question on a terminal); Unconfirmed otherwise, with nothing run or written."""
    if not gone:
        return
    folder = layout.rel(store.root / key)
    what = (f"--adopt replaces {folder} by what this host captures, and docs/experiments.toml names no experiment "
            f"and role for {len(gone)} of its committed fragments: {listed(gone)}. They would be deleted")
    if yes:
        print(f"{what} (confirmed with --yes).", file=out)
        return
    keep = ("To keep them, put their experiments back in docs/experiments.toml (git checkout -- docs/experiments.toml) "
            "and run the same command again")
    if ask is None:
        raise Unconfirmed(f"{what}. Nothing was run or written. To delete them, run it again with --yes "
                          f"(nox -s regenerate -- --adopt --yes). {keep}")
    print(f"{what}.", file=out)
    if not ask(f"delete these {len(gone)} fragment(s) of {folder} when the adoption finishes? [y/N] "):
        raise Unconfirmed(f"not confirmed: nothing was run or written, {folder} keeps all its fragments. {keep}, "
                          "or confirm with y (or --yes)")


def not_captured(store: Store, stage: Store, key: str) -> list[str]:
    """Fragments the platform has that the staged adoption did not capture (skipped, not applicable, failed)."""
    out = []
    for k in store.keys(key):
        new = stage.read(key, k)
        if new is None or new.corrupt or new.torn:
            old = store.read(key, k)
            if old is not None and not old.corrupt:
                out.append(k)
    return out


def staging(layout: Layout, key: str) -> Store:
    return Store(layout.root / ".capture" / "adopt" / key)


def finish_swap(layout: Layout, store: Store, key: str) -> None:
    """Complete a swap that was cut between its two renames (only a hard kill can do that)."""
    stage = staging(layout, key)
    live, new = store.root / key, stage.root / key
    if not live.exists() and (stage.root / COMPLETE).is_file() and new.is_dir():
        os.replace(new, live)


def swap(layout: Layout, store: Store, key: str) -> None:
    """Replace the platform's folder by the staged one (two renames, signals deferred), then drop the old."""
    from capture.system.runner import signals_deferred

    stage = staging(layout, key)
    live, new = store.root / key, stage.root / key
    old = stage.root.parent / f".{key}.replaced-{os.getpid()}"
    (stage.root / COMPLETE).write_text("all fragments captured\n", encoding="utf-8")
    with signals_deferred():
        if live.exists():
            try:
                os.replace(live, old)
            except OSError as e:
                if e.errno != errno.EXDEV:
                    raise
                shutil.move(str(live), str(old))
        try:
            os.replace(new, live)
        except OSError as e:
            if e.errno != errno.EXDEV:
                raise
            tmp = store.root / f".{key}.adopting-{os.getpid()}"
            shutil.copytree(new, tmp)
            os.replace(tmp, live)
    shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(stage.root, ignore_errors=True)
