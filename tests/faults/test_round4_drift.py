"""Faults, round 4, part A (issue 43): the drift table (docs/drift.json) and the history it is measured from, as safe
as the fragments (capture/evidence/driftfile.py, capture/storage/datafile.py).

One case per row, through the real command line in a child process (a hang is a timeout, not a blocked suite), on a
throwaway book; rows marked `git` get a git repository with three captures of the victim and a committed drift
table. Every row asserts the message (parts in order, " … " between them), the exit status, no traceback, and that
no file of the book changed by a byte (a symlink's target, a FIFO's kind) but those it names in `changes`.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from capture.storage.paths import Layout
from tests.faults.faultbook import PLAT, REPO, cli_env, spawn_code, write

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
DRIFT = "docs/drift.json"
VJSON = f"docs/_fragments/{PLAT}/victim@cpu.json"
OTHER = "linux-x86_64-other-box"
GIT_ENV = {"GIT_AUTHOR_NAME": "fault", "GIT_AUTHOR_EMAIL": "fault@example.invalid", "GIT_COMMITTER_NAME": "fault",
           "GIT_COMMITTER_EMAIL": "fault@example.invalid", "GIT_CONFIG_NOSYSTEM": "1"}
TIMEOUT = 90


# -- the books ----------------------------------------------------------------------------------------------
def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
                          check=True, capture_output=True, text=True, env={**os.environ, **GIT_ENV}).stdout


def recapture(L: Layout, value: float, started: str) -> None:
    """The victim captured again (its metadata as a new capture on the same host would have it)."""
    js = L.fragments / PLAT / "victim@cpu.json"
    meta = json.loads(js.read_text())
    meta.update(started=started, run=f"run-{started}")
    meta["records"] = [{"name": "victim.value", "value": value, "unit": "s", "tags": {}}]
    js.write_text(json.dumps(meta, indent=1) + "\n")


def run_cli(root: Path, argv: list[str], env: dict | None = None, shell: str = "", timeout: float = TIMEOUT):
    cmd = [sys.executable, "-c", spawn_code(), "--root", str(root), *argv]
    e = cli_env(**(env or {}))
    if shell:
        import shlex
        cmd = ["bash", "-c", shell.format(cmd=" ".join(shlex.quote(c) for c in cmd))]
    p = subprocess.run(cmd, env={**e, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout, errors="replace")  # one stream, in the order it was written
    return p.returncode, p.stdout


def make_git_book(L: Layout, values=(1.5, 1.6, 1.55)) -> Layout:
    """The fault book as a repository: three commits of the victim's captures, then the drift table they give."""
    write(L.root / ".gitignore", "/.capture/\n*.tmp\n/docs/_fragments/.lock\n")
    git(L.root, "init", "-q")
    for i, v in enumerate(values):
        if i:
            recapture(L, v, f"2026-12-0{i + 1}T10:00:00+00:00")
        git(L.root, "add", "-A")
        git(L.root, "commit", "-q", "-m", f"capture {i + 1}")
    rc, out = run_cli(L.root, ["drift"])
    assert rc == 0 and (L.root / DRIFT).is_file(), out
    git(L.root, "add", "-A")
    git(L.root, "commit", "-q", "-m", "drift")
    return L


def tree(root: Path) -> dict[str, object]:
    """Every entry of the book but .git, .capture and the store's lock: a regular file's bytes, a symlink's target,
    anything else its kind (never opened)."""
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        dirnames[:] = [d for d in dirnames if not (rel_dir == Path(".") and d in (".git", ".capture"))]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if name == ".lock":
                continue
            mode = os.lstat(p).st_mode
            out[rel] = p.read_bytes() if stat.S_ISREG(mode) else ("link", os.readlink(p)) if stat.S_ISLNK(mode) \
                else ("kind", stat.S_IFMT(mode))
    return out


# -- setups ---------------------------------------------------------------------------------------------------
def with_claim(L: Layout) -> None:
    """A page whose claim compares a timing: status and noise evaluate it with the drift table."""
    write(L.root / "docs/timing.md", "# t\n\n:::{claim} victim@cpu:victim.value < 100\nfast\n:::\n")


def drift_text(text: str | bytes) -> Callable[[Layout], None]:
    def setup(L: Layout) -> None:
        with_claim(L)
        p = L.root / DRIFT
        p.unlink(missing_ok=True)
        write(p, text if isinstance(text, bytes) else text.encode())
    return setup


def table(median) -> str:
    """A drift table whose median drift on the platform is `median` (written as given, JSON or not)."""
    return '{\n "platforms": {\n  "%s": {\n   "median": {\n    "drift": %s\n   }\n  }\n }\n}\n' % (PLAT, median)


def drift_fifo(L: Layout) -> None:
    with_claim(L)
    (L.root / DRIFT).unlink(missing_ok=True)
    os.mkfifo(L.root / DRIFT)


def drift_link(target: str) -> Callable[[Layout], None]:
    def setup(L: Layout) -> None:
        with_claim(L)
        (L.root / DRIFT).unlink(missing_ok=True)
        (L.root / DRIFT).symlink_to(target)
    return setup


def drift_link_out(L: Layout) -> None:
    """docs/drift.json -> a file outside the repository that holds a valid table."""
    outside = L.root.parent / "outside-drift.json"
    outside.write_bytes((L.root / DRIFT).read_bytes() if (L.root / DRIFT).is_file() else table("1.5").encode())
    drift_link(str(outside))(L)


def outside_untouched(L: Layout, out: str) -> None:
    outside = L.root.parent / "outside-drift.json"
    assert outside.read_bytes() == git(L.root, "show", f"HEAD:{DRIFT}").encode(), "the file the link pointed to changed"
    assert not (L.root / DRIFT).is_symlink() and json.loads((L.root / DRIFT).read_text())["platforms"], out


def drift_is_a_table(L: Layout, out: str) -> None:
    assert not (L.root / DRIFT).is_symlink() and stat.S_ISREG(os.lstat(L.root / DRIFT).st_mode), out
    assert PLAT in json.loads((L.root / DRIFT).read_text())["platforms"], out


def both_extremes_named(L: Layout, out: str) -> None:
    assert "victim.value = 1e+300 s" in out and "victim.value = 1e-300 s" in out, out
    drift_is_a_table(L, out)


def no_temporary(L: Layout, out: str) -> None:
    assert not list((L.root / "docs").glob(".drift.json.*")), (list((L.root / "docs").iterdir()), out)


def shallow(L: Layout) -> Layout:
    clone = L.root.parent / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{L.root}", str(clone)], check=True, capture_output=True)
    return Layout(clone)


def nothing_made(L: Layout, out: str) -> None:
    assert not (L.fragments / ".lock").exists(), "a refused drift made the store's lock file"


def not_yours(L: Layout) -> None:
    """The repository belongs to another user: git's safe.directory check refuses it (root: a real chown; else a git
    on PATH that answers as git does)."""
    if IS_ROOT:
        for dirpath, dirnames, filenames in os.walk(L.root):
            for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
                os.lchown(name, 65534, 65534)
    else:
        fake = L.root.parent / "fakebin"
        write(fake / "git", "#!/bin/sh\necho \"fatal: detected dubious ownership in repository at '$2'\" >&2\n"
                            "echo \"To add an exception for this directory, call:\" >&2\nexit 128\n")
        os.chmod(fake / "git", 0o755)


def not_yours_env(L: Layout) -> dict:
    empty = L.root.parent / "empty-gitconfig"
    empty.write_text("")
    env = {"GIT_CONFIG_GLOBAL": str(empty), "GIT_CONFIG_NOSYSTEM": "1"}
    if not IS_ROOT:
        env["PATH"] = f"{L.root.parent / 'fakebin'}:{os.environ.get('PATH', '')}"
    return env


def no_git_on_path(L: Layout) -> dict:
    empty = L.root.parent / "emptybin"
    empty.mkdir(exist_ok=True)
    return {"PATH": str(empty)}


def platform_json(how: str, key: str = PLAT) -> Callable[[Layout], None]:
    def setup(L: Layout) -> None:
        d = L.fragments / key
        if key != PLAT and not d.exists():
            shutil.copytree(L.fragments / PLAT, d)
        p = d / "platform.json"
        ident = json.loads(p.read_text())
        p.unlink()
        if how == "fifo":
            os.mkfifo(p)
        elif how == "corrupt":
            p.write_text("{")
        elif how == "list":
            p.write_text(json.dumps({**ident, "fingerprint": [1]}))
    return setup


def extreme_history(L: Layout) -> None:
    """Two more committed captures of the victim: 1e300 s, then 1e-300 s (their ratio is no double)."""
    for v, day in ((1e300, "2026-12-04"), (1e-300, "2026-12-05")):
        recapture(L, v, f"{day}T10:00:00+00:00")
        git(L.root, "commit", "-q", "-am", f"capture {v}")


@dataclass
class Row:
    id: str
    category: str
    setup: Callable[[Layout], Layout | None]
    argv: list[str]
    message: str
    rc: int
    git: bool = False  # a repository with the victim's history and a committed drift table
    changes: tuple[str, ...] = ()  # files (relative to the book) that may change
    env: Callable[[Layout], dict] | None = None
    shell: str = ""
    then: Callable[[Layout, str], None] | None = None


ST = ["status"]
NOISE = ["noise", "--seeds", "1"]
REBUILD = "rebuild it with: python -m capture drift"
UNCHANGED = f"{DRIFT} is unchanged"

ROWS = [
    # -- the history drift needs: refused, nothing written, exit 2 -----------------------------------------------
    Row("drift-shallow-clone", "history", shallow, ["drift"],
        f"is a shallow clone (git clone --depth) … fetch the whole history with: git -C … fetch --unshallow … {UNCHANGED}", 2, git=True,
        then=nothing_made),
    Row("drift-check-shallow-clone", "history", shallow, ["drift", "--check"], "is a shallow clone … fetch --unshallow", 2, git=True),
    Row("drift-no-repository", "history", lambda L: None, ["drift"],
        f"is not in a git repository (no .git) … run it in a clone of the book … {UNCHANGED}", 2),
    Row("noise-no-repository", "history", lambda L: None, NOISE, "is not in a git repository (no .git)", 2),
    Row("drift-no-git", "history", lambda L: None, ["drift"], f"git is not installed here … {UNCHANGED}", 2, git=True,
        env=no_git_on_path),
    Row("drift-another-users-repository", "history", not_yours, ["drift"],
        "git refuses to read the repository at … belongs to another user … git config --global --add safe.directory "
        f"… {UNCHANGED}", 2, git=True, env=not_yours_env),
    Row("noise-another-users-repository", "history", not_yours, NOISE,
        "git refuses to read the repository at … git config --global --add safe.directory", 2, git=True, env=not_yours_env),
    Row("drift-platform-json-missing", "history", platform_json("missing"), ["drift"],
        f"{PLAT}/platform.json is missing … restore it (git -C … checkout -- docs/_fragments/{PLAT}/platform.json) … "
        f"{UNCHANGED}", 2, git=True),
    Row("drift-other-platform-json-missing", "history", platform_json("missing", OTHER), ["drift"],
        f"{OTHER}/platform.json is missing … {UNCHANGED}", 2, git=True,
        changes=tuple(f"docs/_fragments/{OTHER}/{n}" for n in ("good-a@cpu.json", "good-a@cpu.txt", "good-b@cpu.json",
                                                              "good-b@cpu.txt", "victim@cpu.json", "victim@cpu.txt"))),
    Row("drift-platform-json-fifo", "history", platform_json("fifo"), ["drift"],
        f"{PLAT}/platform.json: not a valid platform identity … is a FIFO (named pipe), not a regular file … {UNCHANGED}", 2,
        git=True),
    Row("drift-platform-json-corrupt", "history", platform_json("corrupt"), ["drift"],
        f"{PLAT}/platform.json: not a valid platform identity (JSONDecodeError … {UNCHANGED}", 2, git=True),
    Row("drift-platform-json-bad-fingerprint", "history", platform_json("list"), ["drift"],
        f"{PLAT}/platform.json: 'fingerprint' is a JSON list, not an object … {UNCHANGED}", 2, git=True),

    # -- a bad drift table: one located line with the command that rebuilds it, never a traceback or a hang ------
    Row("status-drift-truncated", "bad table", drift_text("{"), ST, f"{DRIFT}:1: not valid JSON (Expecting property name enclosed in double quotes at column 2); {REBUILD}", 2),
    Row("status-drift-empty", "bad table", drift_text(""), ST, f"{DRIFT}: empty … {REBUILD}", 2),
    Row("status-drift-platforms-5", "bad table", drift_text('{\n "platforms": 5\n}\n'), ST,
        f"{DRIFT}:2: platforms is 5, not an object … {REBUILD}", 2),
    Row("status-drift-400-digits", "bad table", drift_text(table("1" + "0" * 399)), ST,
        f"{DRIFT}:5: platforms.{PLAT}.median.drift is a 400-digit number, not a factor (a finite number >= 1); {REBUILD}", 2),
    Row("status-drift-nan", "bad table", drift_text(table("NaN")), ST, f"{DRIFT}:5: platforms.{PLAT}.median.drift is NaN", 2),
    Row("status-drift-half", "bad table", drift_text(table("0.5")), ST, f"{DRIFT}:5: platforms.{PLAT}.median.drift is 0.5, not a factor", 2),
    Row("status-drift-infinity", "bad table", drift_text(table("Infinity")), ST, f"{DRIFT}:5: platforms.{PLAT}.median.drift is inf", 2),
    Row("status-drift-future-format", "bad table", drift_text('{"format": 2, "platforms": {}}'), ST,
        f"{DRIFT}:1: format 2: made by a newer capture/ … update this checkout (git pull), or rebuild it here with", 2),
    Row("status-drift-unknown-kind", "bad table", drift_text(table("1.5").replace('"median"', '"medain"')), ST,
        f"{DRIFT}:4: platforms.{PLAT}: unknown kind 'medain'", 2),
    Row("status-drift-bad-platform", "bad table", drift_text(table("1.5").replace(PLAT, "Linux CPU")), ST,
        f"{DRIFT}:3: platform 'Linux CPU' is not a valid platform key", 2),
    Row("status-drift-not-utf8", "bad table", drift_text(b'{"platforms": {}, "about": "\xff"}'), ST, f"{DRIFT}:1: not UTF-8", 2),
    Row("status-drift-fifo", "bad table", drift_fifo, ST, f"{DRIFT}: a FIFO (named pipe), not a regular file; {REBUILD}", 2),
    Row("status-drift-dev-zero", "bad table", drift_link("/dev/zero"), ST, f"{DRIFT}: a symlink leaving the repository (to /dev/zero)", 2),
    Row("status-drift-link-out", "bad table", drift_link_out, ST, f"{DRIFT}: a symlink leaving the repository (to … {REBUILD}", 2),
    Row("status-drift-folder", "bad table", lambda L: (with_claim(L), (L.root / DRIFT).mkdir()), ST,
        f"{DRIFT}: a folder, not a file; move it away, then {REBUILD}", 2),
    Row("drift-check-truncated", "bad table", drift_text("{"), ["drift", "--check"], f"{DRIFT}:1: not valid JSON (Expecting property name enclosed in double quotes at column 2); {REBUILD}", 1, git=True),
    Row("drift-check-half", "bad table", drift_text(table("0.5")), ["drift", "--check"], f"{DRIFT}:5: platforms.{PLAT}.median.drift is 0.5", 1,
        git=True),
    Row("drift-check-fifo", "bad table", drift_fifo, ["drift", "--check"], f"{DRIFT}: a FIFO (named pipe)", 1, git=True),
    Row("noise-drift-platforms-5", "bad table", drift_text('{"platforms": 5}'), NOISE, f"{DRIFT}:1: platforms is 5 … {REBUILD}", 2, git=True),
    Row("noise-drift-fifo", "bad table", drift_fifo, NOISE, f"{DRIFT}: a FIFO (named pipe)", 2, git=True),

    # -- writing the table: atomic, never through a link; what `drift` makes again ------------------------------
    Row("drift-replaces-a-fifo", "write", drift_fifo, ["drift"], f"note: … {DRIFT} was a FIFO (named pipe); it is replaced by the file … wrote {DRIFT}",
        0, git=True, changes=(DRIFT,), then=drift_is_a_table),
    Row("drift-replaces-a-link-out", "write", drift_link_out, ["drift"],
        f"{DRIFT} was a symlink (to … the file it pointed to is untouched … wrote {DRIFT}", 0, git=True, changes=(DRIFT,),
        then=outside_untouched),
    Row("drift-replaces-a-corrupt-table", "write", drift_text(table("NaN")), ["drift"], f"wrote {DRIFT}", 0, git=True, changes=(DRIFT,),
        then=drift_is_a_table),
    Row("drift-into-a-folder", "write", lambda L: ((L.root / DRIFT).unlink(), (L.root / DRIFT).mkdir()), ["drift"],
        f"{DRIFT}: a folder, not a file: not written; move it away", 2, git=True),
    Row("drift-disk-full", "write", drift_text(table("1.5") + " " * 100), ["drift"],
        f"{DRIFT}: cannot be written (File too large); the old file is as it was; the disk is full", 2, git=True,
        shell="ulimit -f 1; {cmd}", then=no_temporary),
    Row("drift-check-up-to-date", "write", lambda L: None, ["drift", "--check"], "", 0, git=True),

    # -- numbers in the history: never a math domain error -------------------------------------------------------
    Row("drift-huge-then-tiny-timings", "numbers", extreme_history, ["drift"],
        "note: 2 timing record(s) left out of the drift: their values lie outside 1e-30..1e+30 … correct or re-capture "
        f"those fragments … wrote {DRIFT}", 0, git=True, changes=(DRIFT,), then=both_extremes_named),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_round4_drift(fb, row):
    L = make_git_book(fb) if row.git else fb
    L = row.setup(L) or L
    if not isinstance(L, Layout):
        L = fb
    env = row.env(L) if row.env else None
    before = tree(L.root)
    try:
        rc, out = run_cli(L.root, row.argv, env=env, shell=row.shell)
    finally:
        if IS_ROOT and row.setup is not_yours:
            for dirpath, dirnames, filenames in os.walk(L.root):
                for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
                    os.lchown(name, 0, 0)
    assert "Traceback" not in out, out
    assert rc == row.rc, f"exit {rc}:\n{out}"
    pos = 0
    for part in row.message.split(" … ") if row.message else ():
        found = out.find(part, pos)
        assert found >= 0, f"{part!r} not in:\n{out}"
        pos = found + len(part)
    if rc:
        assert sum(1 for line in out.splitlines() if line.startswith("error:")) == 1, out
    after = tree(L.root)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert changed <= set(row.changes), f"changed beyond {sorted(row.changes)}: {sorted(changed - set(row.changes))}"
    if row.then:
        row.then(L, out)


def test_the_table_covers_every_class():
    counts: dict[str, int] = {}
    for r in ROWS:
        counts[r.category] = counts.get(r.category, 0) + 1
    assert len({r.id for r in ROWS}) == len(ROWS)
    assert set(counts) == {"history", "bad table", "write", "numbers"}, counts


# -- a regenerate running beside `drift`: drift waits its turn, the experiment is not blamed -------------------
HOLD = '''\
import os, time, bookrec
open({started!r}, "w").close()
deadline = time.time() + 60
while not os.path.exists({go!r}) and time.time() < deadline:
    time.sleep(0.05)
print("victim ok")
bookrec.record("victim.value", 1.5, "s")
'''


def test_drift_beside_a_running_regenerate_is_refused_and_the_run_is_not_blamed(fb, tmp_path):
    L = make_git_book(fb)
    started, go = tmp_path / "started", tmp_path / "go"
    write(L.root / "snippets/victim.py", HOLD.format(started=str(started), go=str(go)))
    git(L.root, "commit", "-q", "-am", "a victim that waits")
    drift_before = (L.root / DRIFT).read_bytes()
    cmd = [sys.executable, "-c", spawn_code(), "--root", str(L.root), "regenerate", "--no-review", "--only", "victim"]
    regen = subprocess.Popen(cmd, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + TIMEOUT
        while not started.exists():
            assert regen.poll() is None and time.time() < deadline, regen.communicate()[0] if regen.poll() is not None else "no start"
            time.sleep(0.05)
        rc, out = run_cli(L.root, ["drift"])
        go.touch()
        regen_out = regen.communicate(timeout=TIMEOUT)[0]
    finally:
        go.touch()
        if regen.poll() is None:
            regen.kill()
            regen.wait()
    assert "Traceback" not in out and rc == 3, f"exit {rc}:\n{out}"
    assert "another regenerate is running on" in out and f"{DRIFT} is unchanged" in out, out
    assert (L.root / DRIFT).read_bytes() == drift_before
    assert regen.returncode == 0, regen_out
    assert "changed files outside its scratch folder" not in regen_out and "victim@cpu" in regen_out, regen_out


# -- killed or interrupted while writing: the old table stays whole --------------------------------------------
BEFORE_RENAME = '''\
import os, signal, sys
sys.path.insert(0, {repo!r})
real = os.replace
def replace(src, dst, *a, **k):
    if str(dst).endswith("drift.json"):
        {act}
    return real(src, dst, *a, **k)
os.replace = replace
from capture.commands.cli import main
raise SystemExit(main(["--root", {root!r}, "drift"]))
'''


@pytest.mark.parametrize("act, rc, words", [
    ("os.kill(os.getpid(), signal.SIGKILL)", -signal.SIGKILL, ""),
    ("raise KeyboardInterrupt", 130, f"drift interrupted (Ctrl-C); {DRIFT} is whole: the old table, or the new one"),
], ids=["kill-9", "ctrl-c"])
def test_a_drift_stopped_before_its_rename_leaves_the_old_table_whole(fb, act, rc, words):
    L = make_git_book(fb)
    recapture(L, 1.8, "2026-12-05T10:00:00+00:00")  # a fourth capture: the committed table is out of date
    git(L.root, "commit", "-q", "-am", "capture 4")
    before = tree(L.root)
    code = BEFORE_RENAME.format(repo=str(REPO), root=str(L.root), act=act)
    p = subprocess.run([sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True, timeout=TIMEOUT)
    out = p.stdout + p.stderr
    assert p.returncode == rc and "Traceback" not in out, out
    assert words in out, out
    left = list((L.root / "docs").glob(".drift.json.*.tmp"))
    assert {k: v for k, v in tree(L.root).items() if Path(k) not in [p.relative_to(L.root) for p in left]} == before
    assert len(left) == (1 if rc < 0 else 0), left  # a kill leaves its temporary file; the next drift removes it
    rc2, out2 = run_cli(L.root, ["drift"])
    assert rc2 == 0 and not list((L.root / "docs").glob(".drift.json.*.tmp")), out2
    rc3, out3 = run_cli(L.root, ["drift", "--check"])
    assert rc3 == 0, out3


# -- the checks themselves, without a child process ------------------------------------------------------------
def good_table() -> dict:
    from capture.evidence import drift
    row = {"drift": 1.5, "max": 2.0, "p95": 1.5, "spread_p95": None, "shared": None, "run": None, "pairs": 9,
           "records": 20, "reruns": 9, "changed": 0, "shared_pairs": 0, "run_pairs": 0, "source": "re-runs", "widest": ""}
    return {"about": "x", "default": math.sqrt(2), "platforms": {PLAT: {k: dict(row) for k in drift.KINDS}},
            "figures": {PLAT: {"a@cpu x.median": 2.5}},
            "history": {PLAT: {"captures": [["a@cpu", "2026-12-05T09:00:00+00:00", 0]],
                               "figures": {"a@cpu x.median": [[0, [1.0, 1.1]]]}}}}


BAD = [  # (how the table is broken, words of the problem)
    (lambda t: t.update(format=1.0), "format is 1.0"),
    (lambda t: t.update(format=True), "format is true"),
    (lambda t: t.update(default=0.9), "default is 0.9"),
    (lambda t: t.pop("platforms"), "no 'platforms'"),
    (lambda t: t["platforms"][PLAT]["median"].pop("drift"), "has no 'drift'"),
    (lambda t: t["platforms"][PLAT]["median"].update(drift=None), "drift is null"),
    (lambda t: t["platforms"][PLAT]["median"].update(drift=True), "drift is true"),
    (lambda t: t["platforms"][PLAT]["median"].update(drift="1.5"), "drift is '1.5'"),
    (lambda t: t["platforms"][PLAT]["median"].update(shared=0.99), "shared is 0.99"),
    (lambda t: t["platforms"][PLAT]["median"].update(run=float("nan")), "run is NaN"),
    (lambda t: t["platforms"][PLAT]["median"].update(pairs=-1), "pairs is -1, not a count"),
    (lambda t: t["platforms"][PLAT]["median"].update(source=3), "source is 3, not text"),
    (lambda t: t["platforms"][PLAT].update(median=[1.5]), "is a JSON list, not an object"),
    (lambda t: t["figures"][PLAT].update({"a@cpu y.median": 1e400}), "is inf"),
    (lambda t: t["figures"][PLAT].update({"a@cpu y.median": 10 ** 400}), "is a 401-digit number"),
    (lambda t: t["figures"].update({"../etc": {}}), "is not a valid platform key"),
    (lambda t: t["history"][PLAT].update(captures=5), "captures is not a list"),
    (lambda t: t["history"][PLAT]["captures"][0].pop(), "captures is not a list"),
    (lambda t: t["history"][PLAT]["figures"]["a@cpu x.median"][0].__setitem__(0, 3), "is not a list of [index"),
    (lambda t: t["history"][PLAT]["figures"]["a@cpu x.median"][0].__setitem__(1, [0.0]), "each > 0"),
    (lambda t: t["history"].update({"../etc": {}}), "is not a valid platform key"),
    (lambda t: t.update(later_field={"values": [1.0, float("nan")]}), "later_field.values.1 is NaN, not a finite number"),
]


@pytest.mark.parametrize("breaks, words", BAD, ids=[w for _, w in BAD])
def test_a_bad_table_is_named_by_what_is_wrong(breaks, words):
    from capture.evidence import driftfile
    good = good_table()
    assert driftfile.problem(good) is None
    breaks(good)
    problem = driftfile.problem(good)
    assert problem is not None and words in problem.why, problem


def test_the_table_drift_measures_passes_its_own_check_and_a_later_field_is_left_to_its_reader():
    from capture.evidence import driftfile
    committed = driftfile.read(REPO)  # the book's own table
    assert committed is not None and driftfile.problem(committed) is None
    assert driftfile.problem({**good_table(), "later": {PLAT: {"captures": [["a@cpu", "2026", 0]]}}}) is None


def test_a_line_is_found_for_a_nested_key():
    from capture.storage.datafile import line_of
    text = json.dumps(good_table(), indent=1, sort_keys=True)
    line = line_of(text, ("platforms", PLAT, "median", "drift"))
    assert line is not None and text.splitlines()[line - 1].strip().startswith('"drift"')
    assert line > text.splitlines().index(' "platforms": {') + 1


def test_a_table_no_reader_would_accept_is_never_written(tmp_path):
    from capture.evidence import driftfile
    from capture.storage.datafile import DataFileError
    (tmp_path / "docs").mkdir()
    bad = good_table()
    bad["platforms"][PLAT]["median"]["drift"] = float("nan")
    with pytest.raises(DataFileError, match="not written"):
        driftfile.write(tmp_path, bad)
    assert not (tmp_path / DRIFT).exists()
    path, note = driftfile.write(tmp_path, good_table())
    assert note is None and driftfile.read(tmp_path) == good_table()


# -- nothing skips the one reader and writer -------------------------------------------------------------------
def test_no_module_but_driftfile_opens_the_drift_table_or_runs_git_for_it():
    """Every read and write of docs/drift.json, and every git call for its history, goes through
    capture/evidence/driftfile.py; in the rooms that keep the book's data (storage, evidence) only atomic.py opens a
    file for writing. A new data file or a new reader cannot skip the checks by opening the file itself."""
    import ast
    root = REPO / "capture"
    may_name_data = {"evidence/drift.py", "evidence/driftfile.py", "sphinxext/common.py", "sphinxext/drifttable.py",
                     "commands/cli.py"}  # the last three only note it as a dependency or name it in a message
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree_ = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree_):
            if isinstance(node, ast.ImportFrom) and node.module == "capture.evidence.drift" and \
                    any(a.name == "DATA" for a in node.names) and rel not in may_name_data:
                found.append(f"{rel}:{node.lineno}: imports drift.DATA (read it with capture/evidence/driftfile.py)")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "drift.json" in node.value and \
                    "/" in node.value and node.value.strip() == node.value and node.value.endswith("drift.json") and \
                    rel not in may_name_data:
                found.append(f"{rel}:{node.lineno}: names {node.value!r}")
            if rel.split("/")[0] in ("storage", "evidence") and rel != "storage/atomic.py" and isinstance(node, ast.Call):
                fn = node.func
                name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
                if name in ("write_text", "write_bytes") or (name == "open" and isinstance(fn, ast.Name)):
                    found.append(f"{rel}:{node.lineno}: {name}() (write through capture/storage/datafile.py or atomic.py)")
            if rel.startswith("evidence/") and rel != "evidence/driftfile.py" and isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if "subprocess" in names:
                    found.append(f"{rel}:{node.lineno}: imports subprocess (git for the drift runs in driftfile.py)")
    assert not found, "\n".join(found)


# -- the docs build: a bad table is one warning line, never "Exception occurred" or a hang ---------------------
SITE_CONF = f'''
import sys
sys.path.insert(0, {str(REPO)!r})
extensions = ["myst_parser", "capture.sphinxext"]
myst_enable_extensions = ["colon_fence"]
book_root = {{root!r}}
book_platforms = ["{PLAT}"]
book_local_platform = "none"
show_warning_types = True
'''


@pytest.mark.parametrize("bad, words", [
    ('{\n "platforms": 5\n}\n', f"{DRIFT}:2: WARNING: platforms is 5, not an object"),
    (table("NaN"), f"{DRIFT}:5: WARNING: platforms.{PLAT}.median.drift is NaN"),
    ("fifo", f"{DRIFT}: a FIFO (named pipe), not a regular file"),
], ids=["platforms-5", "nan", "fifo"])
def test_the_docs_build_says_a_bad_table_in_one_warning(fb, bad, words):
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    root = fb.root
    write(root / "conf.py", SITE_CONF.format(root=str(root)))
    write(root / "docs/index.md", "# 书\n\n:::{claim} victim@cpu:victim.value < 100\nfast\n:::\n\n:::{drift-table}\n:::\n")
    if bad == "fifo":
        os.mkfifo(root / DRIFT)
    else:
        write(root / DRIFT, bad)
    before = tree(root)
    p = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-c", str(root),
                        str(root / "docs"), str(root.parent / "html")], capture_output=True, text=True, timeout=300)
    err = p.stderr
    assert p.returncode != 0, err  # -W: the warning fails a strict build
    assert "Traceback" not in err and "Exception occurred" not in err, err
    hits = [line for line in err.splitlines() if "drift.json" in line]
    assert len(hits) == 1 and words in hits[0] and REBUILD in hits[0] and hits[0].rstrip().endswith("[capture.drift]"), err
    assert tree(root) == before
