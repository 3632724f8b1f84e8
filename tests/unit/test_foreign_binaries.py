"""Binaries for the wrong machine: `bundle` refuses a host that cannot build for the GPU machine, and a
binary that cannot execute here is a failure record that says why, not a traceback."""

import json
import struct

import pytest

from capture.machines import platform as plat
from capture.storage.store import Store
from tests.engine.book import CPU, make_book, run

MACHO_ARM64 = struct.pack("<II", 0xFEEDFACF, 0x0100000C) + bytes(24)
ELF_ARM64 = b"\x7fELF\x02\x01\x01" + bytes(11) + struct.pack("<H", 183) + bytes(12)


@pytest.mark.parametrize("system, machine", [("Darwin", "arm64"), ("Darwin", "x86_64"), ("Linux", "aarch64")])
def test_bundle_refuses_a_host_that_cannot_build_for_the_gpu_machine(monkeypatch, tmp_path, system, machine):
    from capture.toolchains.bundle import make_bundle
    from capture.storage.paths import Layout

    monkeypatch.setattr(plat._pf, "system", lambda: system)
    monkeypatch.setattr(plat._pf, "machine", lambda: machine)
    with pytest.raises(plat.PlatformError) as e:
        make_bundle(Layout(tmp_path), tmp_path / ".device", echo=lambda *a: None)
    msg = str(e.value)
    assert "the GPU machine that runs a bundle is linux x86_64" in msg
    assert "python -m capture bundle --candle-cuda --out .device" in msg and "nox -s regenerate" in msg
    assert not (tmp_path / ".device").exists()  # refused before building or writing anything


def test_bundle_host_check_passes_on_linux_x86_64(monkeypatch):
    monkeypatch.setattr(plat._pf, "system", lambda: "Linux")
    monkeypatch.setattr(plat._pf, "machine", lambda: "x86_64")
    plat.check_bundle_host()


@pytest.mark.parametrize("head, kind", [(MACHO_ARM64, "Mach-O arm64"), (ELF_ARM64, "ELF arm64"),
                                        (b"\xca\xfe\xba\xbe" + bytes(28), "Mach-O universal")])
def test_binary_kind_from_the_first_bytes(tmp_path, head, kind):
    (tmp_path / "b").write_bytes(head)
    assert plat.binary_kind(str(tmp_path / "b")) == kind


@pytest.fixture
def book(tmp_path, monkeypatch):
    monkeypatch.delenv("BOOK_PLATFORM", raising=False)
    return make_book(tmp_path / "book")


def test_a_binary_of_the_wrong_format_is_a_failure_record(book, tmp_path):
    prebuilt = tmp_path / "bin"
    prebuilt.mkdir()
    exe = prebuilt / "tiny"
    exe.write_bytes(MACHO_ARM64 + bytes(4096))  # what a bundle built on a Mac would carry
    exe.chmod(0o755)
    (prebuilt / "build-info.json").write_text(json.dumps({"features": [], "gpu_devices": {}, "built_on": "macos-arm64-apple-m2-max"}))

    outcomes, _ = run(book, platform=CPU, only=["tiny"], prebuilt=prebuilt)
    o = outcomes["tiny@cpu"]
    assert o.status == "failed" and "Exec format error" in o.message and "Mach-O arm64" in o.message
    failed = Store(book.fragments).read(CPU.key, "tiny@cpu", failed=True)
    assert failed is not None
    assert "Mach-O arm64 executable" in failed.text and "python -m capture bundle" in failed.text
    assert str(tmp_path) not in failed.text  # stored without this machine's paths
    assert Store(book.fragments).read(CPU.key, "tiny@cpu") is None  # nothing published as a good run
