"""Run one command: stdout and stderr interleaved in order, a timeout and an output cap that kill the
whole process group, and no survivor when the parent dies.

The command runs in its own session (its own process group), so a timeout can kill everything it
started. Because it is not in the parent's group, a signal that kills the parent does not reach it;
two guards make it die with the parent anyway:

- a watchdog process (one per parent, started on first use, in its own session) holds the read end
  of a pipe whose write end only the parent has. When the parent dies for any reason, SIGKILL
  included, the pipe reaches end-of-file and the watchdog kills every group still registered, and
  every process that carries a registered run's token (those that left the group: capture/system/reaper.py).
  This works on Linux and macOS alike.
- on Linux the command's first process also asks the kernel for SIGKILL when its parent dies
  (prctl PR_SET_PDEATHSIG), which covers the moment before the watchdog knows the group.

SIGTERM and SIGHUP of the parent become `Interrupted` (a KeyboardInterrupt) while jobs run
(`signals_interrupt`), so they are handled like Ctrl-C: the running group is killed and the caller
records the interruption. `signals_deferred` holds them while a fragment is being published.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from capture.system import reaper

DEFAULT_MAX_OUTPUT = 256 * 1024  # bytes of output (stdout+stderr) an experiment may print
POLL_S = 0.05  # how often a running command's output size is looked at


@dataclass(frozen=True)
class RunResult:
    text: str
    exit_status: int | None  # None when killed (timeout, output cap)
    timed_out: bool
    wall_s: float
    over_cap: bool = False  # killed because its output passed max_output
    output_bytes: int = 0


def signal_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Send `sig` to a process group; False when there is nothing to signal.

    ProcessLookupError: the group is gone. PermissionError (EPERM): seen on macOS for a group whose
    leader has exited but is not reaped yet; the group's other members cannot be reached that way,
    which is why the caller reaps and the watchdog kills by group again.
    """
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _kill_group(proc: subprocess.Popen) -> None:
    if not signal_group(proc.pid):
        try:
            proc.kill()  # at least the leader
        except (ProcessLookupError, PermissionError):
            pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:  # stuck in the kernel (a driver call); nothing more to do from here
        pass
    signal_group(proc.pid)  # once reaped, the rest of the group (if any) is reachable again


# -- the watchdog --------------------------------------------------------------------------------

_WATCHDOG = r"""
import os, signal, sys
live = {}
for line in sys.stdin:
    op, pgid, token = line[:1], *line[1:].split()
    if op == "+":
        live[int(pgid)] = token
    else:
        live.pop(int(pgid), None)
for pgid in live:  # the parent is gone: nothing it started may outlive it
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
if live:  # and what left the group: the run's token in the environment finds it (capture/system/reaper.py)
    sys.path.insert(0, sys.argv[1])
    from capture.system.reaper import kill_tagged
    for token in live.values():
        kill_tagged(token)
"""


class _Watchdog:
    def __init__(self):
        self.pid = -1
        self.owner = -1
        self.proc: subprocess.Popen | None = None

    def ensure(self) -> None:
        if self.owner == os.getpid() and self.proc is not None and self.proc.poll() is None:
            return
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(Path(__file__).resolve().parents[2])],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, text=True, bufsize=1,
        )
        self.owner = os.getpid()
        self.pid = self.proc.pid

    def tell(self, op: str, pgid: int, token: str) -> None:
        try:
            self.ensure()
            assert self.proc is not None and self.proc.stdin is not None
            self.proc.stdin.write(f"{op}{pgid} {token}\n")
            self.proc.stdin.flush()
        except (OSError, ValueError):  # the watchdog died: the next run starts a new one
            self.proc = None


_watchdog = _Watchdog()


PR_SET_PDEATHSIG = 1


def _child_setup(parent: int):
    """preexec_fn: a snippet starts with every signal at its default and none blocked, however regenerate was
    started (`nohup`, `cmd &` and some CI runners start it with SIGINT or SIGHUP ignored, which exec would pass
    on); SIGKILL when its parent dies (Linux), and exit if that already happened."""

    def setup():
        for sig in signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP}:
            with contextlib.suppress(OSError, ValueError):
                signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        if reaper.PRCTL is not None:
            reaper.PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(137)

    return setup


# -- signals of the parent ----------------------------------------------------------------------

class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP during a regenerate, handled like Ctrl-C: kill the running group, record, stop."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def signals_interrupt():
    """Turn SIGTERM and SIGHUP into Interrupted (a KeyboardInterrupt) while jobs run; restored after.

    A signal this process was started with ignored stays ignored: `nohup` ignores SIGHUP so that a job
    survives the end of the terminal session, and a shell starts a background job (`cmd &` without job
    control) with SIGINT and SIGQUIT ignored so that a Ctrl-C meant for the foreground does not stop it.
    Python keeps an inherited SIGINT ignored for the same reason; regenerate does not undo that choice
    (`kill -TERM` still stops it cleanly). The snippets it runs start with every signal at its default
    (_child_setup), however regenerate itself was started.

    Only from the main thread (Python delivers signals there); elsewhere nothing changes.
    """
    if not hasattr(signal, "SIGHUP") or not threading_main():
        yield
        return

    def handler(signum, frame):
        raise Interrupted(signum)

    saved = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)
             if signal.getsignal(sig) != signal.SIG_IGN}
    try:
        yield
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)


def threading_main() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def signals_deferred():
    """Hold SIGINT, SIGTERM and SIGHUP while a fragment is published, so that a signal cannot land
    between its two renames; a held signal is delivered when the block ends."""
    sigs = {signal.SIGINT, signal.SIGTERM, *( [signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])}
    if not threading_main():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


# -- run -----------------------------------------------------------------------------------------

def _read_kept(log: Path, size: int, cap: int) -> str:
    """The text of the log, or for one over the cap its first `cap` bytes and its last lines."""
    if size <= cap:
        return log.read_bytes().decode("utf-8", errors="replace")
    tail_n = min(4096, cap)
    with open(log, "rb") as f:
        head = f.read(cap)
        f.seek(max(size - tail_n, cap))
        tail = f.read()
    cut = size - len(head) - len(tail)
    return (head.decode("utf-8", errors="replace") + f"\n[... {cut} bytes cut ...]\n" + tail.decode("utf-8", errors="replace"))


def run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float, log: Path,
        max_output: int = DEFAULT_MAX_OUTPUT) -> RunResult:
    """Run `cmd` in its own session; its combined output goes to `log` as it is produced.

    On timeout every process of the group is killed (a hung child cannot outlive it) and the
    text ends with "killed after N s". Past `max_output` bytes of output the group is killed
    too (over_cap) and the text is kept truncated. On any exception while waiting (Ctrl-C, or
    a SIGTERM/SIGHUP turned into an exception by the caller) the group is killed, then the
    exception propagates so the caller can record the interruption.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    timed_out = killed_for_output = False
    with contextlib.suppress(OSError, ValueError):
        _watchdog.ensure()
    tree = reaper.Run(keep={_watchdog.pid} - {-1})
    with open(log, "wb") as out:
        try:
            proc = subprocess.Popen(
                cmd, cwd=cwd, env=tree.env(env), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=_child_setup(os.getpid()),
            )
        except BaseException:
            tree.end()
            raise
        _watchdog.tell("+", proc.pid, tree.token)
        try:
            deadline = time.monotonic() + timeout
            while proc.poll() is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                elif os.fstat(out.fileno()).st_size > max_output:
                    killed_for_output = True
                else:
                    try:
                        proc.wait(timeout=min(POLL_S, left))
                    except subprocess.TimeoutExpired:
                        pass
                    continue
                _kill_group(proc)
                break
            else:
                # the leader exited; children it left behind in its group go too
                signal_group(proc.pid)
        except BaseException:
            _kill_group(proc)
            raise
        finally:
            tree.end()  # and those that left the group or the session (capture/system/reaper.py)
            _watchdog.tell("-", proc.pid, tree.token)
        size = os.fstat(out.fileno()).st_size
    wall = time.perf_counter() - start
    text = _read_kept(log, size, max_output)
    if timed_out:
        if text and not text.endswith("\n"):
            text += "\n"
        text += f"killed after {timeout:g} s\n"
    killed = timed_out or killed_for_output
    return RunResult(text=text, exit_status=None if killed else proc.returncode, timed_out=timed_out, wall_s=wall,
                     over_cap=size > max_output, output_bytes=size)
