"""Lint and unit-test the crates: rustfmt, clippy with burn's Metal path on, cargo test.

    python -m capture.commands.lint        (`nox -s lint` runs it after ruff; `nox -s tests` runs `lint`)

Every cargo command runs in crates/ against the shared target dir and in the release profile,
so it reuses what `regenerate` builds there (build scripts and proc macros; for `cargo test`
every dependency) instead of compiling burn and candle once more in the dev profile.

clippy turns on each crate's Apple-only features that type-check off Apple: burn's Metal backend
(`metal` of exec-gpu and design-burn), so that Mac-only code path is compiled in every CI run.
candle's `metal` feature cannot be checked off Apple (objc2 refuses to compile), so design-bench has
none; nor can its `accelerate` (accelerate-src 0.3.2 links `kind = framework`, which rustc rejects off
Apple targets even in a check build), so the Accelerate experiments are built on the Mac only.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import tomllib

from capture.toolchains.build import toolchain_problem
from capture.storage.paths import Layout, find_root

METAL = "metal"  # the feature name that turns burn's Metal backend on off macOS
APPLE_CHECKED = (METAL,)  # not candle's `accelerate`: accelerate-src does not compile off Apple


def apple_features(layout: Layout, names: tuple[str, ...] = APPLE_CHECKED) -> list[str]:
    """`crate/feature` for every workspace member whose Cargo.toml declares one of `names`."""
    ws = tomllib.loads((layout.crates / "Cargo.toml").read_text(encoding="utf-8"))
    out = []
    for member in ws["workspace"]["members"]:
        toml = tomllib.loads((layout.crates / member / "Cargo.toml").read_text(encoding="utf-8"))
        out += [f"{toml['package']['name']}/{n}" for n in names if n in toml.get("features", {})]
    return out


def metal_features(layout: Layout) -> list[str]:
    """`crate/metal` for every workspace member whose Cargo.toml declares a `metal` feature."""
    return apple_features(layout, (METAL,))


# Lints allowed for now, each with its reason. items_after_test_module: bookrec/src/lib.rs has
# report_own_size after its test module; moving it changes the tokens of a file every Rust fragment
# hashes, i.e. a full re-capture of every platform. Move it with the next real change to bookrec.
ALLOWED = ["-A", "clippy::items_after_test_module"]


def commands(layout: Layout) -> list[list[str]]:
    metal = ",".join(apple_features(layout))
    return [
        ["cargo", "fmt", "--all", "--check"],
        ["cargo", "clippy", "--release", "--workspace", "--all-targets", "--locked",
         *(["--features", metal] if metal else []), "--", "-D", "warnings", *ALLOWED],
        ["cargo", "test", "--release", "--workspace", "--all-targets", "--locked"],
    ]


TEST_RESULT = re.compile(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")


def run(cmd: list[str], layout: Layout, env: dict) -> tuple[int, list[int]]:
    """Run one cargo command, its output passed through; for `cargo test` also sum its results."""
    proc = subprocess.Popen(cmd, cwd=layout.crates, env=env, stdout=subprocess.PIPE, text=True)
    totals = [0, 0, 0]
    assert proc.stdout is not None
    for line in proc.stdout:
        print(line, end="", flush=True)
        m = TEST_RESULT.search(line)
        if m:
            totals = [t + int(n) for t, n in zip(totals, m.groups())]
    return proc.wait(), totals


def main() -> int:
    layout = Layout(find_root())
    problem = toolchain_problem(layout)
    if problem:
        print(f"lint: {problem}", file=sys.stderr)
        return 2
    env = {**os.environ, "CARGO_TARGET_DIR": str(layout.cargo_target)}
    for cmd in commands(layout):
        shown = f"(cd crates && {' '.join(cmd)})"
        print(f"lint: {shown}", file=sys.stderr, flush=True)
        t = time.perf_counter()
        code, (passed, failed, ignored) = run(cmd, layout, env)
        took = time.perf_counter() - t
        if code != 0:
            hint = {"fmt": "; `cargo fmt --all` in crates/ fixes the formatting",
                    "clippy": "; fix what clippy reports above (`no such command: clippy`: `rustup component add clippy`)",
                    }.get(cmd[1], "")
            print(f"lint: failed (exit {code}) after {took:.0f} s: {shown}{hint}", file=sys.stderr)
            return 1
        print(f"lint: ok in {took:.0f} s", file=sys.stderr)
        if cmd[1] == "test":
            # one closing line for the crates' unit tests, as test runners write it
            print(f"cargo-test: {passed} passed, {failed} failed, {ignored} skipped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
