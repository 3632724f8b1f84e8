"""Scratch space: one folder per process and run, kept (with its logs) after a failure, removed after success."""

from __future__ import annotations

import os

import pytest

from tests.faults.faultbook import PLAT, run, write


def run_dirs(fb):
    base = fb.scratch / "runs" / PLAT
    return sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


def test_each_run_gets_its_own_folder(fb):
    a, b = fb.run_dir(PLAT), fb.run_dir(PLAT)
    assert a != b and a.parent == b.parent == fb.scratch / "runs" / PLAT
    assert a.name.startswith(f"{os.getpid()}-") and b.name.startswith(f"{os.getpid()}-")


def test_failed_run_keeps_its_logs_and_a_later_success_cleans_up(fb):
    write(fb.root / "snippets/victim.py", "print('about to fail')\nraise SystemExit(2)\n")
    outcomes, _ = run(fb, only=["victim"])
    assert outcomes["victim@cpu"].status == "failed"
    [kept] = run_dirs(fb)
    assert "about to fail" in (kept / "victim@cpu.log").read_text()
    # a dead earlier run's folder is removed by the next clean run; a live process's folder is not
    dead = fb.scratch / "runs" / PLAT / "999999999-dead"
    live = fb.scratch / "runs" / PLAT / f"{os.getppid()}-live"
    dead.mkdir()
    live.mkdir()
    write(fb.root / "snippets/victim.py", "print('fixed')\n")
    outcomes, _ = run(fb, only=["victim"])
    assert outcomes["victim@cpu"].status == "ok"
    assert kept.name.split("-")[0] == str(os.getpid()) and kept in run_dirs(fb)  # its process is alive: kept
    assert dead not in run_dirs(fb) and live in run_dirs(fb)
    assert len(run_dirs(fb)) == 2  # the clean run removed its own folder


@pytest.mark.parametrize("bad", ["../x", "a/b", "", "UPPER"])
def test_scratch_folder_needs_a_valid_platform_key(fb, bad):
    with pytest.raises(ValueError, match="not a valid platform key"):
        fb.run_dir(bad)
    assert not (fb.scratch / "x").exists() and not (fb.root.parent / "x").exists()
