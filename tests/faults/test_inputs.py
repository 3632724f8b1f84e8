"""Inputs that used to end in a traceback, one row each: a located message instead, the right exit status, and
no good fragment (nor a file outside the book) changed by a single byte.

Classes: control files of the store that are symlinks (they are never followed); a store, platform folder,
scratch folder or whole checkout that is read-only or full (real mounts: a read-only bind mount or a tiny
tmpfs in a private mount namespace, Linux with `unshare`); NUL in arguments and environment values; very
long experiment ids; `--python` that is not Python; malformed `--prebuilt` folders; `restamp` on broken or
newer fragments; Ctrl-C during `status`; an oversized output line. Each row runs `python -m capture` as a
real process, so a traceback would show in its output.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from capture.storage import atomic
from capture.commands import cli
from capture.storage.paths import Layout
from tests.faults.faultbook import GOODS, PLAT, cli_env, cut_between_renames, key_files, snapshot, spawn_code, write
from tests.faults.test_faults import S, entry, set_entry

FR = f"docs/_fragments/{PLAT}"
SECRET = b"outside the book: must never change\n"


def _unshare() -> list[str] | None:
    """A command prefix that gives a private mount namespace, or None where there is none."""
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return None
    for cmd in (["unshare", "--mount"], ["unshare", "--user", "--map-root-user", "--mount"]):
        probe = cmd + ["sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt 2>/dev/null || mount -t tmpfs tmpfs /tmp"]
        if os.geteuid() != 0 and cmd == ["unshare", "--mount"]:
            continue
        if subprocess.run(probe, capture_output=True).returncode == 0:
            return cmd
    return None


UNSHARE = _unshare()


def mount_script(root: Path, mounts) -> str:
    lines = []
    for kind, rel in mounts:
        d = root / rel
        d.mkdir(parents=True, exist_ok=True)
        if kind == "ro":
            lines.append(f"mount --bind '{d}' '{d}' && mount -o remount,ro,bind '{d}'")
        else:  # ("tmpfs:<KiB>", rel): a tiny file system, full after a few writes
            lines.append(f"mount -t tmpfs -o size={kind.split(':')[1]}k tmpfs '{d}'")
    return " && ".join(lines) + ' && exec "$@"'


def run_cli(fb: Layout, argv, mounts=()) -> tuple[int, str]:
    argv = [a.replace("{prebuilt}", str(fb.root.parent / "outside-prebuilt")) for a in argv]
    inner = [sys.executable, "-c", spawn_code(), "--root", str(fb.root), *argv]
    cmd = [*UNSHARE, "sh", "-c", mount_script(fb.root, mounts), "sh", *inner] if mounts else inner
    r = subprocess.run(cmd, capture_output=True, text=True, env=cli_env(), timeout=180, stdin=subprocess.DEVNULL)
    return r.returncode, r.stdout + r.stderr


# -- setups ---------------------------------------------------------------------------------------

def outside(fb: Layout) -> Path:
    p = fb.root.parent / "outside-secret.txt"
    if not p.exists():
        p.write_bytes(SECRET)
    return p


def link(rel: str, target: Callable[[Layout], Path | str]) -> Callable[[Layout], None]:
    def setup(fb):
        p = fb.root / rel
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        p.unlink(missing_ok=True)
        p.symlink_to(target(fb))
    return setup


def steps(*fs) -> Callable[[Layout], None]:
    def setup(fb):
        for f in fs:
            f(fb)
    return setup


def code(src: str) -> Callable[[Layout], None]:
    return lambda fb: write(fb.root / "snippets/victim.py", src)


def prebuilt(files: dict[str, str | bytes] | None) -> Callable[[Layout], None]:
    def setup(fb):
        d = fb.root.parent / "outside-prebuilt"
        shutil.rmtree(d, ignore_errors=True)
        if files is None:
            return
        d.mkdir()
        for name, data in files.items():
            write(d / name, data)
    return setup


def victim_meta(**inputs) -> Callable[[Layout], None]:
    def setup(fb):
        p = fb.fragments / PLAT / "victim@cpu.json"
        meta = json.loads(p.read_text())
        meta["inputs"].update(inputs)
        p.write_text(json.dumps(meta, indent=1))
    return setup


def truncate(rel: str) -> Callable[[Layout], None]:
    def setup(fb):
        p = fb.root / rel
        p.write_bytes(p.read_bytes()[:40])
    return setup


def nothing(fb):
    pass


# -- the table ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    id: str
    cls: str  # control file | read-only or full | bad input | restamp | smaller
    setup: Callable[[Layout], None]
    argv: tuple[str, ...]
    rc: int
    message: str  # parts separated by " … " must appear in this order
    mounts: tuple = ()
    victim_kept: bool = True  # the victim's good fragment is unchanged too


REGEN = ("regenerate", "--no-review", "--force", "--only", "victim")
M = "docs/experiments.toml:15: experiment victim: "
REBUILD = "on a machine with cargo"
PB = ("regenerate", "--no-review", "--only", "victim", "--prebuilt", "{prebuilt}")

ROWS = [
    # control files of the store are plain files inside it: a symlink is refused or replaced, never followed
    Row("lock-symlink-out", "control file", link("docs/_fragments/.lock", outside), REGEN, 2,
        "error: lock file … /docs/_fragments/.lock is a symlink (to … outside-secret.txt); a control file of the store is a plain file: remove the link"),
    Row("lock-symlink-to-fragment", "control file", link("docs/_fragments/.lock", lambda fb: f"{PLAT}/good-a@cpu.txt"), REGEN, 2,
        "is a symlink (to linux-x86_64-cpu/good-a@cpu.txt)"),
    Row("lock-is-a-folder", "control file", lambda fb: ((fb.fragments / ".lock").unlink(missing_ok=True), (fb.fragments / ".lock").mkdir()), REGEN, 2,
        "error: cannot write to the fragment store: … /docs/_fragments/.lock: Is a directory; fix that path"),
    Row("skip-record-symlink-out", "control file", link(f"{FR}/victim@cpu.skipped.json", outside), ("status",), 0,
        "corrupt  victim@cpu … skip record … victim@cpu.skipped.json is a symlink (to … outside-secret.txt)"),
    Row("failure-record-symlink-out", "control file", steps(link(f"{FR}/victim@cpu.failed.json", outside), code("raise SystemExit(4)\n")),
        REGEN, 1, "failed … victim@cpu  expected exit 0, got exit 4"),
    Row("failure-text-symlink-out", "control file", steps(link(f"{FR}/victim@cpu.failed.txt", outside), code("raise SystemExit(4)\n")),
        REGEN, 1, "expected exit 0, got exit 4"),
    Row("identity-symlink-out", "control file", link(f"{FR}/platform.json", outside), REGEN, 0, "ok", victim_kept=False),
    Row("fragment-text-symlink-out", "control file", link(f"{FR}/victim@cpu.txt", outside), REGEN, 0, "ok", victim_kept=False),

    # read-only or full folders: a located message with the fix, never a traceback
    Row("store-read-only", "read-only or full", nothing, REGEN, 2,
        "error: cannot write to the fragment store: … /docs/_fragments/.lock: Read-only file system; make it writable", mounts=(("ro", "docs/_fragments"),)),
    Row("platform-folder-read-only", "read-only or full", nothing, REGEN, 1,
        f"failed … victim@cpu  cannot write to the fragment store: … {FR}: Read-only file system; make it writable", mounts=(("ro", FR),)),
    Row("scratch-read-only", "read-only or full", nothing, REGEN, 1,
        "victim@cpu  cannot write to the scratch folder: … /.capture/runs: Read-only file system; make it writable", mounts=(("ro", ".capture"),)),
    Row("checkout-read-only", "read-only or full", nothing, REGEN, 2, "error: cannot write to the fragment store: … Read-only file system",
        mounts=(("ro", "."),)),
    Row("store-full", "read-only or full", lambda fb: shutil.rmtree(fb.fragments), REGEN, 2,
        "cannot write to the fragment store: … No space left on device; the disk is full: free space there", mounts=(("tmpfs:4", "docs/_fragments"),),
        victim_kept=False),
    Row("scratch-full", "read-only or full", code("print('x' * 100, flush=True)\nfor i in range(1000):\n    print('y' * 100)\n"), REGEN, 1,
        "victim@cpu  the scratch folder .capture/runs/linux-x86_64-cpu/ … is full (no space left on device): the run could not write its output",
        mounts=(("tmpfs:8", ".capture"),)),
    Row("status-on-read-only-checkout", "read-only or full", nothing, ("status",), 0, "fresh    good-a@cpu", mounts=(("ro", "."),)),

    # bad input: NUL, long ids, --python, --prebuilt
    Row("nul-in-args", "bad input", entry(S + 'args = ["a\\u0000b"]\n'), REGEN, 1,
        M + "args[0] string 'a\\x00b' holds a NUL character (\\0 or \\u0000), which no program argument or environment value can carry"),
    Row("nul-in-env", "bad input", entry(S + 'env = { A = "x\\u0000" }\n'), REGEN, 1, M + "env.A string 'x\\x00' holds a NUL character"),
    Row("nul-in-role-args", "bad input", entry(S + 'args = { cpu = ["\\u0000"] }\n'), REGEN, 1, M + "args.cpu[0] string '\\x00' holds a NUL"),
    Row("id-very-long", "bad input", lambda fb: set_entry(fb, "victim", f'id = "{"v" * 300}"\n' + S), ("regenerate",), 1,
        f"docs/experiments.toml:15: experiment {'v' * 40}...: id has 300 characters; at most 64 (it names files)"),
    Row("id-at-the-limit", "bad input", lambda fb: set_entry(fb, "victim", f'id = "{"v" * 64}"\n' + S), ("regenerate", "--no-review"), 0,
        f"ok … {'v' * 64}@cpu  exit 0"),
    Row("only-very-long", "bad input", nothing, ("regenerate", "--only", "x" * 5000), 2,
        "error: … docs/experiments.toml: no experiment '" + "x" * 40 + "...' (5000 characters; known: good-a, good-b, victim, after)"),
    Row("python-echo", "bad input", nothing, (*REGEN, "--python", "/bin/echo"), 1,
        "error: --python: /bin/echo did not answer like a Python interpreter (it printed '-c'); give the path of a Python 3 interpreter"),
    Row("python-missing", "bad input", nothing, (*REGEN, "--python", "no-such-python"), 1, "error: --python no-such-python: no such program"),
    Row("python-a-text-file", "bad input", nothing, (*REGEN, "--python", "docs/experiments.toml"), 1, "error: --python … Permission denied"),
    Row("python-a-folder", "bad input", nothing, (*REGEN, "--python", "/tmp"), 1, "error: --python /tmp: no such program"),
    Row("check-python-echo", "bad input", nothing, ("check", "--only", "victim", "--python", "/bin/echo"), 1, "did not answer like a Python interpreter"),
    Row("prebuilt-missing", "bad input", prebuilt(None), PB, 1, "error: --prebuilt … outside-prebuilt: no such folder; rebuild it … " + REBUILD),
    Row("prebuilt-empty", "bad input", prebuilt({}), PB, 1, "outside-prebuilt/build-info.json missing; prebuilt binaries come from `python -m capture bundle"),
    Row("prebuilt-not-json", "bad input", prebuilt({"build-info.json": "{"}), PB, 1, "build-info.json: not a readable build-info file (JSONDecodeError"),
    Row("prebuilt-not-utf8", "bad input", prebuilt({"build-info.json": b"\xff"}), PB, 1, "build-info.json: not a readable build-info file (UnicodeDecodeError"),
    Row("prebuilt-list", "bad input", prebuilt({"build-info.json": "[]"}), PB, 1, "build-info.json: a JSON list, not an object"),
    Row("prebuilt-features-int", "bad input", prebuilt({"build-info.json": '{"features": 3}'}), PB, 1, "build-info.json: 'features' is a int, not a list"),
    Row("prebuilt-devices-ints", "bad input", prebuilt({"build-info.json": '{"gpu_devices": {"burn": 1}}'}), PB, 1,
        "'features' and 'gpu_devices' hold strings only"),
    Row("prebuilt-other-sources", "bad input", prebuilt({"build-info.json": '{"sources_digest": "x"}'}), PB, 1,
        "were built from other Rust sources (digest x, checkout"),

    # restamp on what it cannot carry over
    Row("restamp-truncated", "restamp", truncate(f"{FR}/victim@cpu.json"), ("restamp",), 0,
        f"restamp: left as it was: {PLAT}/victim@cpu.json (corrupt: … invalid JSON … capture it again: nox -s regenerate -- --only victim --device cpu"),
    Row("restamp-newer-scheme", "restamp", victim_meta(hash_version=99), ("restamp",), 0,
        "victim@cpu.json (captured with inputs-hash scheme 99, newer than this checkout's 3: restamp cannot help; update the checkout"),
    Row("restamp-odd-scheme", "restamp", victim_meta(hash_version="three"), ("restamp",), 0, "names no hash scheme this checkout knows: 'three'"),
    Row("restamp-symlink-out", "restamp", link(f"{FR}/victim@cpu.json", outside), ("restamp",), 0, "(corrupt: … a symlink is not a fragment"),
    Row("restamp-failed-record-broken", "restamp", lambda fb: write(fb.fragments / PLAT / "victim@cpu.failed.json", "[1]"), ("restamp",), 0,
        "victim@cpu.failed.json (corrupt: … metadata is a JSON list"),
    Row("restamp-odd-name", "restamp", lambda fb: write(fb.fragments / PLAT / "x@tpu.json", "{}"), ("restamp",), 0,
        "x@tpu.json (not a fragment's name:"),

    # smaller
    Row("oversized-output-line", "smaller", code("print('z' * 100000)\nraise SystemExit(2)\n"), REGEN, 1,
        "expected exit 0, got exit 2 … | " + "z" * 300 + " [... 99700 more characters]"),
    Row("torn-fragment", "smaller", lambda fb: cut_between_renames(fb.fragments / PLAT, "victim@cpu", (fb.fragments / PLAT / "victim@cpu.txt").read_text(), "half\n"),
        ("status",), 0, "torn     victim@cpu … text and metadata disagree (interrupted write)"),
    Row("edited-fragment", "smaller", lambda fb: write(fb.fragments / PLAT / "victim@cpu.txt", "edited by hand\n"), ("status",), 0,
        "corrupt  victim@cpu … victim@cpu.txt: edited after the capture: the text is not the one victim@cpu.json vouches for"),
]


def parts_in(message: str, text: str) -> None:
    pos = 0
    for part in message.split(" … "):
        found = text.find(part, pos)
        assert found >= 0, f"{part!r} not in:\n{text}"
        pos = found + len(part)


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_input(fb, row):
    if row.mounts and UNSHARE is None:
        pytest.skip("needs a private mount namespace (Linux, unshare)")
    secret = outside(fb)
    row.setup(fb)
    before = snapshot(fb)
    rc, out = run_cli(fb, row.argv, row.mounts)
    parts_in(row.message, out)
    assert "Traceback" not in out, out
    assert rc == row.rc, out
    after = snapshot(fb)
    for good in GOODS:
        assert key_files(after, good) == key_files(before, good), f"{good} changed"
    if row.victim_kept:
        def mine(snap):
            return {k: v for k, v in key_files(snap, "victim@cpu").items() if ".failed." not in k and ".skipped." not in k}
        assert mine(after) == mine(before), "the victim's last good fragment changed"
    assert secret.read_bytes() == SECRET, "a file outside the book was written through a symlink"


def test_a_torn_pair_is_put_back_by_the_next_regenerate(fb):
    before = snapshot(fb)
    good = (fb.fragments / PLAT / "victim@cpu.txt").read_text()
    cut_between_renames(fb.fragments / PLAT, "victim@cpu", good, "half\n")
    rc, out = run_cli(fb, ("regenerate", "--no-review", "--only", "victim"))
    assert rc == 0 and "fresh            victim@cpu" in out, out
    assert snapshot(fb) == before  # the old pair, byte for byte, and no temporary file left


def test_oversized_line_is_whole_in_the_failure_record(fb):
    code("print('z' * 100000)\nraise SystemExit(2)\n")(fb)
    rc, out = run_cli(fb, REGEN)
    assert rc == 1 and len(out) < 5000, out[:2000]
    assert ("z" * 100000) in (fb.fragments / PLAT / "victim@cpu.failed.txt").read_text()


def test_unwritable_store_by_permission(fb):
    """chmod a-w (EACCES); root ignores file modes, so this row runs only as another user."""
    if os.geteuid() == 0:
        pytest.skip("root writes read-only folders; the read-only mount rows cover this as root")
    before = snapshot(fb)
    os.chmod(fb.fragments, 0o555)
    try:
        rc, out = run_cli(fb, REGEN)
    finally:
        os.chmod(fb.fragments, 0o755)
    parts_in("error: cannot write to the fragment store: … /docs/_fragments/.lock: Permission denied; make it writable", out)
    assert rc == 2 and "Traceback" not in out and snapshot(fb) == before


@pytest.mark.parametrize("command", ["status", "restamp", "check"])
def test_ctrl_c_outside_regenerate_is_a_message(fb, monkeypatch, command):
    """Ctrl-C while status, restamp or check work: exit 130 and a line, never a traceback."""
    import capture.commands.check
    import capture.commands.restamp
    import capture.evidence.status

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    target = {"status": (capture.evidence.status, "collect"), "restamp": (capture.commands.restamp, "restamp"), "check": (capture.commands.check, "check")}[command]
    monkeypatch.setattr(*target, interrupted)
    monkeypatch.setenv("BOOK_PLATFORM", PLAT)
    before = snapshot(fb)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(err):
        rc = cli.main(["--root", str(fb.root), command])
    assert rc == 130 and "interrupted" in err.getvalue() and "Traceback" not in err.getvalue(), err.getvalue()
    assert snapshot(fb) == before


SLOW_STATUS = """\
import pathlib, time
import capture.evidence.status as status

real = status.collect


def collect(*args, **kw):
    pathlib.Path({ready!r}).write_text("in collect")
    time.sleep(60)
    return real(*args, **kw)


status.collect = collect
"""


def test_ctrl_c_during_status_for_real(fb, tmp_path):
    """A real SIGINT while `status` works (held in its collect step by a sitecustomize): exit 130, one line."""
    import signal

    from tests.faults.test_signals import wait_for

    hook, ready = tmp_path / "hook", tmp_path / "ready"
    write(hook / "sitecustomize.py", SLOW_STATUS.format(ready=str(ready)))
    env = cli_env(PYTHONPATH=f"{hook}{os.pathsep}{cli_env()['PYTHONPATH']}")
    code_ = spawn_code().replace("from capture.commands.cli import main", "import sitecustomize; from capture.commands.cli import main")
    proc = subprocess.Popen([sys.executable, "-c", code_, "--root", str(fb.root), "status"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert wait_for(ready.exists, 60), proc.communicate(timeout=10)[0] if proc.poll() is not None else "never ready"
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "status interrupted (Ctrl-C)" in out and "Traceback" not in out, out


def test_a_temporary_name_taken_by_a_symlink_is_never_followed(tmp_path, monkeypatch):
    """The temporary file of an atomic write is created with O_EXCL | O_NOFOLLOW: a symlink already there
    (planted at the name it will use) makes the write fail; the file it points to is untouched."""
    target = tmp_path / "secret"
    target.write_bytes(SECRET)
    trap = tmp_path / "store" / ".x.txt.trap.tmp"
    trap.parent.mkdir()
    trap.symlink_to(target)
    monkeypatch.setattr(atomic, "temp_name", lambda path, suffix=".tmp": trap)
    with pytest.raises(FileExistsError):
        atomic.write_file(tmp_path / "store" / "x.txt", "new\n")
    assert target.read_bytes() == SECRET and not (tmp_path / "store" / "x.txt").exists()


def test_every_class_has_rows():
    classes = {}
    for r in ROWS:
        classes[r.cls] = classes.get(r.cls, 0) + 1
    assert set(classes) == {"control file", "read-only or full", "bad input", "restamp", "smaller"}
    assert min(classes.values()) >= 2 and len({r.id for r in ROWS}) == len(ROWS)
