"""capture.toolchains.assets: the pinned mermaid is installed once and copied only when it changed."""

from __future__ import annotations

import json
import subprocess

import pytest

from capture.toolchains import assets


def fake_npm_dir(tmp_path, locked="11.0.0", installed="11.0.0"):
    npm = tmp_path / "npm"
    lock = {"lockfileVersion": 3, "packages": {"node_modules/mermaid": {"version": locked}}}
    (npm / "node_modules" / "mermaid" / "dist").mkdir(parents=True)
    (npm / "package-lock.json").write_text(json.dumps(lock))
    if installed:
        (npm / "node_modules" / "mermaid" / "package.json").write_text(json.dumps({"version": installed}))
        (npm / assets.DIST).write_text("/* mermaid */")
    return npm


def no_subprocess(*args, **kwargs):
    raise AssertionError(f"npm must not run: {args}")


def test_installed_pinned_version_runs_no_npm(tmp_path, monkeypatch):
    npm = fake_npm_dir(tmp_path)
    monkeypatch.setattr(subprocess, "run", no_subprocess)
    assert assets.ensure_mermaid(npm, log=lambda _msg: None) == npm / assets.DIST


def test_copy_happens_once(tmp_path, monkeypatch):
    npm = fake_npm_dir(tmp_path)
    monkeypatch.setattr(subprocess, "run", no_subprocess)
    dest = assets.install_mermaid(tmp_path / "out" / "_static" / "mermaid", npm, log=lambda _msg: None)
    assert dest.read_text() == "/* mermaid */"
    assert assets.copy_if_changed(npm / assets.DIST, dest) is False
    (npm / assets.DIST).write_text("/* mermaid, new */")
    assert assets.copy_if_changed(npm / assets.DIST, dest) is True
    assert dest.read_text() == "/* mermaid, new */"


def test_version_mismatch_without_npm_says_how_to_get_it(tmp_path, monkeypatch):
    npm = fake_npm_dir(tmp_path, locked="11.1.0", installed="11.0.0")
    monkeypatch.setattr(assets.shutil, "which", lambda _name: None)
    with pytest.raises(assets.AssetError, match="npm is missing: install Node.js"):
        assets.ensure_mermaid(npm, log=lambda _msg: None)


def test_repository_pins_one_mermaid_11():
    version = assets.locked_version()
    assert version.split(".")[0] == "11", "mermaid 12 needs Node >= 22.12; the notes pin 11.x"
    spec = json.loads((assets.NPM_DIR / "package.json").read_text())["dependencies"]["mermaid"]
    assert spec == version, "package.json pins an exact version, the lock agrees"
