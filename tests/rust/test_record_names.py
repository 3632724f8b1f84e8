"""candle (design-bench) and burn (design-burn) report every mode they share in the same records.

Pages put the two frameworks side by side by record name (`{records-table}` rows of
candle-chains@cpu and burn-chains@cpu read `chains.per_eval.median{chain=chain8}` from both), so a
name or tag that differs between the two programs silently empties half a table. Both programs
report these modes through `bookrec::modes`; this runs the real release binaries on the CPU with
small arguments and compares what they wrote. The build is the one `regenerate` makes, in the
shared target dir, so `capture check` later in the same CI run reuses it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from capture.toolchains.build import cargo_build
from capture.plan.manifest import load
from capture.storage.paths import Layout, find_root
from capture.machines.platform import detect
from capture.machines.roles import CPU_DEVICE, cargo_features

pytestmark = pytest.mark.slow

LAYOUT = Layout(find_root())
PROGRAMS = {"candle": "design-bench", "burn": "design-burn"}
# small arguments for each shared mode: seconds on 2 cores
ARGS = {"matmul": ["64"], "mlp": [], "chains": ["64", "3"], "smallop": ["1000"]}
RUN_TAGS = ("framework", "device")  # their values differ between the two programs by design


def shared_modes() -> list[str]:
    """The modes `bookrec::modes::SHARED` lists (one place: the Rust source)."""
    src = (LAYOUT.crates / "bookrec/src/modes.rs").read_text(encoding="utf-8")
    m = re.search(r"pub const SHARED: \[&str; \d+\] = \[([^\]]*)\]", src)
    assert m, "crates/bookrec/src/modes.rs: no `pub const SHARED` list"
    return re.findall(r'"([^"]+)"', m.group(1))


@pytest.fixture(scope="module")
def binaries(tmp_path_factory):
    crates = {e.crate: e.framework for e in load(LAYOUT.manifest).experiments if e.crate}
    features = cargo_features(detect(), crates, LAYOUT.crates)
    return cargo_build(LAYOUT, features, tmp_path_factory.mktemp("build") / "cargo-build.log")


def run(binaries, tmp_path, framework: str, mode: str) -> tuple[list[dict], str]:
    program, device = PROGRAMS[framework], CPU_DEVICE[framework]
    out = tmp_path / f"{program}-{mode}.jsonl"
    env = {**os.environ, "BOOK_RECORDS": str(out)}
    cmd = [str(binaries.path(program)), mode, device, *ARGS[mode]]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stderr}"
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return records, proc.stdout


def signature(records: list[dict]) -> set[tuple]:
    """Each record's name with its tags, the framework/device pair left out."""
    return {(r["name"], tuple(sorted((k, v) for k, v in r["tags"].items() if k not in RUN_TAGS))) for r in records}


def skeleton(stdout: str, framework: str) -> list[str]:
    """The output lines with the program's prefix (`candle cpu(gemm)`, `burn flex`) and every number masked."""
    lines = [re.sub(rf"^{framework} [^\s:]+", "<run>", line) for line in stdout.splitlines()]
    return [re.sub(r"\d+(\.\d+)?(ns|µs|ms|s)?", "<n>", line) for line in lines]


def test_every_shared_mode_has_small_arguments():
    assert sorted(shared_modes()) == sorted(ARGS)


@pytest.mark.parametrize("mode", sorted(ARGS))
def test_candle_and_burn_write_the_same_records(binaries, tmp_path, mode):
    got = {fw: run(binaries, tmp_path, fw, mode) for fw in PROGRAMS}
    (candle, candle_out), (burn, burn_out) = got["candle"], got["burn"]
    assert candle and burn, f"{mode}: no records written"
    for fw, records in (("candle", candle), ("burn", burn)):
        assert {(r["tags"].get("framework"), r["tags"].get("device")) for r in records} == {(fw, CPU_DEVICE[fw])}
    only_candle, only_burn = signature(candle) - signature(burn), signature(burn) - signature(candle)
    assert not only_candle and not only_burn, f"{mode}: only candle: {sorted(only_candle)}; only burn: {sorted(only_burn)}"
    # and the reader sees the same lines on both sides, up to the program's name and the numbers
    assert skeleton(candle_out, "candle") == skeleton(burn_out, "burn")
