"""Your machine in the book: capture this host as the reader's own platform, outside the committed book.

    python -m capture yours [--only ID ...] [--chapter PAGE ...] [--device cpu|gpu] [--force]
    python -m capture yours --promote [KEY]      (an author: make the reader's capture a platform of the book)
    nox -s yours [-- ARGS]                       (this, then the local site with 「你的机器」 beside the book's machines)

The platform is named from the host's fingerprint (capture/machines/yours.py): no name to invent, no file to
edit. Its fragments go to .capture/yours/<key>/ (git-ignored, the layout of a docs/_fragments/<key>/ folder),
written by the same regenerate as the book's, so a second run captures only what is stale and an interrupted
one leaves only whole fragments. Roles follow the machine: the CPU role everywhere (torch, burn Flex, candle
CPU), the GPU role where there is one (NVIDIA with its toolchain, a Mac's MPS and Metal); without cargo the Rust
experiments are skipped with that reason, which the pages show. On the machine of one of the book's platforms
nothing is captured: that platform is the reader's machine, and the command says so.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from dataclasses import replace

from capture.machines import fingerprint as fpmod
from capture.machines import yours as yoursmod
from capture.plan import manifest as manifestmod
from capture.storage.keys import KeyError_, check_platform_key
from capture.storage.paths import Layout
from capture.storage.store import Store, StoreLocked, StoreUnusable
from capture.system.progress import Estimate

# The first Rust build with an empty target folder (burn and candle, CPU features), measured on the book's
# 2-core build box: docs/dev/platforms.md (你的机器). Scaled by the core count where there are more.
COLD_BUILD_S_2_CORES = 12 * 60
WARM_BUILD_S = 30


def chapter_experiments(layout: Layout, manifest, pages: list[str]) -> list[str]:
    """The experiments a chapter's page refers to (every `experiment@role` in its source), in manifest order."""
    from capture.system import regular

    named: set[str] = set()
    for page in pages:
        path = layout.root / "docs" / f"{page.removesuffix('.md')}.md"
        if not path.is_file():
            from capture.evidence.findings import chapters

            known = ", ".join(chapters(layout.root / "docs")) or "none"
            raise manifestmod.ManifestError(f"--chapter {page}: no page docs/{page}.md (chapters: {known})")
        named |= set(re.findall(r"([a-z0-9][a-z0-9._-]*)@(?:cpu|gpu)\b", regular.read_text(path)))
    return [e.id for e in manifest.experiments if e.id in named]


def estimate(layout: Layout, manifest, jobs, cores: int | None) -> tuple[Estimate, float, float]:
    """How long the jobs to run should take here: each one's wall time on the book's machines (the mean of those
    that captured it), and the Rust build when one is needed. Returns (estimate, experiments' s, build s)."""
    book = Store(layout.fragments)
    seconds: dict[str, float] = {}
    for job in jobs:
        walls = []
        for plat in book.platforms():
            frag = book.read(plat, job.key)
            if frag is not None and not frag.corrupt and isinstance(frag.meta.get("wall_s"), (int, float)):
                walls.append(float(frag.meta["wall_s"]))
        wall = sum(walls) / len(walls) if walls else 10.0
        seconds[job.key] = wall * (2 if job.exp.caches == "warm" else 1)  # a warm-up run first
    rust = frozenset(j.key for j in jobs if j.exp.build_crate)
    build = 0.0
    if rust:
        built = all((layout.cargo_target / "release" / j.exp.binary).is_file() for j in jobs if j.exp.build_crate)
        build = WARM_BUILD_S if built else COLD_BUILD_S_2_CORES * 2 / max(2, cores or 2)
    return Estimate(seconds, {"cargo build": (build, rust)} if rust else {}), sum(seconds.values()), build


def run(layout: Layout, only: list[str] | None, chapters: list[str] | None, roles: list[str] | None, force: bool,
        python: str, out=sys.stderr) -> int:
    from capture.machines.platform import detect, machine_record
    from capture.running.regenerate import Options, needs_run, plan, regenerate

    manifest = manifestmod.load(layout.manifest)
    platform = detect()
    machine = machine_record(platform)
    fp = fpmod.of_machine(machine)
    reader = yoursmod.find(layout, fp)
    print(f"yours: this machine: {fpmod.describe(fp)}", file=out)
    if reader.book_platform:
        print(f"yours: this machine is the book's {reader.key} (the same fingerprint as "
              f"{layout.rel(reader.folder / 'platform.json')}): the book's figures for {reader.key} are this machine's, "
              f"and the local site shows that platform as 「{yoursmod.NAME}」. Nothing is captured into "
              f"{layout.rel(yoursmod.store_root(layout))}; `nox -s regenerate` re-captures {reader.key}'s stale "
              "fragments in the book itself.", file=out)
        return 0
    book = Store(layout.fragments)
    mine = [f"{k} ({fpmod.describe(h)})" for k in book.platforms() if (h := _machine(book, k)) is not None]
    print(f"yours: it is none of the book's machines ({'; '.join(mine) or 'none captured'}); captured as "
          f"「{yoursmod.NAME}」, platform {reader.key}, into {layout.rel(reader.folder)} (git-ignored; docs/_fragments "
          "is not touched)", file=out)
    for other in yoursmod.others(layout, reader):
        print(f"yours: {layout.rel(yoursmod.store_root(layout) / other)} is another machine's (or an older checkout's) "
              f"and is not shown; remove it with: rm -r {layout.rel(yoursmod.store_root(layout) / other)}", file=out)
    selected = list(only or [])
    if chapters:
        selected += [e for e in chapter_experiments(layout, manifest, chapters) if e not in selected]
    store = Store(yoursmod.store_root(layout))
    here = replace(platform, key=reader.key)
    opts = Options(only=selected or None, roles=roles, force=force, python=python, skip_without_cargo=True)
    jobs = plan(layout, manifest, here, store, opts)
    todo = [j for j in jobs if needs_run(j, force)]
    est, runs_s, build_s = estimate(layout, manifest, todo, machine.get("cores"))
    fresh = sum(1 for j in jobs if j.device and j not in todo)
    skipped = [j for j in jobs if not j.device]
    why = sorted({j.skip_reason.split(";")[0] for j in skipped})
    print(f"yours: {len(todo)} to run here, {fresh} already captured and fresh, {len(skipped)} not run on this machine"
          + (f" ({'; '.join(why)})" if why else ""), file=out)
    if todo:
        parts = [f"the experiments {Estimate.words(runs_s)} on the book's machines"]
        if build_s:
            parts.append(f"the Rust build {Estimate.words(build_s)}"
                         + (" (the first one, cold)" if build_s > WARM_BUILD_S else ""))
        print(f"yours: estimate {Estimate.words(est.left())} ({', '.join(parts)})", file=out)
    try:
        outcomes = regenerate(layout, manifest, here, store, replace(opts, estimate=est), out=out)
    except StoreLocked as e:
        print(f"error: {e}", file=out)
        return 3
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        print(f"yours: {len(failed)} failed here ({', '.join(o.key for o in failed[:8])}"
              f"{' ...' if len(failed) > 8 else ''}); the pages say so, and the next run tries them again", file=out)
    _findings(layout, reader, out)
    return 1 if failed else 0


def _machine(store: Store, key: str) -> dict | None:
    from capture.machines.hosts import machine_of

    return machine_of(store, key)[0]


def _findings(layout: Layout, reader, out) -> None:
    """One line per chapter: how the reader's answers compare with the book's machines'."""
    from capture.evidence import findings as fmod
    from capture.evidence.book import Book
    from capture.evidence.driftfile import DataFileError

    try:
        book = Book(layout.root, reader=reader)
        for page, items in fmod.of_chapters(layout.root / "docs").items():
            n = fmod.counts(fmod.rows(book, items))
            words = {fmod.SAME: "same as the book", fmod.DIFFERENT: "different", fmod.SPLIT: "where the book's machines differ",
                     fmod.ALONE: "decided only here", fmod.OPEN: "cannot tell here", fmod.NONE: "not measured here"}
            print(f"yours: {page}: {len(items)} findings: " + ", ".join(f"{n[k]} {w}" for k, w in words.items() if n.get(k)),
                  file=out)
    except (OSError, ValueError, DataFileError) as e:  # the site says the rest; the capture is done
        print(f"yours: the findings could not be compared here ({e}); the site build shows them", file=out)


def promote(layout: Layout, key: str | None, out=sys.stderr) -> int:
    """Copy this host's reader capture into docs/_fragments/<key>/ as a platform of the book (an author's step).

    The fragments are written through the store (each pair whole), their `platform` set to the new key, with the
    skip records and a platform.json naming this host. Refused when the folder exists: nothing is overwritten."""
    from capture.machines import identity as identitymod

    fp = yoursmod.here()
    reader = yoursmod.find(layout, fp)
    if reader.book_platform:
        print(f"error: this machine already is the book's {reader.key}; nothing to promote", file=out)
        return 2
    source = Store(reader.root)
    keys = source.keys(reader.key) if reader.key in source.platforms() else []
    if not keys:
        print(f"error: no capture of this machine under {layout.rel(reader.folder)}; run `nox -s yours` first", file=out)
        return 2
    book = Store(layout.fragments)
    suggested = fpmod.suggest_key(fp)
    new = key or (suggested if suggested not in book.platforms() else reader.key)
    try:
        check_platform_key(new, "--promote")
    except KeyError_ as e:
        print(f"error: {e}", file=out)
        return 2
    if (layout.fragments / new).exists():
        print(f"error: docs/_fragments/{new} exists; choose another key: --promote KEY", file=out)
        return 2
    ident = identitymod.read(reader.root, reader.key)
    try:
        with book.lock():
            for k in keys:
                frag = source.read(reader.key, k)
                if frag is None or frag.corrupt or frag.torn:
                    print(f"yours: {k} left out ({'corrupt' if frag is not None and frag.corrupt else 'not whole'})",
                          file=out)
                    continue
                meta = {m: v for m, v in frag.meta.items() if m not in ("schema", "text_sha256")}
                book.write(new, k, frag.text, {**meta, "platform": new})
            for exp in manifestmod.load(layout.manifest).experiments:
                for role in exp.roles:
                    k = f"{exp.id}@{role}"
                    why = source.skip_reason(reader.key, k)
                    if why and k not in keys:
                        book.write_skip(new, k, why)
            if ident is not None:
                identitymod.write(layout.fragments, replace(ident, key=new))
    except (StoreLocked, StoreUnusable, OSError) as e:
        shutil.rmtree(layout.fragments / new, ignore_errors=True)
        print(f"error: {e}; docs/_fragments is unchanged", file=out)
        return 2
    print(f"yours: docs/_fragments/{new}/ now holds this machine's {len(keys)} fragments as a platform of the book. "
          f"Commit it (git add docs/_fragments/{new}); list \"{new}\" in book_platforms in conf.py to choose where its "
          f"column goes. From now on this machine re-captures it with: BOOK_PLATFORM={new} nox -s regenerate", file=out)
    return 0


def main(argv: list[str] | None = None, layout: Layout | None = None) -> int:
    from capture.machines.hosts import HostMismatch
    from capture.machines.identity import IdentityError
    from capture.storage.paths import find_root

    p = argparse.ArgumentParser(prog="python -m capture yours", description=__doc__.split("\n\n")[0])
    p.add_argument("--only", nargs="+", metavar="ID", help="only these experiments")
    p.add_argument("--chapter", nargs="+", metavar="PAGE", help="only the experiments of these chapters (eager, design)")
    p.add_argument("--device", nargs="+", choices=("cpu", "gpu"), help="only these roles (default: what this machine has)")
    p.add_argument("--force", action="store_true", help="run again what is fresh")
    p.add_argument("--python", default=sys.executable, help="the Python that runs the torch experiments")
    p.add_argument("--promote", nargs="?", const="", metavar="KEY",
                   help="an author's step: make this machine's capture a platform of the book (docs/_fragments/KEY)")
    args = p.parse_args(argv)
    layout = layout or Layout(find_root())
    try:
        if args.promote is not None:
            return promote(layout, args.promote or None)
        return run(layout, args.only, args.chapter, args.device, args.force, args.python)
    except manifestmod.ManifestError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (StoreUnusable, HostMismatch, IdentityError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"yours interrupted: every fragment captured so far is whole and kept in "
              f"{layout.rel(yoursmod.store_root(layout))}, the rest are as they were; run the same command again to go on",
              file=sys.stderr)
        return 130

