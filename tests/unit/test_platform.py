"""Platform detection on macOS and Linux, run with a fake `sysctl` / `nvidia-smi` so it holds on any host."""

import os
import stat

import pytest

from capture.machines import identity
from capture.machines import platform as plat

FAKE_SYSCTL = """#!/bin/sh
# stands in for /usr/sbin/sysctl: `sysctl -n NAME`
[ "$1" = "-n" ] && shift
case "$1" in
  machdep.cpu.brand_string) [ -n "$FAKE_CHIP" ] && echo "$FAKE_CHIP" || exit 1 ;;
  sysctl.proc_translated) echo "${FAKE_TRANSLATED:-0}" ;;
  hw.memsize) echo 68719476736 ;;
  *) echo "sysctl: unknown oid '$1'" >&2; exit 1 ;;
esac
"""


def _script(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def mac(tmp_path, monkeypatch):
    """This host, seen as an Apple silicon Mac whose sysctl is a script in tmp_path."""
    monkeypatch.setattr(plat._pf, "system", lambda: "Darwin")
    monkeypatch.setattr(plat._pf, "machine", lambda: "arm64")
    monkeypatch.setattr(plat, "SYSCTL", str(_script(tmp_path / "sysctl", FAKE_SYSCTL)))
    for var in ("BOOK_PLATFORM", "BOOK_NO_GPU", "FAKE_TRANSLATED"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


CHIPS = [
    ("Apple M1", "macos-arm64-apple-m1"),
    ("Apple M1 Pro", "macos-arm64-apple-m1-pro"),
    ("Apple M1 Max", "macos-arm64-apple-m1-max"),
    ("Apple M1 Ultra", "macos-arm64-apple-m1-ultra"),
    ("Apple M2", "macos-arm64-apple-m2"),
    ("Apple M2 Pro", "macos-arm64-apple-m2-pro"),
    ("Apple M2 Max", "macos-arm64-apple-m2-max"),
    ("Apple M2 Ultra", "macos-arm64-apple-m2-ultra"),
    ("Apple M3", "macos-arm64-apple-m3"),
    ("Apple M3 Pro", "macos-arm64-apple-m3-pro"),
    ("Apple M3 Max", "macos-arm64-apple-m3-max"),
    ("Apple M3 Ultra", "macos-arm64-apple-m3-ultra"),
    ("Apple M4", "macos-arm64-apple-m4"),
    ("Apple M4 Pro", "macos-arm64-apple-m4-pro"),
    ("Apple M4 Max", "macos-arm64-apple-m4-max"),
]


@pytest.mark.parametrize("chip, key", CHIPS)
def test_apple_chip_names_the_key_and_the_display_name(mac, chip, key):
    mac.setenv("FAKE_CHIP", chip)
    p = plat.detect()
    assert (p.key, p.os, p.arch, p.gpu, p.gpu_name) == (key, "macos", "arm64", "apple", chip)
    # what the pages show is rebuilt from a fragment's machine record, as on a real capture
    machine = plat.machine_record(p)
    assert machine["os"].startswith("Darwin") and machine["gpu"] == chip
    ident = identity.from_metadata(p.key, [{"machine": machine}])
    assert ident.display_name == f"{chip} · macOS" and ident.gpu_vendor == "apple"


def test_sysctl_is_found_without_usr_sbin_on_path(mac, tmp_path):
    # a minimal PATH (launchd, `env -i`): the absolute path still answers
    mac.setenv("FAKE_CHIP", "Apple M2 Max")
    mac.setenv("PATH", str(tmp_path / "empty"))
    assert plat.detect().key == "macos-arm64-apple-m2-max"


def test_sysctl_falls_back_to_path_when_the_absolute_one_is_missing(mac, tmp_path):
    mac.setenv("FAKE_CHIP", "Apple M3 Pro")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _script(bindir / "sysctl", FAKE_SYSCTL)
    mac.setattr(plat, "SYSCTL", str(tmp_path / "no-such-sysctl"))
    mac.setenv("PATH", str(bindir))
    assert plat.detect().key == "macos-arm64-apple-m3-pro"


def test_unreadable_chip_is_an_error_naming_the_fix_not_a_vague_key(mac):
    mac.delenv("FAKE_CHIP", raising=False)
    with pytest.raises(plat.PlatformError) as e:
        plat.detect()
    msg = str(e.value)
    assert "cannot read the Apple chip" in msg and "BOOK_PLATFORM=macos-arm64-apple-" in msg
    assert "BOOK_NO_GPU=1" in msg


def test_named_by_hand_when_the_chip_cannot_be_read(mac):
    mac.delenv("FAKE_CHIP", raising=False)
    mac.setenv("BOOK_PLATFORM", "macos-arm64-apple-m2-max")
    p = plat.detect()
    assert p.key == "macos-arm64-apple-m2-max" and p.gpu == "apple"


def test_no_gpu_on_a_mac_is_a_cpu_key_without_asking_sysctl_for_the_chip(mac):
    mac.delenv("FAKE_CHIP", raising=False)
    mac.setenv("BOOK_NO_GPU", "1")
    p = plat.detect()
    assert p.key == "macos-arm64-cpu" and not p.has_gpu


def test_rosetta_python_is_refused_with_the_fix(mac):
    mac.setattr(plat._pf, "machine", lambda: "x86_64")
    mac.setenv("FAKE_CHIP", "Apple M1")
    mac.setenv("FAKE_TRANSLATED", "1")
    with pytest.raises(plat.PlatformError, match="Rosetta.*arm64 Python"):
        plat.detect()


@pytest.mark.parametrize("bad", ["Linux-x86_64", "../elsewhere", "mac m2", "", "a" * 81, "-cpu"])
def test_book_platform_must_be_a_valid_key(mac, bad):
    mac.setenv("FAKE_CHIP", "Apple M2")
    mac.setenv("BOOK_PLATFORM", bad)
    with pytest.raises(plat.PlatformError, match="BOOK_PLATFORM .* is not a valid platform key.*unset it"):
        plat.detect()


def test_linux_with_a_fake_nvidia_smi(tmp_path, monkeypatch):
    monkeypatch.setattr(plat._pf, "system", lambda: "Linux")
    monkeypatch.setattr(plat._pf, "machine", lambda: "x86_64")
    monkeypatch.delenv("BOOK_PLATFORM", raising=False)
    monkeypatch.delenv("BOOK_NO_GPU", raising=False)
    _script(tmp_path / "nvidia-smi", "#!/bin/sh\necho 'NVIDIA H200, 580.95.05'\n")
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ["PATH"])
    p = plat.detect()
    assert (p.key, p.gpu, p.gpu_name, p.gpu_driver) == ("linux-x86_64-nvidia-h200", "nvidia", "NVIDIA H200", "580.95.05")
    ident = identity.from_metadata(p.key, [{"machine": plat.machine_record(p)}])
    assert ident.display_name == "NVIDIA H200 · Linux"
    monkeypatch.setenv("BOOK_NO_GPU", "1")
    assert plat.detect().key == "linux-x86_64-cpu"


def test_machine_record_follows_the_platform_it_is_given():
    # a test that names a Linux platform gets a Linux record on any host (and the same for macOS)
    linux = plat.Platform(key="linux-x86_64-cpu", os="linux", arch="x86_64")
    mac = plat.Platform(key="macos-arm64-cpu", os="macos", arch="arm64")
    assert plat.machine_record(linux)["os"].startswith("Linux")
    assert plat.machine_record(mac)["os"].startswith("Darwin")
    assert identity.from_metadata(linux.key, [{"machine": plat.machine_record(linux)}]).display_name.startswith(
        "Linux x86_64 纯 CPU"
    )
