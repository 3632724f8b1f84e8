"""Compare with your machine: run chosen experiments here and print their figures beside the book's.

    python -m capture.commands.compare --only torch-ret burn-ret [--device cpu|gpu] [--keep]
    nox -s compare -- --only torch-ret burn-ret

The runs go to a scratch store of this process (.capture/compare/<platform>/<pid>-<random>/),
never to docs/_fragments/, exactly as `regenerate --force` would run them here. Then, for each
experiment and role, every record of this machine's run is printed beside the same record of each
captured platform (same name and tags; the device tag is left out of the match, since a GPU is
cuda on one machine and mps on another), with the ratio yours / theirs. Records that only one side
has are listed too. Stdlib only.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import unicodedata
from dataclasses import dataclass

from capture.plan import manifest as manifestmod
from capture.evidence.fmt import fmt_value, sig
from capture.storage.keys import FragmentKey
from capture.storage.paths import Layout, find_root
from capture.evidence.query import Value
from capture.storage.store import Fragment, Store

MATCH_IGNORES = ("device",)  # tags that name the machine's device rather than what was measured


def record_id(rec: dict) -> tuple[str, tuple[tuple[str, str], ...]]:
    tags = tuple(sorted((k, str(v)) for k, v in (rec.get("tags") or {}).items() if k not in MATCH_IGNORES))
    return rec["name"], tags


def record_label(rid) -> str:
    name, tags = rid
    return name + ("{" + ",".join(f"{k}={v}" for k, v in tags) + "}" if tags else "")


def show(rec: dict | None) -> str:
    if rec is None:
        return "—"
    return fmt_value(Value(rec["value"], rec.get("unit") or "")).replace("\u00a0", " ")


def ratio(mine: dict | None, theirs: dict | None) -> str:
    a, b = (mine or {}).get("value"), (theirs or {}).get("value")
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
    if not numbers or not b or (mine.get("unit") or "") != (theirs.get("unit") or ""):
        return ""
    r = a / b
    return f"{sig(r, 2 if abs(r) < 10 else 3)}×"


@dataclass
class Column:
    name: str  # "yours" or the captured platform's label
    fragment: Fragment | None


def table(key: str, mine: Fragment, others: list[Column]) -> list[str]:
    """Lines: one per record, this machine's value, then each platform's value (ratio yours / theirs)."""
    mine_recs = {record_id(r): r for r in mine.records}
    theirs = [{record_id(r): r for r in c.fragment.records} if c.fragment else {} for c in others]
    ids = list(mine_recs) + [i for t in theirs for i in t if i not in mine_recs]
    seen, rows = set(), []
    for rid in ids:
        if rid in seen:
            continue
        seen.add(rid)
        cells = [record_label(rid), show(mine_recs.get(rid))]
        for t in theirs:
            other = t.get(rid)
            r = ratio(mine_recs.get(rid), other)
            cells.append(show(other) + (f" ({r})" if r else ""))
        rows.append(cells)
    header = ["record", "yours", *(c.name if c.fragment else f"{c.name} (not captured)" for c in others)]
    widths = [max(width(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda cells: "  " + "  ".join(c + " " * (w - width(c)) for c, w in zip(map(str, cells), widths)).rstrip()  # noqa: E731
    return [line(header), *(line(r) for r in rows)]


def width(text: str) -> int:
    """Columns a terminal gives the text: Chinese characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def compare(layout: Layout, only: list[str] | None, roles: list[str] | None, keep: bool = False,
            python: str = sys.executable, out=sys.stdout, err=sys.stderr) -> int:
    from capture.evidence.book import Book
    from capture.machines.platform import detect
    from capture.running.regenerate import Options, regenerate

    manifest = manifestmod.load(layout.manifest)
    here = detect()
    book = Book(layout.root)
    captured = book.platforms()
    scratch_dir = layout.run_dir(here.key, kind="compare")
    try:
        scratch = Store(scratch_dir)
        print(f"compare: running on {here.key} into {scratch_dir} (docs/_fragments is not touched)", file=err)
        outcomes = regenerate(layout, manifest, here, scratch, Options(only=only, roles=roles, force=True, python=python), out=err)
        failed = 0
        for o in outcomes:
            if o.status == "skipped":
                print(f"\n{o.key}: not run here ({o.message})", file=out)
                continue
            mine = scratch.read(here.key, o.key)
            if o.status == "failed" or mine is None or mine.corrupt:
                failed += 1
                print(f"\n{o.key}: the run here failed: {o.message}", file=out)
                continue
            key = FragmentKey.parse(o.key)
            cols = [Column(book.label(p, key.role), book.fragment(p, key)) for p in captured]
            wall = mine.meta.get("wall_s")
            print(f"\n{o.key} on this machine ({here.key}, device {mine.meta.get('device')}"
                  + (f", {wall:.1f} s" if isinstance(wall, (int, float)) else "") + "):", file=out)
            print("\n".join(table(o.key, mine, cols)), file=out)
    finally:
        if keep:
            print(f"compare: the runs are kept in {scratch_dir}", file=err)
        else:
            shutil.rmtree(scratch_dir, ignore_errors=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m capture.commands.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="ID", help="experiments to run (default: all this machine can run)")
    parser.add_argument("--device", nargs="+", choices=("cpu", "gpu"), help="roles to run (default: both, where there is a GPU)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch store of the runs")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs the torch experiments")
    args = parser.parse_args(argv)
    layout = Layout(find_root())
    try:
        return compare(layout, args.only, args.device, args.keep, args.python)
    except manifestmod.ManifestError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("compare interrupted; docs/_fragments is untouched", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
