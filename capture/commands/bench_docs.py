"""The author loop, timed: a strict rebuild with nothing changed, and after editing one page.

    python -m capture.commands.bench_docs [--runs 5] [--page docs/eager.md] [--python .venv/bin/python]

Works on a scratch copy of the repository (the files git tracks or would track), so the working
tree is never touched, with the same command as `nox -s docs` (sphinx-build -W -n --keep-going).
After one full build and one warm-up rebuild it times `--runs` rebuilds of each kind and prints
min, median and spread, with the machine's load and cores (the figures mean little without them).
Budgets (issue 15, on 2 cores): no change <= 1.5 s, one-page edit <= 2.5 s. Stdlib only.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUDGET_S = {"no change": 1.5, "one-page edit": 2.5}


def scratch_copy(dest: Path) -> Path:
    """The repository's files (tracked or not ignored) in dest; node_modules of the npm dirs linked, not copied."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True)
    for rel in filter(None, listed.stdout.decode().split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    for npm in ("docs/_mermaid",):
        if (ROOT / npm / "node_modules").is_dir():
            (dest / npm / "node_modules").symlink_to(ROOT / npm / "node_modules")
    return dest


CPU: dict[str, list[float]] = {}  # kind of rebuild -> CPU seconds (user + system) of each


def build(python: str, repo: Path, out: Path, kind: str = "") -> float:
    """Wall seconds of one strict build; its CPU seconds are kept in CPU[kind] (a figure a busy machine
    distorts less: on an idle one the single-threaded build takes about its CPU time)."""
    cmd = [python, "-m", "sphinx", "-W", "-n", "--keep-going", "-q", "-b", "html", "-c", ".", "docs", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.setdefault(kind, []).append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        sys.exit(f"the strict build failed in {repo} ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return took


def summary(name: str, times: list[float]) -> str:
    t, cpu = sorted(times), sorted(CPU.get(name, [0.0]))
    verdict = "within" if t[0] <= BUDGET_S[name] else "OVER"
    return (f"{name:>14}: min {t[0]:.2f} s, median {statistics.median(t):.2f} s, spread {t[-1] - t[0]:.2f} s "
            f"over {len(t)} runs; budget {BUDGET_S[name]} s: {verdict} (CPU time min {cpu[0]:.2f} s, median {statistics.median(cpu):.2f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m capture.commands.bench_docs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed rebuilds of each kind (default: %(default)s)")
    parser.add_argument("--page", default="docs/eager.md", help="the page edited between rebuilds (default: %(default)s)")
    parser.add_argument("--python", default=sys.executable, help="the Python with Sphinx installed (default: this one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-docs-") as tmp:
        repo = scratch_copy(Path(tmp, "repo"))
        out = Path(tmp, "html")
        page = repo / args.page
        original = page.read_text(encoding="utf-8")
        load0 = os.getloadavg()
        full = build(args.python, repo, out)
        build(args.python, repo, out)  # warm-up: caches, bytecode, the OS's file cache
        same = [build(args.python, repo, out, "no change") for _ in range(args.runs)]
        edits = []
        for i in range(args.runs):
            page.write_text(original + f"\n基准测试的第 {i} 次编辑。\n", encoding="utf-8")
            edits.append(build(args.python, repo, out, "one-page edit"))
        load1 = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores; 1/5/15-min load {load0[0]:.2f}/{load0[1]:.2f}/{load0[2]:.2f} before, "
          f"{load1[0]:.2f}/{load1[1]:.2f}/{load1[2]:.2f} after; PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}")
    print(f"full build (cold output folder): {full:.2f} s")
    print(summary("no change", same))
    print(summary("one-page edit", edits) + f" ({args.page})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
