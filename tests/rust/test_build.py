"""Building: the GPU bundle shares the CPU build's target dir; the toolchain pin is enforced."""

from __future__ import annotations

import subprocess

import pytest

from capture.toolchains.build import cargo_build, older_than_pin, toolchain_problem
from capture.toolchains.prebuilt import build_prebuilt
from tests.engine.book import make_book, write

MANIFEST = '''\
[defaults]
timeout = 60

[[experiment]]
id = "tiny"
framework = "burn"
crate = "tiny"
args = ["{device}"]
roles = ["cpu", "gpu"]
'''

FEATURE_MAIN = 'fn main() { println!("cuda={}", cfg!(feature = "cuda")); }\n'


def output(exe) -> str:
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def book(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("CARGO_TARGET_DIR", str(tmp_path / "target"))
    monkeypatch.setenv("BOOK_BURN_GPU", "cuda")
    monkeypatch.delenv("BOOK_PLATFORM", raising=False)
    layout = make_book(tmp_path / "book", MANIFEST)
    write(layout.crates / "tiny/src/main.rs", FEATURE_MAIN)
    return layout


def test_bundle_builds_in_the_shared_target_dir_and_keeps_its_binaries_apart(book, tmp_path):
    cpu = cargo_build(book, [], tmp_path / "cpu.log")
    assert cpu.dir == tmp_path / "target/release" and output(cpu.path("tiny")) == "cuda=false"

    info = build_prebuilt(book, "cuda", tmp_path / "bin", echo=lambda *a: None)
    # the tiny crate declares vulkan too: burn's NVIDIA build turns it on beside cuda, as a variant
    assert info["features"] == ["tiny/cuda", "tiny/vulkan"] and output(tmp_path / "bin/tiny") == "cuda=true"
    assert info["gpu_devices"] == {"burn": "cuda"} and info["gpu_variants"] == {"burn": ["vulkan"]}
    # one target dir holds both feature sets; no target dir of the bundle's own
    assert len([p for p in (tmp_path / "target/release/deps").glob("tiny-*") if not p.suffix]) == 2
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").glob("cargo-target*"))

    # the next CPU build is a no-op that puts the CPU binary back; the packed one is untouched
    again = cargo_build(book, [], tmp_path / "cpu-again.log")
    assert output(again.path("tiny")) == "cuda=false" and output(tmp_path / "bin/tiny") == "cuda=true"
    assert "Compiling" not in (tmp_path / "cpu-again.log").read_text()


def test_a_rustc_older_than_the_pin_is_named():
    problem = older_than_pin("rustc 1.80.1 (3f5fd8dd4 2024-08-06)", "1.95.0")
    assert problem and "1.80.1 is older than 1.95.0" in problem and "rustup toolchain install 1.95.0" in problem
    assert older_than_pin("rustc 1.95.0 (59807616e 2026-04-14)", "1.95.0") is None
    assert older_than_pin("rustc 1.96.2 (0 2026-06-01)", "1.95.0") is None


def test_the_repository_pins_the_toolchain_it_runs():
    from capture.storage.paths import Layout, find_root

    assert toolchain_problem(Layout(find_root())) is None


def test_lint_type_checks_burns_metal_path_and_not_candles():
    from capture.commands.lint import apple_features, commands, metal_features
    from capture.storage.paths import Layout, find_root

    layout = Layout(find_root())
    # burn's Metal backend type-checks on Linux; candle's does not (objc2), so design-bench has no `metal`
    assert sorted(metal_features(layout)) == ["design-burn/metal", "exec-gpu/metal"]
    clippy = next(c for c in commands(layout) if c[1] == "clippy")
    assert "--release" in clippy and clippy[clippy.index("--features") + 1].count("/metal") == 2
    # candle's Accelerate (the Mac-only experiments' `features`) does not compile off Apple: not checked here
    assert apple_features(layout, ("accelerate",)) == ["design-bench/accelerate"]
    assert "design-bench/accelerate" not in clippy[clippy.index("--features") + 1].split(",")
