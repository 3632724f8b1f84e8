"""Every process a run starts ends with the run, also one that left the run's process group or session.

The runner kills the run's process group at its end (capture/system/runner.py), but a child that called
setsid(), or a daemon that forked twice, is in another group: it would live on, re-parented to init,
and could still write files long after the fragment was published. So at the end of every run
(normal exit, failure, timeout, Ctrl-C) `Run.end` kills what is left, the whole set at once with
SIGKILL and again until nothing is left:

- Linux: during a run this process is a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so an
  orphan of the run is re-parented to it, not to init: it stays a descendant, found in /proc and
  reaped here.
- Elsewhere (macOS has no subreaper and no /proc): the run's environment carries BOOK_RUN_TOKEN, which
  every process it starts inherits; at the end `ps -E` lists the processes of this user with their
  environment, and those with the token are killed, with their descendants. No root needed. Limit: a
  process that both leaves the run's tree and clears its environment escapes.

The processes that were this process's children before the run (the watchdog, another tool) are
never touched, nor anything below them.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

TOKEN = "BOOK_RUN_TOKEN"
PR_SET_CHILD_SUBREAPER = 36
_PROC = Path("/proc")


def _prctl():
    """prctl from libc on Linux (None elsewhere, or when libc cannot be loaded); the runner uses it too."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None


PRCTL = _prctl()


def _set_subreaper(on: bool) -> bool:
    return PRCTL is not None and PRCTL(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0


def alive(pid: int) -> bool:
    """Whether process `pid` exists (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- the process table ---------------------------------------------------------------------------

def _table_proc() -> dict[int, tuple[int, str]]:
    """pid -> (ppid, state) from /proc."""
    out = {}
    for d in _PROC.iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        out[int(d.name)] = (int(fields[1]), fields[0])
    return out


def _table_ps(env: bool = False) -> dict[int, tuple[int, str, str]]:
    """pid -> (ppid, state, command [with environment]) from ps (BSD and procps alike)."""
    cmd = ["ps", "-A", "-ww", "-o", "pid=", "-o", "ppid=", "-o", "stat=", "-o", "command="]
    if env:
        cmd.insert(1, "-E" if sys.platform == "darwin" else "e")
    try:
        ps = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace")
        text = ps.communicate(timeout=30)[0]
    except (OSError, subprocess.TimeoutExpired):
        return {}
    out = {}
    for line in text.splitlines():
        parts = line.split(None, 3)
        if len(parts) >= 3 and parts[0].isdigit() and parts[1].isdigit():
            out[int(parts[0])] = (int(parts[1]), parts[2][:1], parts[3] if len(parts) > 3 else "")
    out.pop(ps.pid, None)  # ps lists itself
    return out


def _table() -> dict[int, tuple[int, str]]:
    if _PROC.joinpath("self", "stat").exists():
        return _table_proc()
    return {pid: (ppid, st) for pid, (ppid, st, _) in _table_ps().items()}


def _below(table: dict[int, tuple], roots: set[int]) -> set[int]:
    """Every process under `roots` (not the roots themselves)."""
    children: dict[int, list[int]] = {}
    for pid, row in table.items():
        children.setdefault(row[0], []).append(pid)
    found, todo = set(), list(roots)
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in found and c not in roots:
                found.add(c)
                todo.append(c)
    return found


def _with_token(token: str) -> set[int]:
    """Processes whose environment holds TOKEN=token (this user's; others' environments are not readable)."""
    needle = f"{TOKEN}={token}"
    if _PROC.joinpath("self", "environ").exists():
        found = set()
        for d in _PROC.iterdir():
            if d.name.isdigit():
                with contextlib.suppress(OSError):
                    if needle.encode() in (d / "environ").read_bytes().split(b"\0"):
                        found.add(int(d.name))
        return found
    return {pid for pid, (_, _, cmd) in _table_ps(env=True).items() if needle in cmd.split()}


def kill_tagged(token: str, patience: float = 5.0) -> None:
    """Kill every process that carries the run's token, and what is under them (the watchdog's last act, when
    the process that ran the run is gone and can no longer reap its tree)."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        table = _table()
        tagged = _with_token(token)
        alive = {p for p in tagged | _below(table, tagged) if p in table and table[p][1] != "Z"} - {os.getpid()}
        if not alive:
            return
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


# -- one run -------------------------------------------------------------------------------------

class Run:
    """What `runner.run` does around one command: `env()` before it starts, `end()` after its leader is reaped."""

    def __init__(self, keep: set[int] = frozenset()):
        self.me = os.getpid()
        self.token = f"{self.me}-{secrets.token_hex(6)}"
        self.subreaper = _set_subreaper(True)
        table = _table()
        # this process's children before the run (the watchdog...): never touched, nor what is under them
        self.keep = {pid for pid, row in table.items() if row[0] == self.me} | set(keep)

    def env(self, env: dict[str, str]) -> dict[str, str]:
        return {**env, TOKEN: self.token}

    def _left(self) -> tuple[set[int], set[int]]:
        """(alive, zombies) of the run: under this process (not under `keep`), or carrying the token."""
        table = _table()
        mine = _below(table, {self.me}) - self.keep - _below(table, self.keep)
        if not self.subreaper:
            tagged = _with_token(self.token) - {self.me} - self.keep
            mine |= tagged | _below(table, tagged)
        alive = {p for p in mine if p in table and table[p][1] != "Z"}
        zombies = {p for p in mine if p in table and table[p][1] == "Z" and table[p][0] == self.me}
        return alive, zombies

    def end(self, patience: float = 10.0) -> list[int]:
        """Kill and reap every process of the run still there; the pids that were killed."""
        killed: list[int] = []
        deadline = time.monotonic() + patience
        try:
            while time.monotonic() < deadline:
                alive, zombies = self._left()
                for pid in alive:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
                for pid in zombies:
                    with contextlib.suppress(ChildProcessError, OSError):
                        os.waitpid(pid, os.WNOHANG)
                if not alive and not zombies:
                    break
                time.sleep(0.01)
        finally:
            if self.subreaper:
                _set_subreaper(False)
        return killed
