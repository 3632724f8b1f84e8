"""The LLVM kit for burn's CUDA backend: checked against Cargo.lock, laid out once from pinned wheels
where tracel-llvm-bundler looks, and only for builds that turn burn's cuda on. No network: the
wheels are small fakes put in the kit's wheel cache, so pip is never asked unless a test says so."""

import os
import stat
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from capture.toolchains import llvmkit, wheelkit
from capture.storage.paths import Layout, cache_home, cargo_registry_src

REPO = Path(__file__).resolve().parents[2]

LLVM_CONFIG = """\
#!{python}
import sys
out = []
for a in sys.argv[1:]:
    if a == "--version":
        out.append("{version}")
    elif a == "--targets-built":
        out.append("{targets}")
print("\\n".join(out))
"""


def fake_wheels(folder: Path, version="23.1.1", targets="X86 NVPTX", specs=llvmkit.WHEELS) -> list[Path]:
    """Wheels named as the pins, laid out like mlc-llvm-static's (llvm-config in the first)."""
    folder.mkdir(parents=True, exist_ok=True)
    made = []
    for i, spec in enumerate(specs):
        name, ver = wheelkit.wheel_name(spec)
        whl = folder / f"{name}-{ver}-py3-none-manylinux_2_28_x86_64.whl"
        with zipfile.ZipFile(whl, "w") as z:
            if i == 0:
                z.writestr(f"{llvmkit.WHEEL_ROOT}/bin/llvm-config",
                           LLVM_CONFIG.format(python=sys.executable, version=version, targets=targets))
                z.writestr(f"{llvmkit.WHEEL_ROOT}/lib/libLLVMCore.a", b"!<arch>\n")
            else:
                z.writestr(f"{llvmkit.WHEEL_ROOT}/lib/libLLVMNVPTXCodeGen.a", b"!<arch>\n")
        made.append(whl)
    return made


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return cache_home()


def no_pip(monkeypatch):
    def refuse(specs, folder):
        raise AssertionError(f"pip was asked for {specs}")
    monkeypatch.setattr(wheelkit, "download", refuse)


# -- Cargo.lock --------------------------------------------------------------------------------
def test_the_repository_locks_the_bundler_the_kit_stands_in_for():
    assert llvmkit.check_lock(REPO / "crates/Cargo.lock") is True


def test_the_kit_is_where_the_locked_bundler_looks_for_it():
    """The folder and sentinel names, read from the bundler's own source in cargo's registry."""
    found = sorted(cargo_registry_src().glob(f"*/{llvmkit.BUNDLER}-{llvmkit.BUNDLER_VERSION}/src/config.rs"))
    if not found:
        pytest.skip(f"{llvmkit.BUNDLER} {llvmkit.BUNDLER_VERSION} is not in cargo's registry here (cargo fetch)")
    src = found[-1].read_text()
    version = src.split('TRACEL_LLVM_VERSION: &str = "')[1].split('"')[0]
    release = src.split('TRACEL_LLVM_RELEASE_NUMBER: &str = "')[1].split('"')[0]
    assert f"{version}-{release}" == llvmkit.BUNDLER_VERSION and version.startswith(llvmkit.LLVM_SERIES + ".")
    assert f'"{llvmkit.SENTINEL}"' in src and 'const TRACEL_LLVM_CACHE_DIRECTORY_NAME: &str = "tracel"' in src
    assert llvmkit.folder(Path("/d")) == Path(f"/d/tracel/tracel-llvm-{version}-{release}")


def test_the_pinned_wheels_are_of_the_bundlers_llvm_series():
    assert llvmkit.BUNDLER_VERSION.startswith(llvmkit.LLVM_SERIES + ".")
    assert all(wheelkit.wheel_name(w)[1].startswith(llvmkit.LLVM_SERIES + ".") for w in llvmkit.WHEELS)


def lock_with(tmp_path, version) -> Path:
    lock = tmp_path / "Cargo.lock"
    lock.write_text(textwrap.dedent(f"""\
        version = 4

        [[package]]
        name = "cubecl-llvm"
        version = "0.11.3"

        [[package]]
        name = "tracel-llvm-bundler"
        version = "{version}"
        """))
    return lock


def test_another_locked_bundler_is_refused_naming_the_line_and_both_fixes(tmp_path):
    lock = lock_with(tmp_path, "24.0.0-1")
    with pytest.raises(llvmkit.LockMismatch) as e:
        llvmkit.check_lock(lock)
    msg = str(e.value)
    assert msg.startswith(f"{lock}:8: tracel-llvm-bundler 24.0.0-1 is locked")
    assert llvmkit.FIX_LOCK in msg and "cargo update -p tracel-llvm-bundler --precise 23.1.0-4" in msg
    assert "capture/toolchains/llvmkit.py" in msg and "LLVM 24.0" in msg


def test_a_lock_without_the_bundler_needs_no_kit(tmp_path):
    lock = tmp_path / "Cargo.lock"
    lock.write_text('version = 4\n\n[[package]]\nname = "burn"\nversion = "0.22.1"\n')
    assert llvmkit.check_lock(lock) is False
    assert llvmkit.check_lock(lock_with(tmp_path, llvmkit.BUNDLER_VERSION)) is True


# -- which builds need it -----------------------------------------------------------------------
@pytest.mark.parametrize("features, expected", [
    (["exec-gpu/cuda"], True),
    (["design-bench/cuda", "design-burn/vulkan", "exec-gpu/vulkan"], False),
    (["design-bench/cuda", "design-burn/cuda", "design-burn/vulkan"], True),
    ([], False),
    (["exec-gpu/metal"], False),
])
def test_only_builds_that_turn_on_burns_cuda_need_llvm(features, expected):
    assert llvmkit.pulls_burn_cuda(REPO / "crates", features) is expected


def test_a_feature_that_turns_on_burns_cuda_through_another_is_seen(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c/Cargo.toml").write_text('[features]\ngpu = ["fast"]\nfast = ["burn?/cuda"]\nother = ["burn/vulkan"]\n')
    assert llvmkit.pulls_burn_cuda(tmp_path, ["c/gpu"]) and not llvmkit.pulls_burn_cuda(tmp_path, ["c/other"])


def test_a_build_without_burns_cuda_installs_nothing(tmp_path, cache, monkeypatch):
    no_pip(monkeypatch)
    assert llvmkit.build_env(Layout(REPO), ["exec-gpu/vulkan"]) == {}
    assert not llvmkit.data_home().exists()


# -- installing ---------------------------------------------------------------------------------
def test_install_lays_out_the_bundlers_folder_once(cache, monkeypatch):
    fake_wheels(cache / "llvm-wheels")
    no_pip(monkeypatch)
    env = llvmkit.build_env(Layout(REPO), ["exec-gpu/cuda"], log=lambda s: None)
    assert env == {"XDG_DATA_HOME": str(cache / "llvm-data")}
    kit = llvmkit.folder()
    assert kit == cache / "llvm-data/tracel/tracel-llvm-23.1.0-4"
    assert (kit / llvmkit.SENTINEL).is_file() and (kit / "lib/libLLVMNVPTXCodeGen.a").is_file()
    assert os.stat(kit / "bin/llvm-config").st_mode & stat.S_IXUSR
    assert (kit / wheelkit.STAMP).read_text().split() == list(llvmkit.WHEELS)

    # unchanged pins: nothing is unpacked again (the same inode, not even a rewrite of the stamp)
    before = (kit.stat().st_ino, (kit / wheelkit.STAMP).stat().st_mtime_ns)
    monkeypatch.setattr(wheelkit.zipfile, "ZipFile", lambda *a, **k: pytest.fail("unpacked again"))
    assert llvmkit.build_env(Layout(REPO), ["exec-gpu/cuda"], log=lambda s: None) == env
    assert (kit.stat().st_ino, (kit / wheelkit.STAMP).stat().st_mtime_ns) == before


def test_a_changed_pin_lays_the_folder_out_again_from_the_cache(cache, monkeypatch, tmp_path):
    fake_wheels(cache / "llvm-wheels")
    no_pip(monkeypatch)
    llvmkit.install(log=lambda s: None)
    (llvmkit.folder() / "lib/stale.a").write_bytes(b"x")
    newer = ("mlc-llvm-static==23.1.2", "mlc-llvm-static-extra-targets==23.1.2")
    fake_wheels(cache / "llvm-wheels", version="23.1.2", specs=newer)
    monkeypatch.setattr(llvmkit, "WHEELS", newer)
    llvmkit.install(log=lambda s: None)
    assert (llvmkit.folder() / wheelkit.STAMP).read_text().split() == list(newer)
    assert not (llvmkit.folder() / "lib/stale.a").exists()


def test_pip_downloads_only_the_missing_wheels(cache, monkeypatch):
    wheels = cache / "llvm-wheels"
    fake_wheels(wheels, specs=llvmkit.WHEELS[:1])
    asked = []

    def pip(specs, folder):
        asked.append(list(specs))
        fake_wheels(folder, specs=specs)  # what pip would put there
    monkeypatch.setattr(wheelkit, "download", pip)
    llvmkit.install(log=lambda s: None)
    assert asked == [[llvmkit.WHEELS[1]]]


def test_a_failed_download_says_what_is_needed(cache, monkeypatch):
    class R:
        returncode, stdout, stderr = 1, "", "ERROR: Could not find a version that satisfies the requirement"
    monkeypatch.setattr(wheelkit.subprocess, "run", lambda cmd, **kw: R() if "pip" in cmd else pytest.fail(cmd))
    with pytest.raises(wheelkit.KitError, match="PyPI must be reachable once"):
        llvmkit.install(log=lambda s: None)
    assert not llvmkit.folder().exists()


@pytest.mark.parametrize("version, targets, why", [
    ("22.1.8", "X86 NVPTX", "says LLVM 22.1.8"),
    ("23.1.1", "X86", "has no NVPTX target"),
])
def test_a_kit_of_the_wrong_llvm_is_refused_and_nothing_is_left(cache, monkeypatch, version, targets, why):
    fake_wheels(cache / "llvm-wheels", version=version, targets=targets)
    no_pip(monkeypatch)
    with pytest.raises(wheelkit.KitError, match=why):
        llvmkit.install(log=lambda s: None)
    parent = llvmkit.folder().parent
    assert not parent.exists() or not any(parent.iterdir())  # no half kit, no sentinel, no leftovers


def test_the_build_step_turns_kit_problems_into_build_errors(tmp_path, cache, monkeypatch):
    from capture.toolchains.build import BuildError, cargo_build

    layout = Layout(tmp_path)
    (tmp_path / "crates/c").mkdir(parents=True)
    (tmp_path / "crates/c/Cargo.toml").write_text('[features]\ncuda = ["burn/cuda"]\n')
    lock_with(tmp_path / "crates", "24.0.0-1")
    monkeypatch.setattr("capture.toolchains.build.toolchain_problem", lambda layout: None)
    with pytest.raises(BuildError, match=r"Cargo.lock:8: tracel-llvm-bundler 24.0.0-1 is locked"):
        cargo_build(layout, ["c/cuda"], tmp_path / "log")


def test_the_cuda_kit_uses_book_cuda_home_as_it_is(tmp_path, monkeypatch):
    from capture.toolchains import cudakit

    no_pip(monkeypatch)
    monkeypatch.setenv("BOOK_CUDA_HOME", str(tmp_path / "mine"))
    with pytest.raises(wheelkit.KitError, match=r"BOOK_CUDA_HOME=.*mine has no bin/nvcc"):
        cudakit.install(log=lambda s: None)
    (tmp_path / "mine/bin").mkdir(parents=True)
    (tmp_path / "mine/bin/nvcc").write_text("")
    assert cudakit.install(log=lambda s: None) == tmp_path / "mine"
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["bin"]  # nothing written into it
