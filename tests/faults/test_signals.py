"""Signals: whatever kills `regenerate`, the snippet's whole process group dies with it, and what can be
recorded is recorded ("interrupted (SIG...)" beside the last good fragment, which stays as it was).

Real processes: `python -m capture regenerate` in its own session, a snippet that starts a grandchild
and sleeps; the test signals the regenerate process and then looks for survivors.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from capture.system import runner
from capture.storage.store import Store
from tests.faults.faultbook import PLAT, cli_env, key_files, snapshot, spawn_code, write
from tests.faults.test_faults import entry

VICTIM = "victim@cpu"

HANG = '''\
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
print("working", flush=True)
time.sleep(600)
'''


def alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        return True


def gone_within(pids, seconds=15.0) -> bool:
    t = time.monotonic()
    while time.monotonic() - t < seconds:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def wait_for(pred, seconds=60.0) -> bool:
    t = time.monotonic()
    while time.monotonic() - t < seconds:
        if pred():
            return True
        time.sleep(0.05)
    return False


def start_hang(fb, tmp_path):
    pidfile = tmp_path / "pids"
    write(fb.root / "snippets/victim.py", HANG)
    entry(f'script = "snippets/victim.py"\nargs = ["{pidfile}"]\ntimeout = 120\n')(fb)
    proc = subprocess.Popen(
        [sys.executable, "-c", spawn_code(), "--root", str(fb.root), "regenerate", "--no-review", "--only", "victim"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=cli_env(), start_new_session=True,
    )
    assert wait_for(pidfile.is_file), proc.communicate(timeout=30)[0] if proc.poll() is not None else "no pid file"
    leader, child = (int(x) for x in pidfile.read_text().split())
    return proc, leader, child


def kill_leftovers(*pids):
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="looks for survivors in /proc")


@linux_only
@pytest.mark.parametrize("sig, target", [
    (signal.SIGINT, "pid"), (signal.SIGTERM, "pid"), (signal.SIGHUP, "pid"), (signal.SIGKILL, "pid"),
    (signal.SIGINT, "group"), (signal.SIGTERM, "group"), (signal.SIGKILL, "group"),
], ids=lambda v: v.name if isinstance(v, signal.Signals) else v)
def test_signal_to_regenerate_leaves_no_survivor(fb, tmp_path, sig, target):
    before = snapshot(fb)
    proc, leader, child = start_hang(fb, tmp_path)
    try:
        (os.kill if target == "pid" else os.killpg)(proc.pid, sig)
        out, _ = proc.communicate(timeout=60)
        assert gone_within([leader, child]), f"survivors after {sig.name}: {[p for p in (leader, child) if alive(p)]}"
    finally:
        kill_leftovers(leader, child)
        if proc.poll() is None:
            proc.kill()
    after = snapshot(fb)
    def mine(snap):
        return {k: v for k, v in key_files(snap, VICTIM).items() if ".failed." not in k}
    assert mine(after) == mine(before), "the last good fragment changed"
    for good in ("good-a@cpu", "good-b@cpu"):
        assert key_files(after, good) == key_files(before, good)
    failed = Store(fb.fragments).read(PLAT, VICTIM, failed=True)
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL and failed is None  # nothing can be recorded by a killed process
    else:
        name = "Ctrl-C" if sig == signal.SIGINT else sig.name
        assert failed is not None and failed.text.startswith(f"interrupted ({name})"), out
        assert proc.returncode == 128 + sig, out
        assert "interrupted" in out


@linux_only
def test_child_dies_with_its_parent_even_without_the_watchdog(fb, tmp_path):
    """PR_SET_PDEATHSIG: kill the watchdog first, then SIGKILL the parent: the snippet's first process still dies."""
    proc, leader, child = start_hang(fb, tmp_path)
    try:
        watchdogs = [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(int(p)) == proc.pid and int(p) != leader]
        assert watchdogs, "no watchdog next to the snippet"
        for w in watchdogs:
            os.kill(w, signal.SIGKILL)
        assert gone_within(watchdogs, 5)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert gone_within([leader]), "the snippet outlived its parent"
    finally:
        kill_leftovers(leader, child)


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


@pytest.mark.parametrize("error", [PermissionError, ProcessLookupError])
def test_killpg_errors_are_handled(tmp_path, monkeypatch, error):
    """killpg raising EPERM (macOS, a group whose leader exited unreaped) or ESRCH never escapes the runner;
    the leader is still killed and reaped."""
    calls = []

    def killpg(pgid, sig):
        calls.append(pgid)
        raise error(1, "refused")

    monkeypatch.setattr(runner.os, "killpg", killpg)
    t = time.monotonic()
    res = runner.run([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"],
                     cwd=tmp_path, env=dict(os.environ), timeout=1, log=tmp_path / "log")
    assert time.monotonic() - t < 20
    assert res.timed_out and res.exit_status is None and res.text.endswith("killed after 1 s\n")
    assert calls, "the group was not signalled"
    assert runner.signal_group(999999999) is False


def test_output_cap_kills_a_runaway_writer_quickly(tmp_path):
    t = time.monotonic()
    res = runner.run([sys.executable, "-c", "while True: print('y' * 1000)"], cwd=tmp_path, env=dict(os.environ),
                     timeout=60, log=tmp_path / "log", max_output=10_000)
    assert time.monotonic() - t < 10
    assert res.over_cap and res.exit_status is None and not res.timed_out
    assert "bytes cut" in res.text and len(res.text.encode()) < 10_000 + 4096 + 100
