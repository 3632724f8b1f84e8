"""The Python versions pyproject.toml declares are exactly those uv.lock has every wheel for, and the
sessions pick an interpreter (or say how to get one) the way capture/toolchains/pythons.py promises."""

import tomllib
from pathlib import Path

import pytest

from capture.toolchains import pythons

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
LOCK = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))


def test_declared_versions_match_the_wheels_in_uv_lock():
    lowest = int(PYPROJECT["project"]["requires-python"].removeprefix(">=3."))
    supported = pythons.lock_supported(LOCK, lowest=lowest)
    assert pythons.declared(PYPROJECT) == supported, (
        f"pyproject.toml classifiers say {pythons.declared(PYPROJECT)}, uv.lock has every wheel for {supported}: "
        "make the classifiers list exactly those"
    )
    # the next version up is out for a named reason (today: sphinx-rust 0.0.2 ships cp311/cp312 only)
    nxt = int(supported[-1].split(".")[1]) + 1
    assert pythons.missing_wheels(LOCK, nxt), f"3.{nxt} has every wheel: declare it"


def _lock(*wheels):
    return {"package": [{"name": "p", "version": "1", "wheels": [{"url": f"https://x/{w}"} for w in wheels]}]}


@pytest.mark.parametrize(
    "wheels, minor, ok",
    [
        (["p-1-py3-none-any.whl"], 14, True),
        (["p-1-cp312-abi3-macosx_11_0_arm64.whl", "p-1-cp312-abi3-manylinux_2_28_x86_64.whl"], 14, True),
        (["p-1-cp312-abi3-macosx_11_0_arm64.whl", "p-1-cp312-abi3-manylinux_2_28_x86_64.whl"], 11, False),
        (["p-1-cp313-cp313-macosx_14_0_arm64.whl", "p-1-cp313-cp313-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"], 13, True),
        (["p-1-cp313-cp313-manylinux_2_17_x86_64.whl"], 13, True),  # Linux-only package: nothing missing on the Mac
        (["p-1-cp313-cp313-macosx_14_0_arm64.whl", "p-1-cp312-cp312-manylinux_2_17_x86_64.whl"], 13, False),
        (["p-1-cp314-cp314t-macosx_14_0_arm64.whl"], 14, False),  # free-threaded only
    ],
)
def test_wheel_tags(wheels, minor, ok):
    assert (pythons.missing_wheels(_lock(*wheels), minor) == []) is ok


def _root(tmp_path):
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "uv.lock").write_text((ROOT / "uv.lock").read_text())
    return tmp_path


def no_python(version):
    return None


def no_download(version):
    return False, "error: failed to download: dns error"


def test_a_declared_interpreter_running_nox_is_used_as_it_is(tmp_path):
    c = pythons.choose(_root(tmp_path), running=(3, 12), find=None, install=None)
    assert c.python is None and not c.env and not c.error


def test_otherwise_the_newest_declared_one_uv_finds(tmp_path):
    asked = []
    c = pythons.choose(_root(tmp_path), running=(3, 13),
                       find=lambda v: asked.append(v) or ("/usr/bin/python3.11" if v == "3.11" else None), install=None)
    assert asked == ["3.12", "3.11"] and c.python == "/usr/bin/python3.11" and "Python 3.13" in c.note


def test_otherwise_one_uv_downloads(tmp_path):
    got = set()
    c = pythons.choose(_root(tmp_path), running=(3, 14), find=lambda v: "/m/cpython-3.12/bin/python" if v in got else None,
                       install=lambda v: (got.add(v) or True, ""))
    assert got == {"3.12"} and c.python == "/m/cpython-3.12/bin/python" and "downloaded" in c.note


def test_offline_with_cargo_builds_the_missing_wheels_for_the_running_python(tmp_path):
    c = pythons.choose(_root(tmp_path), running=(3, 13), find=no_python, install=no_download, cargo="/usr/bin/cargo")
    assert c.python is None and not c.error
    assert c.env == {"PYO3_USE_ABI3_FORWARD_COMPATIBILITY": "1"}
    assert "sphinx-rust 0.0.2" in c.note and "dns error" in c.note


def test_offline_without_cargo_names_the_fix(tmp_path):
    c = pythons.choose(_root(tmp_path), running=(3, 14), find=no_python, install=no_download, cargo="")
    assert c.error and "nox runs on Python 3.14, for which sphinx-rust 0.0.2 has no wheel" in c.error
    assert "brew install python@3.12" in c.error and "rustup.rs" in c.error and "dns error" in c.error


def test_a_python_older_than_requires_python_is_never_kept(tmp_path):
    c = pythons.choose(_root(tmp_path), running=(3, 10), find=no_python, install=no_download, cargo="/usr/bin/cargo")
    assert c.error and "nox runs on Python 3.10" in c.error and "brew install python@3.12" in c.error
    assert "rustup" not in c.error  # building wheels cannot help below requires-python


def test_readme_commands_refuse_an_old_python3_first(tmp_path):
    import re
    import subprocess
    import sys

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"<!-- (?:main|test)-command -->\n```sh\n(.+)\n```", readme)
    assert len(commands) == 2
    for cmd in commands:
        guard, _, rest = cmd.partition(" && ")
        assert rest.startswith("python3 -m venv .venv-nox")
        # the guard passes on this interpreter, and stops one that pretends to be 3.9 with the fix named
        assert subprocess.run(guard.replace("python3", sys.executable, 1), shell=True).returncode == 0
        old = guard.replace("python3", sys.executable, 1).replace("sys.version_info", "(3, 9, 6)")
        r = subprocess.run(old, shell=True, capture_output=True, text=True)
        assert r.returncode == 1 and "3.11" in r.stderr and "README" in r.stderr
