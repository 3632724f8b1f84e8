"""The bundle's archive: the fast xz preset when it fits the carry budget, the small one when not,
with or without the xz tool; either way the GPU machine's Python unpacks the same files."""

import os
import tarfile

import pytest

from capture import bundle


def _binaries(tmp_path):
    src = tmp_path / "bin"
    src.mkdir()
    # half incompressible, half very compressible: the two presets give different sizes
    (src / "noise").write_bytes(os.urandom(200_000))
    (src / "zeros").write_bytes(bytes(400_000))
    return src


def _unpacked(archive, tmp_path):
    out = tmp_path / "out"
    with tarfile.open(archive) as t:  # what run.sh does there
        t.extractall(out, filter="data")
    return {p.name: p.read_bytes() for p in out.iterdir()}


@pytest.mark.parametrize("xz_tool", [True, False])
def test_fast_preset_when_it_fits(tmp_path, monkeypatch, xz_tool):
    if not xz_tool:
        monkeypatch.setattr(bundle.shutil, "which", lambda name: None)
    elif not bundle.shutil.which("xz"):
        pytest.skip("no xz tool here")
    src = _binaries(tmp_path)
    notes = []
    size, level = bundle.pack(src, tmp_path / "a.tar.xz", budget=10**9, echo=notes.append)
    assert level == bundle.FAST_LEVEL and notes == []
    assert size == (tmp_path / "a.tar.xz").stat().st_size
    assert _unpacked(tmp_path / "a.tar.xz", tmp_path) == {p.name: p.read_bytes() for p in src.iterdir()}
    assert not (tmp_path / "a.tar.tmp").exists()


def test_small_preset_when_the_fast_one_is_over_budget(tmp_path):
    src = _binaries(tmp_path)
    fast, _ = bundle.pack(src, tmp_path / "fast.tar.xz", budget=10**9, echo=lambda s: None)
    notes = []
    size, level = bundle.pack(src, tmp_path / "a.tar.xz", budget=fast - 1, echo=notes.append)
    assert level == bundle.SMALL_LEVEL
    assert "over the" in notes[0] and f"xz -{bundle.SMALL_LEVEL}" in notes[0]
    assert _unpacked(tmp_path / "a.tar.xz", tmp_path) == {p.name: p.read_bytes() for p in src.iterdir()}


def test_a_bundle_over_budget_even_when_small_is_packed_with_a_warning(tmp_path):
    src = _binaries(tmp_path)
    notes = []
    size, level = bundle.pack(src, tmp_path / "a.tar.xz", budget=1000, echo=notes.append)
    assert level == bundle.SMALL_LEVEL and size > 1000
    assert notes[-1].startswith("warning:") and "carry limit" in notes[-1]
    assert (tmp_path / "a.tar.xz").is_file()
