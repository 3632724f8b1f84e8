"""How the suite and regenerate were started must not change what they do.

`nohup <README test command> &` starts everything with SIGHUP ignored, and a shell without job control
starts a background job with SIGINT and SIGQUIT ignored; exec passes "ignored" on to every child. The suite
sets the state it relies on (tests/conftest.py: own_process_state), regenerate's snippets start with every
signal at its default, and regenerate keeps a signal its starter chose to ignore (capture/system/runner.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.faults.faultbook import PLAT, REPO, cli_env, spawn_code, write
from tests.faults.test_faults import entry
from tests.faults.test_signals import wait_for

linux_only = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/<pid>/status")


def started_in_background_with_nohup():
    """preexec_fn: the state `nohup cmd &` (from a script) gives a process, plus an odd umask."""
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    os.umask(0o077)


def ignored_mask(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return int(line.split()[1], 16)
    raise AssertionError("no SigIgn")


def test_the_signal_tests_pass_when_pytest_starts_with_signals_ignored():
    """The README test command started in the background: the SIGINT (and SIGHUP) cases of test_signals pass."""
    env = {**os.environ, "LC_ALL": "POSIX", "LANG": "de_DE.ISO-8859-1"}
    env.pop("PYTEST_ADDOPTS", None)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/faults/test_signals.py", "-k", "SIGINT or SIGHUP"],
        cwd=REPO, env=env, preexec_fn=started_in_background_with_nohup, capture_output=True, text=True, timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0 and " passed" in r.stdout and "deselected" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]


@linux_only
def test_children_of_the_suite_start_with_default_signals():
    out = subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True).stdout
    mask = int(next(l for l in out.splitlines() if l.startswith("SigIgn:")).split()[1], 16)
    assert mask & ((1 << (signal.SIGINT - 1)) | (1 << (signal.SIGHUP - 1)) | (1 << (signal.SIGQUIT - 1))) == 0
    assert os.umask(0o022) == 0o022


SHOW_MASK = '''\
import sys, time
mask = next(l for l in open("/proc/self/status") if l.startswith("SigIgn:")).split()[1]
print("ignored", mask, flush=True)
open(sys.argv[1], "w").write("up")
time.sleep(float(sys.argv[2]))
'''


@linux_only
def test_regenerate_started_like_nohup_keeps_sighup_ignored_and_its_snippets_start_clean(fb, tmp_path):
    """SIGHUP to a regenerate started under nohup does not stop it (the starter asked for that); the snippet
    it runs has no signal ignored."""
    flag = tmp_path / "up"
    write(fb.root / "snippets/victim.py", SHOW_MASK)
    entry(f'script = "snippets/victim.py"\nargs = ["{flag}", "1.5"]\nmask = ["ignored \\\\S+"]\n')(fb)
    proc = subprocess.Popen([sys.executable, "-c", spawn_code(), "--root", str(fb.root), "regenerate", "--no-review", "--only", "victim"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=cli_env(),
                            preexec_fn=started_in_background_with_nohup)
    try:
        assert wait_for(flag.exists, 60), proc.communicate(timeout=10)[0] if proc.poll() is not None else "no snippet"
        os.kill(proc.pid, signal.SIGHUP)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "ok" in out and "interrupted" not in out, out
    text = (fb.fragments / PLAT / "victim@cpu.txt").read_text()
    mask = int(text.split()[1], 16)  # Python itself ignores SIGPIPE and SIGXFSZ at startup; nothing else may be
    assert mask & ~((1 << (signal.SIGPIPE - 1)) | (1 << (signal.SIGXFSZ - 1))) == 0, text
