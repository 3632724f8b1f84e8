"""Nothing a run starts outlives it: a child that left the group with setsid, or a daemon that forked twice,
is killed when its run ends, however it ends (exit 0, a failure, a timeout, a signal to regenerate, SIGKILL
included: then the watchdog finds them by the run's token).

Real processes: the snippet starts a process that escapes and writes a heartbeat file every 50 ms; after the
run that process must be gone and the file must stop growing. Every row also checks that the good fragments
did not change. The last rows run the runner without a subreaper: the other way to find them (capture/system/reaper.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from capture.system import reaper, runner
from tests.faults.faultbook import GOODS, cli_env, key_files, run, snapshot, spawn_code, write
from tests.faults.test_faults import entry
from tests.faults.test_signals import alive, gone_within, kill_leftovers, linux_only, wait_for

ESCAPE = '''\
import os, subprocess, sys, time
kind, pidfile, ending = sys.argv[1], sys.argv[2], sys.argv[3]
beat = pidfile + ".beat"
LOOP = f"import time\\nwhile True:\\n    open({beat!r}, 'a').write('x')\\n    time.sleep(0.05)\\n"
if kind == "setsid":
    pid = subprocess.Popen([sys.executable, "-c", LOOP], start_new_session=True).pid
else:  # a daemon: fork, setsid, fork again; the middle process exits at once
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(w, str(os.getpid()).encode())
            os.close(w)
            exec(LOOP)
        os._exit(0)
    os.close(w)
    pid = int(os.read(r, 64))
    os.wait()
with open(pidfile + ".tmp", "w") as f:
    f.write(str(pid))
os.replace(pidfile + ".tmp", pidfile)
print(f"started a {kind} process", flush=True)
if ending == "hang":
    time.sleep(60)
if ending == "fail":
    raise SystemExit(3)
'''

# (escape, how the run ends, the victim's outcome)
ROWS = [
    ("setsid", "exit", "ok"),
    ("daemon", "exit", "ok"),
    ("setsid", "fail", "failed"),
    ("daemon", "fail", "failed"),
    ("setsid", "hang", "failed"),
    ("daemon", "hang", "failed"),
]


def setup_escape(fb, tmp_path, kind, ending):
    pidfile = tmp_path / f"{kind}-{ending}.pid"
    write(fb.root / "snippets/victim.py", ESCAPE)
    entry(f'script = "snippets/victim.py"\nargs = ["{kind}", "{pidfile}", "{ending}"]\ntimeout = 3\n')(fb)
    return pidfile


def assert_stopped(pidfile) -> None:
    pid = int(pidfile.read_text())
    try:
        assert gone_within([pid], 5), f"pid {pid} outlived its run"
        beat = pidfile.with_name(pidfile.name + ".beat")
        size = beat.stat().st_size if beat.exists() else 0
        time.sleep(0.3)
        assert (beat.stat().st_size if beat.exists() else 0) == size, "something still writes after the run"
    finally:
        kill_leftovers(pid)


@linux_only
@pytest.mark.parametrize("kind, ending, status", ROWS, ids=[f"{k}-{e}" for k, e, _ in ROWS])
def test_an_escaped_process_ends_with_its_run(fb, tmp_path, kind, ending, status):
    pidfile = setup_escape(fb, tmp_path, kind, ending)
    before = snapshot(fb)
    outcomes, log = run(fb, only=["victim"])
    assert outcomes["victim@cpu"].status == status, log
    assert_stopped(pidfile)
    after = snapshot(fb)
    for good in GOODS:
        assert key_files(after, good) == key_files(before, good)


@linux_only
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
@pytest.mark.parametrize("kind", ["setsid", "daemon"])
def test_an_escaped_process_ends_when_regenerate_is_stopped(fb, tmp_path, kind, sig):
    pidfile = setup_escape(fb, tmp_path, kind, "hang")
    entry(f'script = "snippets/victim.py"\nargs = ["{kind}", "{pidfile}", "hang"]\ntimeout = 60\n')(fb)
    before = snapshot(fb)
    proc = subprocess.Popen([sys.executable, "-c", spawn_code(), "--root", str(fb.root), "regenerate", "--no-review", "--only", "victim"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=cli_env(), start_new_session=True)
    try:
        assert wait_for(pidfile.is_file, 60), proc.communicate(timeout=30)[0] if proc.poll() is not None else "no pid file"
        os.kill(proc.pid, sig)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == (-sig if sig == signal.SIGKILL else 128 + sig), out
        assert_stopped(pidfile)
    finally:
        if proc.poll() is None:
            proc.kill()
    after = snapshot(fb)
    for good in GOODS:
        assert key_files(after, good) == key_files(before, good)
    assert {k: v for k, v in key_files(after, "victim@cpu").items() if ".failed." not in k} == \
        {k: v for k, v in key_files(before, "victim@cpu").items() if ".failed." not in k}


@linux_only
@pytest.mark.parametrize("table", ["proc", "ps"])
@pytest.mark.parametrize("kind", ["setsid", "daemon"])
def test_without_a_subreaper_the_run_token_finds_them(tmp_path, monkeypatch, kind, table):
    """What macOS does (no subreaper; `ps` with the environment), here with /proc or procps' `ps e`."""
    monkeypatch.setattr(reaper, "_set_subreaper", lambda on: False)
    if table == "ps":
        monkeypatch.setattr(reaper, "_PROC", tmp_path / "no-proc")
    pidfile = tmp_path / "pid"
    res = runner.run([sys.executable, "-c", ESCAPE, kind, str(pidfile), "exit"], cwd=tmp_path, env=dict(os.environ),
                     timeout=20, log=tmp_path / "log")
    assert res.exit_status == 0, res.text
    assert_stopped(pidfile)


def test_processes_alive_before_a_run_are_left_alone(tmp_path):
    """The runner kills what its run started, never this process's other children."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        res = runner.run([sys.executable, "-c", "print('hi')"], cwd=tmp_path, env=dict(os.environ), timeout=20, log=tmp_path / "log")
        assert res.exit_status == 0 and alive(other.pid)
    finally:
        other.kill()
        other.wait()
