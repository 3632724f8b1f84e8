"""Run one command: stdout and stderr interleaved in order, a timeout that kills the whole process group."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunResult:
    text: str
    exit_status: int | None  # None when killed by the timeout
    timed_out: bool
    wall_s: float


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float, log: Path) -> RunResult:
    """Run `cmd` in its own session; its combined output goes to `log` as it is produced.

    On timeout every process of the group is killed (a hung child cannot outlive it)
    and the text ends with "killed after N s". On Ctrl-C the group is killed too, then
    KeyboardInterrupt propagates so the caller can record the interruption.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
        except BaseException:
            _kill_group(proc)
            raise
        else:
            # the leader exited; children it left behind in its group go too
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    wall = time.perf_counter() - start
    text = log.read_bytes().decode("utf-8", errors="replace")
    if timed_out:
        if text and not text.endswith("\n"):
            text += "\n"
        text += f"killed after {timeout:g} s\n"
    return RunResult(text=text, exit_status=None if timed_out else proc.returncode, timed_out=timed_out, wall_s=wall)
