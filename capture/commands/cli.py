"""Command line: python -m capture {regenerate,status,check,...}. The nox sessions call this."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from capture.plan import manifest as manifestmod
from capture.storage.keys import check_platform_key
from capture.storage.paths import Layout, find_root
from capture.machines.platform import Platform, detect
from capture.system import oserror, outstreams, regular
from capture.storage.store import Store, StoreLocked, StoreUnusable


def _common(layout: Layout):
    try:
        manifest = manifestmod.load(layout.manifest)
    except manifestmod.ManifestError as e:
        raise SystemExit(f"error: {e}") from None
    return manifest, Store(layout.fragments)


def _platform() -> Platform:
    """This machine; its key (detected, or BOOK_PLATFORM) must be a valid platform key: it names a folder."""
    platform = detect()
    try:
        check_platform_key(platform.key, "platform key (BOOK_PLATFORM, or detected)")
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    return platform


def _ask(question: str) -> bool:
    """A y/N question on the terminal (stderr, answered on stdin); anything but y or yes, end of input or Ctrl-C: no."""
    sys.stderr.write(question)
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except (KeyboardInterrupt, OSError, ValueError):
        answer = ""
    if not answer.endswith("\n"):
        sys.stderr.write("\n")
    return answer.strip().lower() in ("y", "yes")


def _terminal_in() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (OSError, ValueError):
        return False


def cmd_regenerate(args, layout: Layout) -> int:
    from capture.machines.hosts import HostMismatch, Unconfirmed
    from capture.machines.identity import IdentityError
    from capture.running.regenerate import Options, regenerate
    from capture.system.runner import Interrupted

    if args.yes and not args.adopt:
        print("error: --yes confirms what --adopt deletes; it does nothing without --adopt", file=sys.stderr)
        return 2
    manifest, store = _common(layout)
    platform = _platform()
    _check_python(args.python)
    if args.prebuilt:
        from capture.toolchains.prebuilt import verify

        verify(layout, Path(args.prebuilt))
    print(f"platform {platform.key}" + (f" ({platform.gpu_name})" if platform.gpu_name else ""), file=sys.stderr)
    opts = Options(
        only=args.only, roles=args.device, force=args.force, python=args.python or sys.executable,
        prebuilt=Path(args.prebuilt) if args.prebuilt else None, adopt=args.adopt,
        yes=args.yes, ask=_ask if _terminal_in() else None,  # no terminal and no --yes: an adoption that deletes is refused
    )
    try:
        outcomes = regenerate(layout, manifest, platform, store, opts)
    except StoreLocked as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    except Unconfirmed as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except HostMismatch as e:
        if os.environ.get("BOOK_PLATFORM") or args.adopt:  # asked for by name: an error
            print(f"error: {e}", file=sys.stderr)
            return 2
        from capture.machines.hosts import OTHER_HOST_EXIT

        print(f"regenerate: nothing captured on this host; the committed fragments stay.\n{e}", file=sys.stderr)
        return OTHER_HOST_EXIT
    except (IdentityError, StoreUnusable) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except manifestmod.ManifestError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        how = f" by {e.args[0]}" if isinstance(e, Interrupted) else ""
        print(f"interrupted{how}: fragments written so far are kept; the rest are unchanged", file=sys.stderr)
        return 128 + (e.signum if isinstance(e, Interrupted) else 2)
    if not args.no_review:
        from capture.running.review import review

        text = review(outcomes, layout)
        if text:
            print(text, file=sys.stderr)
    failed = [o for o in outcomes if o.status == "failed"]
    return 1 if failed else 0


def _check_python(python: str | None) -> None:
    """--python must name a Python 3 interpreter: said once, before anything runs."""
    if python:
        from capture.machines.versions import interpreter_problem

        why = interpreter_problem(python)
        if why:
            raise SystemExit(f"error: {why}")


def cmd_status(args, layout: Layout) -> int:
    from capture.evidence.book import Book
    from capture.evidence.claims import failing_claims
    from capture.machines import fingerprint
    from capture.machines.identity import of_machine
    from capture.machines.platform import machine_record
    from capture.storage.keys import KeyError_
    from capture.evidence.status import as_json, collect, host_note, problems, render

    manifest, store = _common(layout)
    here = _platform()
    record = machine_record(here)
    book = Book(layout.root, _book_order(layout), of_machine(here, record))
    book.manifest = manifest  # the one _common read (a cached_property: read once)
    platforms = book.platforms() + ([here.key] if here.key not in book.platforms() else [])
    if args.platform:  # one machine, perhaps one that has never captured: what it will run, and how
        try:
            book.expect(args.platform)
        except KeyError_ as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        platforms = [args.platform]
    note = host_note(book, here.key, here, fingerprint.suggest_key(fingerprint.of_machine(record)))
    try:
        entries = collect(book, platforms)
        undecided: list[dict] = []
        claims = failing_claims(book, undecided)
    except (OSError, ValueError) as e:  # e.g. a script the manifest names is missing (the message names the line)
        print(f"error: {e}", file=sys.stderr)
        return 2
    from capture.evidence import share

    shares = [s for s in share.shares(book, layout.root / "docs") if s.platform in platforms]
    if args.json:
        # valid JSON whatever stdout's encoding: \u escapes where it cannot write UTF-8 (LC_ALL=C, PYTHONIOENCODING)
        print(outstreams.json_text({"this_platform": here.key, "this_host_is_that_machine": not note,
                                    "entries": as_json(entries), "failing_claims": claims, "undecided_claims": undecided,
                                    "broken_platforms": book.broken,
                                    "timing_verdicts": [{"platform": s.platform, "yes": s.yes, "no": s.no,
                                                         "cannot_tell": [{"where": w, "why": why} for w, why in s.undecided]}
                                                        for s in shares]},
                                   indent=1))
    else:
        print(render(entries, book))
        print(share.render(shares))
        if note:
            print(note)
        for plat in platforms:  # what an interrupted write (a restamp, a killed regenerate) left behind
            from capture.storage.atomic import dead_leftovers

            left = dead_leftovers(store.root / plat)
            if left:
                print(f"{plat}: {len(left)} temporary file(s) of a run that no longer exists ({', '.join(p.name for p in left[:3])}"
                      f"{' ...' if len(left) > 3 else ''}); the next regenerate or restamp there removes them")
        for c in claims:
            print(f"claim fails on {c['platform']}: {c['where']}: {c['text']}  ({c['why']})")
        for c in undecided:
            print(f"claim cannot be decided on {c['platform']} (not a failure): {c['where']}: {c['why']}")
    if args.check:
        bad = problems(entries, claims, book)
        for p in bad:
            print(f"check: {p}", file=sys.stderr)
        return 1 if bad else 0
    return 0


def _book_order(layout: Layout) -> list[str]:
    """conf.py's book_platforms, read without importing Sphinx (a plain assignment of a list of strings)."""
    import ast

    conf = layout.root / "conf.py"
    if conf.is_file():
        for node in ast.parse(regular.read_text(conf)).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "book_platforms" for t in node.targets):
                return list(ast.literal_eval(node.value))
    return []


def cmd_check(args, layout: Layout) -> int:
    """Re-run what this machine can run (into a scratch store) and compare skeletons with the committed fragments."""
    from capture.commands.check import check

    manifest, store = _common(layout)
    _check_python(args.python)
    try:
        return check(layout, manifest, store, _platform(), only=args.only, roles=args.device, python=args.python or sys.executable)
    except manifestmod.ManifestError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("check interrupted; the committed fragments are untouched", file=sys.stderr)
        return 130


def cmd_build_prebuilt(args, layout: Layout) -> int:
    from capture.toolchains.build import BuildError
    from capture.toolchains.prebuilt import build_prebuilt
    from capture.toolchains.wheelkit import KitError

    try:
        info = build_prebuilt(layout, args.gpu, Path(args.out), echo=lambda s: print(s, file=sys.stderr),
                              candle_cuda=args.candle_cuda)
    except (BuildError, KitError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps(info, indent=1))
    return 0


def cmd_bundle(args, layout: Layout) -> int:
    from capture.toolchains.build import BuildError
    from capture.toolchains.bundle import make_bundle
    from capture.toolchains.wheelkit import KitError

    try:
        make_bundle(layout, Path(args.out), args.gpu, candle_cuda=args.candle_cuda,
                    vulkan_loader=args.vulkan_loader, echo=lambda s: print(s, file=sys.stderr))
    except (BuildError, KitError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def cmd_restamp(args, layout: Layout) -> int:
    from capture.commands.restamp import restamp

    manifest, store = _common(layout)
    try:
        with store.lock():  # not beside a regenerate that writes the same files
            res = restamp(layout, manifest, store)
    except StoreLocked as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    if res.swept:
        print(f"restamp: removed {len(res.swept)} temporary file(s) an interrupted run left: {', '.join(res.swept[:5])}"
              f"{' ...' if len(res.swept) > 5 else ''}")
    print(f"restamp: {res.restamped} fragments carried over to the current inputs hash, {res.current} already current")
    for p in res.identities:
        print(f"restamp: wrote {layout.rel(store.root / p / 'platform.json')} from its fragments' metadata")
    for s in res.stale:
        print(f"restamp: left as it was: {s}")
    return 0


def cmd_noise(args, layout: Layout) -> int:
    from capture.evidence.noise import extreme, history, render, run

    runs = [(history(layout.root), "history: every committed state of each platform's own fragments"),
            (run(layout.root, args.seeds), f"drift: every timing moved within its kind's measured drift, {args.seeds} seeds"),
            (extreme(layout.root, 1), "extreme: factors growing to 10x either way (flips: yes <-> no without cannot tell)")]
    for reports, what in runs:
        print(render(reports, what))
    return 1 if any(r.flips for reports, _ in runs for r in reports) else 0


def cmd_drift(args, layout: Layout) -> int:
    """Measure the drift table; write it (under the store's lock: not beside a regenerate), or with --check compare it
    with the committed one. Every file and git read goes through capture/evidence/driftfile.py."""
    from capture.evidence import drift, driftfile

    driftfile.scratch_clean(layout.root)
    try:
        driftfile.require_history(layout.root)  # refused before the lock file or anything else is made
        if args.check:  # writes nothing
            data = drift.table(layout.root)
            print(drift.render(data))
            _drift_notes(driftfile.left_out_note())
            try:
                same = driftfile.unchanged(layout.root, data)
            except driftfile.DataFileError as e:
                print(f"error: {e}", file=sys.stderr)
                return 1
            if not same:
                print(f"{drift.DATA} differs from the fragments' history; rewrite it with: {driftfile.COMMAND}",
                      file=sys.stderr)
                return 1
            return 0
        with Store(layout.fragments).lock():
            data = drift.table(layout.root)
            print(drift.render(data))
            _drift_notes(driftfile.left_out_note())
            path, replaced = driftfile.write(layout.root, data)
    except StoreLocked as e:
        print(f"error: {e}; {drift.DATA} is unchanged", file=sys.stderr)
        return 3
    except driftfile.HistoryMissing as e:
        print(f"error: {e}; {drift.DATA} is unchanged", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"drift interrupted (Ctrl-C); {drift.DATA} is whole: the old table, or the new one if it was already "
              "renamed into place (it is written to a temporary name and renamed)", file=sys.stderr)
        return 130
    _drift_notes(replaced or "")
    print(f"wrote {layout.rel(path)}")
    return 0


def upgrade_arguments(p: argparse.ArgumentParser) -> None:
    """The options of `upgrade` (capture/commands/upgrade.py), here and for `python -m capture.commands.upgrade`."""
    p.add_argument("spec", nargs="*", metavar="PACKAGE VERSION",
                   help="e.g. candle-core 0.11.1 (several pairs: one upgrade)")
    p.add_argument("--only", nargs="+", metavar="ID", help="only these experiments (default: every one the pins touch)")
    p.add_argument("--python", help="interpreter for the old side's Python snippets (default: this one)")
    p.add_argument("--new-python", help="interpreter with the new Python packages (default: synced from the new uv.lock)")
    p.add_argument("--no-bundle", action="store_true", help="do not build the GPU machine's bundle (a long build)")
    p.add_argument("--check-gpu", action="store_true",
                   help="cargo check the NVIDIA platform's GPU feature sets with the new pins (code behind cfg(feature))")
    p.add_argument("--again", action="store_true", help="build and capture again (the worktrees and pins are kept)")
    p.add_argument("--page", help="where the report page goes (default docs/dev/upgrades/<name>.md)")
    p.add_argument("--report", metavar="NAME", help="write the report of an upgrade again from its worktrees")
    p.add_argument("--import", dest="import_", nargs=2, metavar=("NAME", "FILE"),
                   help="take the fragments a platform's machine captured for the upgrade (fragments.tar.gz or a folder)")
    p.add_argument("--adopt", metavar="NAME", help="copy the upgrade's pins and fragments into the book (then commit them)")
    p.add_argument("--drop", metavar="NAME", help="remove an upgrade's worktrees and scratch folder")
    p.add_argument("--note", metavar="TEXT", help="with --report: add the author's note to the report (e.g. why a machine "
                                                  "was not reached)")


def cmd_upgrade(args, layout: Layout) -> int:
    from capture.commands.upgrade import run

    return run(args, layout)


def _drift_notes(*notes: str) -> None:
    for note in notes:
        if note:
            print(f"note: {note}", file=sys.stderr)


def _seed_count(text: str) -> int:
    """--seeds: a count that tests something, an integer of 1 or more (argparse reports the rest as a usage error)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give at least 1") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} seeds would test nothing; give at least 1 (the default is 10)")
    return n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m capture", description=__doc__)
    p.add_argument("--root", help="repository root (default: found from the current folder)")
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("regenerate", help="run stale experiments for this platform and capture fragments")
    r.add_argument("--only", nargs="+", metavar="ID", help="only these experiment ids")
    r.add_argument("--device", nargs="+", choices=["cpu", "gpu"], help="only these device roles")
    r.add_argument("--force", action="store_true", help="rerun even when fresh")
    r.add_argument("--python", help="interpreter for Python snippets (default: this one)")
    r.add_argument("--prebuilt", metavar="DIR", help="run Rust binaries built elsewhere (DIR has build-info.json)")
    r.add_argument("--no-review", action="store_true", help="skip the what-changed report")
    r.add_argument("--adopt", action="store_true",
                   help="make this host the platform's machine: capture every fragment here, then replace the platform")
    r.add_argument("--yes", action="store_true",
                   help="with --adopt: delete the platform's fragments that docs/experiments.toml no longer names "
                        "without asking (asked on a terminal; refused without one)")
    r.set_defaults(fn=cmd_regenerate)

    s = sub.add_parser("status", help="fresh / stale / missing / failed per platform, experiment and role")
    s.add_argument("--json", action="store_true")
    s.add_argument("--platform", metavar="KEY",
                   help="only that machine, even one that has not captured yet (e.g. macos-arm64-apple-m2-max): "
                        "what it will capture and the command to run there")
    s.add_argument("--check", action="store_true",
                   help="exit 1 on this machine's stale/missing fragments, failed, torn or corrupt ones, and failing claims")
    s.set_defaults(fn=cmd_status)

    c = sub.add_parser("check", help="re-run this machine's experiments and compare normalised output")
    c.add_argument("--only", nargs="+", metavar="ID")
    c.add_argument("--device", nargs="+", choices=["cpu", "gpu"])
    c.add_argument("--python")
    c.set_defaults(fn=cmd_check)

    b = sub.add_parser("build-prebuilt", help="build the Rust experiments for a GPU machine that cannot build")
    b.add_argument("--gpu", default="cuda", choices=["cuda"])
    b.add_argument("--out", required=True, help="folder for the binaries and build-info.json")
    b.add_argument("--candle-cuda", action="store_true",
                   help="also build candle's CUDA kernels, with nvcc 13.0 from NVIDIA's PyPI wheels (capture/toolchains/cudakit.py)")
    b.set_defaults(fn=cmd_build_prebuilt)

    u = sub.add_parser("bundle", help="build-prebuilt, packed with a run.sh for a GPU machine without cargo or network")
    u.add_argument("--gpu", default="cuda", choices=["cuda"])
    u.add_argument("--out", default=".device", help="folder to carry to the GPU machine (default .device)")
    u.add_argument("--candle-cuda", action="store_true", help="as for build-prebuilt")
    u.add_argument("--vulkan-loader", action=argparse.BooleanOptionalAction, default=None,
                   help="include Debian's Vulkan loader packages (default: when burn is built for Vulkan)")
    u.set_defaults(fn=cmd_bundle)

    n = sub.add_parser("noise", help="the pages' verdicts on every past capture, under the measured drift and under "
                                     "extreme noise: does any flip between yes and no?")
    n.add_argument("--seeds", type=_seed_count, default=10, metavar="N",
                   help="random draws of the drift noise (at least 1; default 10)")
    n.set_defaults(fn=cmd_noise)

    d = sub.add_parser("drift", help="measure how far each kind of timing moves between captures (git history of "
                                     "docs/_fragments) and write docs/drift.json, which the verdict rule reads")
    d.add_argument("--check", action="store_true", help="write nothing; exit 1 when docs/drift.json is out of date")
    d.set_defaults(fn=cmd_drift)

    y = sub.add_parser("yours", add_help=False,
                       help="capture this machine as the reader's own platform (.capture/yours/, outside the book): "
                            "python -m capture yours --help")
    y.add_argument("rest", nargs=argparse.REMAINDER)
    y.set_defaults(fn=lambda args, layout: __import__("capture.commands.yours", fromlist=["main"]).main(args.rest, layout))

    t = sub.add_parser("restamp", help="carry fragments that were fresh over a change of the inputs-hash scheme (no rerun)")
    t.set_defaults(fn=cmd_restamp)

    g = sub.add_parser("upgrade", help="try new versions of pinned packages in a scratch worktree and report what they "
                                       "change (docs/dev/upgrades/); --adopt NAME copies them into the book")
    upgrade_arguments(g)
    g.set_defaults(fn=cmd_upgrade)

    args, extra = p.parse_known_args(argv)
    if args.cmd == "yours":  # its own parser (capture/commands/yours.py) reads its arguments, --help included
        args.rest = extra + args.rest
    elif extra:
        p.error(f"unrecognized arguments: {' '.join(extra)}")
    layout = Layout(Path(args.root).resolve() if args.root else find_root())
    saved = sys.stdout, sys.stderr
    shared = outstreams.guard(layout.root, args.cmd)  # a closed or narrow stdout/stderr never stops the command
    try:
        return _run(args, layout)
    finally:
        outstreams.report(shared, layout.root)
        sys.stdout, sys.stderr = saved


def _run(args, layout: Layout) -> int:
    try:
        return args.fn(args, layout)
    except KeyboardInterrupt:  # regenerate and check say more themselves; elsewhere nothing is left half-written
        print(f"{args.cmd} interrupted (Ctrl-C); every file it wrote is whole (each is written to a temporary "
              "name and renamed)", file=sys.stderr)
        return 130
    except StoreUnusable as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # the file system refused: say where, not a traceback
        print(f"error: {args.cmd}: {oserror.plain(e)}", file=sys.stderr)
        return 2
