"""The bundle's archive: fast xz when it fits the carry budget, one solid stream with a dictionary that
spans the tar when not (binaries that repeat one another cost little more than one), with or without
the xz tool; either way the GPU machine's Python unpacks the same files."""

import os
import tarfile

import pytest

from capture.toolchains import bundle

MiB = 2**20


def _binaries(tmp_path):
    """Two 'binaries' that repeat each other beyond what fast xz's dictionary and blocks can see."""
    src = tmp_path / "bin"
    src.mkdir()
    body = os.urandom(3 * MiB)
    (src / "exec-gpu").write_bytes(body + b"exec-gpu main")
    (src / "design-burn").write_bytes(body[:1000] + b"\x00\x01\x02\x03" + body[1004:] + b"design-burn main")
    (src / "small").write_bytes(bytes(100_000))
    return src


def _unpacked(archive, tmp_path):
    out = tmp_path / "out"
    with tarfile.open(archive) as t:  # what run.sh does there
        t.extractall(out, filter="data")
    return {p.name: p.read_bytes() for p in out.iterdir()}


def _tools(monkeypatch, xz_tool):
    if not xz_tool:
        monkeypatch.setattr(bundle.shutil, "which", lambda name: None)
    elif not bundle.shutil.which("xz"):
        pytest.skip("no xz tool here")


@pytest.mark.parametrize("xz_tool", [True, False])
def test_fast_when_it_fits(tmp_path, monkeypatch, xz_tool):
    _tools(monkeypatch, xz_tool)
    src = _binaries(tmp_path)
    notes = []
    packing = bundle.pack(src, tmp_path / "a.tar.xz", budget=10**9, echo=notes.append)
    assert packing.mode == "fast" and packing.level == bundle.FAST_LEVEL and notes == []
    assert packing.bytes == (tmp_path / "a.tar.xz").stat().st_size > 6 * MiB  # the repeat was not seen
    assert _unpacked(tmp_path / "a.tar.xz", tmp_path) == {p.name: p.read_bytes() for p in src.iterdir()}
    assert not (tmp_path / "a.tar.tmp").exists()


@pytest.mark.parametrize("xz_tool", [True, False])
def test_solid_when_fast_is_over_budget_and_a_repeat_costs_only_its_differences(tmp_path, monkeypatch, xz_tool):
    _tools(monkeypatch, xz_tool)
    src = _binaries(tmp_path)
    notes = []
    packing = bundle.pack(src, tmp_path / "a.tar.xz", budget=5 * MiB, echo=notes.append)
    assert packing.mode == "solid" and packing.level == bundle.SOLID_LEVEL and packing.dict_bytes == bundle.MIN_DICT
    assert packing.bytes < 3.2 * MiB  # the second 3 MiB binary is nearly free
    assert "over the 5 MiB budget" in notes[0] and "64 MiB dictionary" in notes[0] and len(notes) == 1
    assert _unpacked(tmp_path / "a.tar.xz", tmp_path) == {p.name: p.read_bytes() for p in src.iterdir()}


def test_over_budget_even_solid_is_packed_with_a_warning(tmp_path):
    src = _binaries(tmp_path)
    notes = []
    packing = bundle.pack(src, tmp_path / "a.tar.xz", budget=1000, echo=notes.append)
    assert packing.mode == "solid" and packing.bytes > 1000
    assert notes[-1].startswith("warning:") and "carry limit" in notes[-1]
    assert (tmp_path / "a.tar.xz").is_file()


def test_the_solid_dictionary_holds_the_whole_tar_within_limits():
    assert bundle.solid_dict(1) == bundle.MIN_DICT == 64 * MiB
    assert bundle.solid_dict(64 * MiB) == 64 * MiB and bundle.solid_dict(64 * MiB + 1) == 128 * MiB
    assert bundle.solid_dict(700 * MiB) == 1024 * MiB and bundle.solid_dict(5000 * MiB) == bundle.MAX_DICT


def test_members_largest_first(tmp_path):
    src = _binaries(tmp_path)
    assert bundle.members(src) == ["design-burn", "exec-gpu", "small"]


def test_the_vulkan_loader_comes_along_for_a_vulkan_role_or_variant():
    assert bundle.runs_vulkan({"gpu_devices": {"burn": "cuda"}, "gpu_variants": {"burn": ["vulkan"]}})
    assert bundle.runs_vulkan({"gpu_devices": {"burn": "vulkan", "candle": "cuda"}})
    assert not bundle.runs_vulkan({"gpu_devices": {"burn": "cuda", "candle": "cuda"}, "gpu_variants": {}})


def test_a_binary_relinked_by_another_build_is_refused(tmp_path):
    """A CPU build that relinks target/release/X while the bundle builds the GPU X must not be shipped."""
    import os
    import time

    import pytest

    from capture.toolchains.build import Binaries
    from capture.toolchains.prebuilt import overwritten

    exe = tmp_path / "exec-gpu"
    exe.write_bytes(b"gpu")
    done = time.time()
    bins = Binaries(tmp_path, [], None, finished={"exec-gpu": done})
    overwritten(bins, "exec-gpu", "exec-gpu")  # as the GPU step left it
    os.utime(exe, (done + 60, done + 60))  # relinked by a build that ran afterwards
    with pytest.raises(SystemExit, match="rewritten by another cargo build"):
        overwritten(bins, "exec-gpu", "exec-gpu")
    overwritten(Binaries(tmp_path, [], None), "exec-gpu", "exec-gpu")  # no times known: nothing to check
