"""`status` and a no-op `regenerate`, timed on throwaway books of 63, 250 and 1,000 experiments.

    python -m capture.commands.bench_status [--sizes 63 250 1000] [--runs 3] [--keep DIR]

Each book has N Python experiments and fresh fragments of all of them on three platforms: this host's
(so `regenerate` finds nothing to do) and two other machines'. One experiment is run for real; the others'
fragments are its fragment with their own inputs record and hash, so every state is what a captured book
has. The commands run as a reader runs them (`python -m capture ...`, a new process each, interpreter
start included); the minimum of --runs is printed per size. Budget (issue 30): 1,000 experiments within
2 s each, and time growing linearly with N (so 10 s at 5,000: each size of 1,000 or more is judged by its own figure). Stdlib only; nothing outside the temporary folder is written.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUDGET_S = 2.0
SAY = "import sys\nimport bookrec\nprint(f'say {sys.argv[1]}')\nbookrec.record('say.len', len(sys.argv[1]), 'chars')\n"
OTHERS = ("linux-x86_64-bench-other", "macos-arm64-apple-m9-bench")


def make_book(root: Path, n: int) -> str:
    """A book of `n` experiments with fresh fragments on three platforms; the key of this host's platform."""
    from capture.machines import identity
    from capture.plan import inputs as inputsmod
    from capture.plan.manifest import load
    from capture.storage.paths import Layout
    from capture.machines.platform import detect
    from capture.running.regenerate import Options, regenerate
    from capture.storage.store import Store

    (root / "snippets").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "snippets/say.py").write_text(SAY, encoding="utf-8")
    shutil.copy(ROOT / "snippets/bookrec.py", root / "snippets/bookrec.py")
    entries = "".join(f'\n[[experiment]]\nid = "e{i}"\nscript = "snippets/say.py"\nargs = ["w{i}"]\n' for i in range(n))
    (root / "docs/experiments.toml").write_text("[defaults]\ntimeout = 30\n" + entries, encoding="utf-8")
    layout = Layout(root)
    platform = detect()
    store = Store(layout.fragments)
    manifest = load(layout.manifest)
    outcomes = regenerate(layout, manifest, platform, store, Options(only=["e0"]), out=io.StringIO())
    if [o.status for o in outcomes] != ["ok"]:
        sys.exit(f"the one real capture failed: {outcomes}")
    first = store.read(platform.key, "e0@cpu")
    for exp in manifest.experiments[1:]:
        meta = copy.deepcopy(first.meta)
        rec = inputsmod.inputs(exp, "cpu", layout)
        meta.update(experiment=exp.id, inputs=rec, inputs_hash=inputsmod.digest(rec))
        meta.pop("text_sha256", None)
        store.write(platform.key, f"{exp.id}@cpu", first.text, meta)
    here = layout.fragments / platform.key
    for key in OTHERS:  # two other machines: the same fragments under their keys, their own identities
        shutil.copytree(here, layout.fragments / key)
        ident = json.loads((here / identity.FILE).read_text(encoding="utf-8"))
        ident["key"] = key
        ident["fingerprint"] = {**(ident.get("fingerprint") or {}), "cpu": f"bench cpu of {key}"}
        (layout.fragments / key / identity.FILE).write_text(json.dumps(ident, indent=1), encoding="utf-8")
        for js in (layout.fragments / key).glob("*@*.json"):
            meta = json.loads(js.read_text(encoding="utf-8"))
            meta["platform"] = key
            js.write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return platform.key


def timed(cmd: list[str], runs: int, ok: tuple[int, ...] = (0,)) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, output): the minimum of `runs`. CPU (user + system) is the figure a busy
    machine distorts less: on an idle one a single-threaded command takes about its CPU time."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("BOOK_PLATFORM", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a reader's Python runs it: capture/ compiled once, not every run
    best, cpu, out = float("inf"), float("inf"), ""
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        took = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode not in ok:
            sys.exit(f"`{' '.join(cmd)}` exited {p.returncode}:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
        used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        best, cpu, out = min(best, took), min(cpu, used), p.stdout + p.stderr
    return best, cpu, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m capture.commands.bench_status", description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[63, 250, 1000])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", metavar="DIR", help="build the books here and keep them (default: a temporary folder)")
    args = ap.parse_args(argv)
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-status-"))
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; minimum of {args.runs} runs, a new process each")
    print(f"{'experiments':>11}  {'fragments':>9}  {'status wall / CPU':>18}  {'no-op regenerate wall / CPU':>28}")
    figures: dict[int, float] = {}  # size -> the larger CPU figure of its two commands
    try:
        for n in args.sizes:
            root = base / f"book-{n}"
            t0 = time.perf_counter()
            key = make_book(root, n)
            made = time.perf_counter() - t0
            cli = [sys.executable, "-m", "capture", "--root", str(root)]
            st, st_cpu, out = timed(cli + ["status"], args.runs)
            if f"{key} (" not in out or f"{n} fresh" not in out:
                sys.exit(f"status of the {n}-experiment book is not all fresh:\n{out[:2000]}")
            rg, rg_cpu, out = timed(cli + ["regenerate", "--no-review"], args.runs)
            if f"{n} fresh" not in out:
                sys.exit(f"regenerate of the {n}-experiment book was not a no-op:\n{out[-2000:]}")
            figures[n] = max(st_cpu, rg_cpu)
            print(f"{n:>11}  {3 * n:>9}  {st:>8.2f} / {st_cpu:.2f} s  {rg:>17.2f} / {rg_cpu:.2f} s   (book made in {made:.0f} s)",
                  flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    over = over_budget(figures)
    for line in over:
        print(line)
    return 1 if over else 0


def over_budget(figures: dict[int, float]) -> list[str]:
    """One line per size of 1,000 experiments or more whose CPU figure is over the budget for that size: BUDGET_S
    at 1,000, growing linearly with N (a 5,000-experiment book may take five times as long). Smaller books are
    timed for the growth, not judged."""
    out = []
    for n, cpu in sorted(figures.items()):
        budget = BUDGET_S * n / 1000
        if n >= 1000 and cpu > budget:
            out.append(f"over budget at {n:,} experiments: {cpu:.2f} CPU s > {budget:g} s "
                       f"({BUDGET_S:g} s per 1,000 experiments)")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
