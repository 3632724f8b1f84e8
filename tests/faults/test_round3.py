"""Faults, round 3, one case per row, through the real command line in a child process (so a hang is a timeout,
a closed or narrow stream is a real one): non-regular files, replaced folders, commands that write a platform,
output that cannot be written, numbers.

Every row asserts the message (parts in order, " … " between them), the exit status, no traceback, that the
good fragments did not change by a byte, and which other store files may change (`changes`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from capture.storage.paths import Layout
from tests.faults.faultbook import GOODS, PLAT, cli_env, key_files, snapshot, spawn_code, write

VICTIM = "victim@cpu"
GPU_KEY = "linux-x86_64-nvidia-h200"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def frag_dir(L: Layout) -> Path:
    return L.fragments / PLAT


def fifo(rel: str) -> Callable[[Layout], None]:
    def setup(L: Layout) -> None:
        p = L.root / rel
        p.unlink(missing_ok=True)
        os.mkfifo(p)
    return setup


def sock(rel: str) -> Callable[[Layout], None]:
    def setup(L: Layout) -> None:
        p = L.root / rel
        p.unlink(missing_ok=True)
        short = Path(tempfile.mkdtemp(dir="/tmp")) / "s"  # a socket's path has at most 107 bytes
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(short))
        s.close()  # the socket file stays
        shutil.move(str(short), p)
        short.parent.rmdir()
    return setup


def both(*fs) -> Callable[[Layout], None]:
    def setup(L: Layout) -> None:
        for f in fs:
            f(L)
    return setup


F = f"docs/_fragments/{PLAT}"


def replace_with_file(rel: str) -> Callable[[Layout], None]:
    def setup(L: Layout) -> None:
        shutil.rmtree(L.root / rel)
        write(L.root / rel, "not a folder\n")
    return setup


def replace_with_fifo(rel: str) -> Callable[[Layout], None]:
    def setup(L: Layout) -> None:
        shutil.rmtree(L.root / rel)
        os.mkfifo(L.root / rel)
    return setup


def link_out(rel: str) -> Callable[[Layout], None]:
    def setup(L: Layout) -> None:
        outside = L.root.parent / "outside-platform"
        shutil.move(str(L.root / rel), outside)
        (L.root / rel).symlink_to(outside, target_is_directory=True)
    return setup


def unreadable(rel: str) -> Callable[[Layout], None]:
    return lambda L: os.chmod(L.root / rel, 0)


def victim_code(src: str) -> Callable[[Layout], None]:
    return lambda L: write(L.root / "snippets/victim.py", "import bookrec\n" + src)


def victim_entry(extra: str) -> Callable[[Layout], None]:
    def setup(L: Layout) -> None:
        text = L.manifest.read_text()
        write(L.manifest, text.replace('script = "snippets/victim.py"\n', 'script = "snippets/victim.py"\n' + extra, 1))
    return setup


def gpu_platform(L: Layout) -> None:
    """A copy of this platform under the H200's key whose identity says it has an NVIDIA GPU role."""
    d = L.fragments / GPU_KEY
    shutil.copytree(frag_dir(L), d)
    ident = json.loads((d / "platform.json").read_text())
    ident.update(key=GPU_KEY, gpu="NVIDIA H200", gpu_vendor="nvidia",
                 roles={**ident["roles"], "gpu": {"torch": "cuda", "burn": "cuda", "candle": "cuda"}})
    ident["fingerprint"] = {**ident.get("fingerprint", {}), "gpu": "NVIDIA H200", "gpu_count": 1}
    (d / "platform.json").write_text(json.dumps(ident, indent=1))


def gpu_fragment(L: Layout) -> None:
    """The GPU platform also holds a GPU-role fragment (its metadata says torch on cuda)."""
    d = L.fragments / GPU_KEY
    meta = json.loads((d / f"{VICTIM}.json").read_text())
    meta.update(role="gpu", framework="torch", device="cuda")
    shutil.copy(d / f"{VICTIM}.txt", d / "victim@gpu.txt")
    (d / "victim@gpu.json").write_text(json.dumps(meta, indent=1))


def other_platform(L: Layout, ident_bytes: bytes | None = None, key: str = "linux-x86_64-other-box") -> Path:
    d = L.fragments / key
    shutil.copytree(frag_dir(L), d)
    if ident_bytes is not None:
        (d / "platform.json").write_bytes(ident_bytes)
    return d


def tmp_leftover(L: Layout) -> None:
    (frag_dir(L) / f".{VICTIM}.json.999999999.abcdef.tmp").write_text("{half")


def edited_with_fifo_leftover(L: Layout) -> None:
    os.mkfifo(frag_dir(L) / f".{VICTIM}.txt.999999999.abcdef.old.tmp")
    (frag_dir(L) / f"{VICTIM}.txt").write_text("edited\n")


def big_records(*values: int) -> Callable[[Layout], None]:
    """The victim's fragment carries integer records as large as a double holds (a record may), and a page claims on them."""
    def setup(L: Layout) -> None:
        js = frag_dir(L) / f"{VICTIM}.json"
        meta = json.loads(js.read_text())
        meta["records"] += [{"name": f"big{i}", "value": v, "unit": "", "tags": {}} for i, v in enumerate(values)]
        js.write_text(json.dumps(meta, indent=1))
        write(L.root / "docs/big.md", "# big\n\n:::{claim} victim@cpu:big0 * victim@cpu:big1 > 1\nlarge\n:::\n")
    return setup


@dataclass
class Row:
    id: str
    category: str
    setup: Callable[[Layout], None]
    argv: list[str]
    message: str
    rc: int | tuple[int, ...]
    env: dict = field(default_factory=dict)
    shell: str = ""  # a bash line around the command, "{cmd} 2>&-"
    changes: tuple[str, ...] = ()  # store files (relative to docs/_fragments) that may change
    then: Callable[[Layout, str], None] | None = None  # a further check after the command
    as_root: bool = True  # False: root reads any file, so the case cannot be made


def victim_ok(L: Layout, out: str) -> None:
    from capture.storage.store import Store
    frag = Store(L.fragments).read(PLAT, VICTIM)
    assert frag is not None and not frag.corrupt and not frag.torn, out


def batch_finished_and_logged(L: Layout, out: str) -> None:
    """The whole batch ran (`after` captured) and a log holds what could not be shown."""
    from capture.storage.store import Store
    after = Store(L.fragments).read(PLAT, "after@cpu")
    assert after is not None and not after.corrupt, out
    logs = list((L.root / ".capture/logs").glob("regenerate-*.log"))
    assert logs and "could not be written" in logs[0].read_text(), logs


def log_holds(command: str, words: str) -> Callable[[Layout, str], None]:
    def check(L: Layout, out: str) -> None:
        logs = list((L.root / ".capture/logs").glob(f"{command}-*.log"))
        assert logs and words in logs[0].read_text(), (logs, out)
    return check


def no_leftover(L: Layout, out: str) -> None:
    assert not list(frag_dir(L).glob(".*.tmp")), out


def stage_kept_platform_whole(L: Layout, out: str) -> None:
    assert not (L.root / ".capture/adopt").exists() or "adoption not finished" in out


V = f"{F}/{VICTIM}"
VIC_CHANGES = (f"{PLAT}/{VICTIM}.txt", f"{PLAT}/{VICTIM}.json")
REGEN = ["regenerate", "--no-review"]

ROWS = [
    # -- files that are not regular files: a located state or message, never a hang -----------------
    Row("fifo-txt-status", "non-regular file", fifo(f"{V}.txt"), ["status"], f"{VICTIM}.txt: a FIFO (named pipe), not a regular file", 0),
    Row("fifo-json-status", "non-regular file", fifo(f"{V}.json"), ["status"], f"{VICTIM}.json: a FIFO (named pipe), not a regular file", 0),
    Row("fifo-failed-json-status", "non-regular file", fifo(f"{V}.failed.json"), ["status"], f"{VICTIM}.failed.json: a FIFO (named pipe)", 0),
    Row("fifo-skipped-json-status", "non-regular file", fifo(f"{V}.skipped.json"), ["status"], f"{VICTIM}.skipped.json: a FIFO (named pipe)", 0),
    Row("socket-json-status", "non-regular file", sock(f"{V}.json"), ["status"], f"{VICTIM}.json: a socket, not a regular file", 0),
    Row("fifo-txt-regenerate", "non-regular file", fifo(f"{V}.txt"), REGEN, f"{VICTIM} … ok", 0, changes=VIC_CHANGES, then=victim_ok),
    Row("fifo-json-regenerate", "non-regular file", fifo(f"{V}.json"), REGEN, f"{VICTIM} … ok", 0, changes=VIC_CHANGES, then=victim_ok),
    Row("socket-txt-regenerate", "non-regular file", sock(f"{V}.txt"), REGEN, f"{VICTIM} … ok", 0, changes=VIC_CHANGES, then=victim_ok),
    Row("fifo-platform-json-status", "non-regular file", fifo(f"{F}/platform.json"), ["status"], "platform.json is a FIFO (named pipe), not a regular file", 0),
    Row("fifo-platform-json-restamp", "non-regular file", fifo(f"{F}/platform.json"), ["restamp"], "platform.json is a FIFO (named pipe)", 0),
    Row("fifo-old-leftover-status", "non-regular file", edited_with_fifo_leftover, ["status"], f"{VICTIM}.txt: edited after the capture", 0),
    Row("fifo-manifest-status", "non-regular file", fifo("docs/experiments.toml"), ["status"],
        "docs/experiments.toml: cannot read … is a FIFO (named pipe), not a regular file", 1),
    Row("fifo-manifest-regenerate", "non-regular file", fifo("docs/experiments.toml"), REGEN, "is a FIFO (named pipe), not a regular file", 1),
    Row("fifo-snippet-regenerate", "non-regular file", fifo("snippets/victim.py"), REGEN, f"{VICTIM} … failed", 1,
        changes=(f"{PLAT}/{VICTIM}.failed.txt", f"{PLAT}/{VICTIM}.failed.json")),
    Row("fifo-lock-regenerate", "non-regular file", both(victim_code("print('changed')\n"), fifo("docs/_fragments/.lock")), REGEN,
        "lock file … is not a plain file", 2),
    Row("fifo-page-status", "non-regular file", fifo("docs/fifo.md"), ["status"], "docs/fifo.md is a FIFO (named pipe), not a regular file", 2),
    Row("fifo-txt-check", "non-regular file", fifo(f"{V}.txt"), ["check", "--only", "victim"], f"{VICTIM}: committed fragment is corrupt", 1),
    Row("fifo-records-file", "non-regular file", victim_code("import os\nos.mkfifo(os.environ['BOOK_RECORDS'])\nprint('x')\n"), REGEN,
        f"{VICTIM}", (0, 1), changes=VIC_CHANGES + (f"{PLAT}/{VICTIM}.failed.txt", f"{PLAT}/{VICTIM}.failed.json")),

    # -- folders replaced: by a file, a FIFO, a link out of the repository, an unreadable folder -------
    Row("platform-file-status", "replaced folder", replace_with_file(F), ["status"], f"{PLAT} is a regular file, not a platform's folder", 0),
    Row("platform-file-regenerate", "replaced folder", replace_with_file(F), REGEN, f"{PLAT} is a regular file, not a platform's folder; move it away", 2),
    Row("platform-fifo-status", "replaced folder", replace_with_fifo(F), ["status"], f"{PLAT} is a FIFO (named pipe), not a platform's folder", 0),
    Row("platform-link-out-status", "replaced folder", link_out(F), ["status"], f"fragment folder … {PLAT} leaves … (through a symlink)", 0),
    Row("platform-link-out-regenerate", "replaced folder", link_out(F), REGEN, f"fragment folder … {PLAT} leaves", 2),
    Row("platform-link-out-restamp", "replaced folder", link_out(F), ["restamp"], f"left as it was: {PLAT}/ (fragment folder", 0),
    Row("platform-unreadable-status", "replaced folder", unreadable(F), ["status"], "cannot be read (permission denied); make it readable", 0, as_root=False),
    Row("platform-json-folder-status", "replaced folder", lambda L: ((frag_dir(L) / "platform.json").unlink(), (frag_dir(L) / "platform.json").mkdir()),
        ["status"], "platform.json: not a valid platform identity (NotRegular: … is a folder, not a regular file", 0),
    Row("fragments-root-file-regenerate", "replaced folder", replace_with_file("docs/_fragments"), REGEN, "cannot write to the fragment store", 2),
    Row("snippets-file-regenerate", "replaced folder", replace_with_file("snippets"), REGEN, f"{VICTIM} … failed", 1,
        changes=tuple(f"{PLAT}/{k}.failed.{x}" for k in (VICTIM, "after@cpu", *GOODS) for x in ("txt", "json"))),

    # -- commands that replace a platform's fragments or identity ----------------------------------
    Row("adopt-gpu-platform-without-gpu", "platform writer", gpu_platform, ["regenerate", "--adopt"],
        f"cannot adopt {GPU_KEY} on this host … gpu: burn on cuda … Nothing was run or written", 2, env={"BOOK_PLATFORM": GPU_KEY}),
    Row("adopt-only-refused", "platform writer", gpu_platform, ["regenerate", "--adopt", "--only", "victim"],
        "--adopt captures every fragment of the platform", 2, env={"BOOK_PLATFORM": GPU_KEY}),
    Row("adopt-gpu-platform-broken-identity", "platform writer", both(gpu_platform, gpu_fragment, lambda L: (
        L.fragments / GPU_KEY / "platform.json").write_text("{")), ["regenerate", "--adopt"],
        f"cannot adopt {GPU_KEY} on this host … gpu: torch on cuda … Nothing was run or written", 2, env={"BOOK_PLATFORM": GPU_KEY}),
    Row("status-names-leftover-tmp", "platform writer", tmp_leftover, ["status"],
        f"{PLAT}: 1 temporary file(s) of a run that no longer exists (.{VICTIM}.json.999999999.abcdef.tmp)", 0),
    Row("adopt-skipped-job-not-captured", "platform writer", victim_entry('platforms = ["macos"]\n'), ["regenerate", "--adopt", "--no-review"],
        "adoption not finished: 1 failed (victim@cpu (not captured here: skipped: runs only on macos))", 1, then=stage_kept_platform_whole),
    Row("adopt-failed-job", "platform writer", victim_code("raise SystemExit(3)\n"), ["regenerate", "--adopt", "--no-review"],
        "adoption not finished: 1 failed (victim@cpu)", 1),
    Row("restamp-corrupt-other-identity", "platform writer", lambda L: other_platform(L, b"{"), ["restamp"],
        "left as it was: linux-x86_64-other-box/platform.json … not a valid platform identity", 0),
    Row("restamp-deep-json", "platform writer", lambda L: (frag_dir(L) / f"{VICTIM}.json").write_text("[" * 200000), ["restamp"],
        f"left as it was: {PLAT}/{VICTIM}.json (corrupt", 0),
    Row("restamp-deep-identity", "platform writer", lambda L: other_platform(L, b"[" * 200000), ["restamp"],
        "linux-x86_64-other-box/platform.json … RecursionError", 0),
    Row("restamp-interrupted-leftover", "platform writer", tmp_leftover, ["restamp"],
        f"removed 1 temporary file(s) an interrupted run left: {PLAT}/.{VICTIM}.json.999999999.abcdef.tmp", 0, then=no_leftover,
        changes=(f"{PLAT}/.{VICTIM}.json.999999999.abcdef.tmp",)),
    Row("status-other-identity-list", "platform writer", lambda L: other_platform(L, b"[1]"), ["status"],
        "linux-x86_64-other-box/platform.json: not a valid platform identity", 0),

    # -- numbers from records: never an OverflowError ---------------------------------------------
    Row("claim-product-of-large-ints", "numbers", big_records(10**200, 10**200), ["status"], "victim@cpu:big0 * victim@cpu:big1 … too large", 0,
        changes=(f"{PLAT}/{VICTIM}.json",)),
    Row("claim-product-of-large-ints-check", "numbers", big_records(10**300, -10**300), ["status", "--check"], "too large", 1,
        changes=(f"{PLAT}/{VICTIM}.json",)),
    Row("claim-large-ints-that-fit", "numbers", big_records(10**150, 10**150), ["status"], "", 0, changes=(f"{PLAT}/{VICTIM}.json",)),

    # -- output that cannot be written: the batch finishes, the end says where it went --------------
    Row("status-latin1", "output", lambda L: None, ["status"], "", 0, env={"PYTHONIOENCODING": "latin-1"}),
    Row("status-ascii", "output", lambda L: None, ["status"], "", 0, env={"PYTHONIOENCODING": "ascii"}),
    Row("regenerate-ascii-changed", "output", victim_code("print('中文 ✓')\n"), ["regenerate"], "note: … written as \\u escapes", 0,
        env={"PYTHONIOENCODING": "ascii"}, changes=VIC_CHANGES),
    Row("regenerate-cp1252", "output", victim_code("print('中文 ✓')\n"), ["regenerate"], f"{VICTIM}", 0,
        env={"PYTHONIOENCODING": "cp1252"}, changes=VIC_CHANGES),
    Row("regenerate-stderr-closed", "output", victim_code("print('changed')\n"), REGEN, "note: stderr could not be written … .capture/logs/regenerate-", 0,
        shell="{cmd} 2>&-", changes=VIC_CHANGES, then=log_holds("regenerate", f"{VICTIM}")),
    Row("regenerate-stderr-head", "output", victim_code("print('changed')\n"), REGEN, "platform", 0,
        shell="{cmd} 2>&1 | head -1; exit ${{PIPESTATUS[0]}}", changes=VIC_CHANGES, then=batch_finished_and_logged),
    Row("status-json-true", "output", lambda L: None, ["status", "--json"], "note: stdout could not be written", 0,
        shell="{cmd} | true; exit ${{PIPESTATUS[0]}}"),
    Row("status-stdout-closed", "output", lambda L: None, ["status"], "note: stdout could not be written", 0, shell="{cmd} >&-",
        then=log_holds("status", "fresh")),
    Row("status-json-latin1", "output", lambda L: None, ["status", "--json"], "", 0, env={"PYTHONIOENCODING": "latin-1"}),
    Row("restamp-stdout-closed", "output", lambda L: None, ["restamp"], "note: stdout could not be written", 0, shell="{cmd} >&-",
        then=log_holds("restamp", "already current")),
    Row("regenerate-both-closed", "output", victim_code("print('changed')\n"), REGEN, "", 0, shell="{cmd} >&- 2>&-",
        changes=VIC_CHANGES, then=log_holds("regenerate", "note: stderr")),
    Row("status-both-closed", "output", lambda L: None, ["status"], "", 0, shell="{cmd} >&- 2>&-", then=log_holds("status", "note: stdout")),
]


def run_cli(L: Layout, row: Row) -> tuple[int, str]:
    cmd = [sys.executable, "-c", spawn_code(), "--root", str(L.root), *row.argv]
    env = cli_env(**row.env)
    if row.shell:
        line = row.shell.format(cmd=" ".join(shlex.quote(c) for c in cmd))
        p = subprocess.run(["bash", "-c", line], env=env, capture_output=True, text=True, timeout=120)
    else:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, errors="replace")
    return p.returncode, p.stdout + p.stderr


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_round3(fb, row):
    if not row.as_root and IS_ROOT:
        pytest.skip("root reads any file: an unreadable folder cannot be made")
    row.setup(fb)
    before = snapshot(fb)
    try:
        rc, out = run_cli(fb, row)
    finally:
        for p in fb.root.rglob("*"):  # let pytest clean up what a row made unreadable
            if not p.is_symlink() and p.is_dir() and not os.access(p, os.R_OK | os.X_OK):
                os.chmod(p, 0o755)
    assert "Traceback" not in out, out
    assert rc in (row.rc if isinstance(row.rc, tuple) else (row.rc,)), f"exit {rc}:\n{out}"
    pos = 0
    for part in row.message.split(" … ") if row.message else ():
        found = out.find(part, pos)
        assert found >= 0, f"{part!r} not in:\n{out}"
        pos = found + len(part)
    after = snapshot(fb)
    for good in GOODS:
        assert {k: v for k, v in key_files(after, good).items() if ".failed." not in k} == \
            {k: v for k, v in key_files(before, good).items() if ".failed." not in k}, f"{good} changed"
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    # a regenerate also captures `after` (never captured in the template) and rewrites this host's identity
    allowed = set(row.changes) | ({f"{PLAT}/platform.json", f"{PLAT}/after@cpu.txt", f"{PLAT}/after@cpu.json"}
                                  if "regenerate" in row.argv and "--adopt" not in row.argv else set())
    assert changed <= allowed, f"changed beyond {sorted(allowed)}: {sorted(changed - allowed)}"
    if row.then:
        row.then(fb, out)


@pytest.mark.parametrize("delay", [0.01, 0.02, 0.05, 0.1, 0.2, 0.35])
def test_ctrl_c_while_status_starts_leaves_no_traceback(fb, delay):
    """Ctrl-C at any moment of `status` (imports included) ends with a line, never a traceback."""
    code = ("import threading, _thread, runpy, sys\n"
            f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
            f"t = threading.Timer({delay}, _thread.interrupt_main)\n"
            "t.daemon = True  # the harness's timer: the interpreter's exit does not wait for it\n"
            "t.start()\n"
            f"sys.argv = ['capture', '--root', {str(fb.root)!r}, 'status']\n"
            "runpy.run_module('capture', run_name='__main__', alter_sys=True)\n")
    before = snapshot(fb)
    p = subprocess.run([sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True, timeout=120)
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode in (0, 130), p.stderr
    if p.returncode == 130:
        assert "interrupted" in p.stderr, p.stderr
    assert snapshot(fb) == before


def test_the_table_covers_every_class():
    counts: dict[str, int] = {}
    for r in ROWS:
        counts[r.category] = counts.get(r.category, 0) + 1
    assert len({r.id for r in ROWS}) == len(ROWS)
    assert set(counts) == {"non-regular file", "replaced folder", "platform writer", "output", "numbers"}, counts
    assert min(counts.values()) >= 3, counts
    assert not re.search(r"\s$", "".join(r.message for r in ROWS))


# -- numbers, in the core: exact ints or a clear "too large"; never more digits than measured, never -0 --------
NBSP = "\u00a0"
FORMAT_ROWS = [  # (value, unit, style, shown)
    (5e-324, "s", "", f"4.94e-315{NBSP}ns"),
    (5e-324, "", "", "4.94e-324"),
    (-0.0, "s", "", f"0{NBSP}ns"),
    (-0.0, "", "", "0"),
    (-0.0, "", "ratio", f"0{NBSP}倍"),
    (-0.0, "", "percent", "0%"),
    (-0.0, "B", "", f"0{NBSP}B"),
    (10**200, "", "", "1" + "0" * 200),  # a count: exact
    (3.3e199, "", "", "3.30e+199"),  # a float past 2**53: no invented digits
    (1e300, "s", "", f"1.00e+300{NBSP}s"),
    (1e16, "", "", "1.00e+16"),
    (1e300, "", "ratio", f"1.00e+292{NBSP}亿倍"),
    (2.5e-9, "s", "", f"2.5{NBSP}ns"),
    (123456, "s", "", f"123000{NBSP}s"),
]


@pytest.mark.parametrize("value, unit, style, shown", FORMAT_ROWS, ids=[f"{v!r}-{u}-{s}"[:40] for v, u, s, _ in FORMAT_ROWS])
def test_the_formatter_shows_only_the_digits_it_has(value, unit, style, shown):
    from capture.evidence.fmt import fmt_value
    from capture.evidence.query import Value
    out = fmt_value(Value(value, unit), style=style) if unit or style else fmt_value(value)
    assert out == shown
    assert len(out) < 40 or set(out) <= set("0123456789"), out  # only an exact count may be long


BIG = 10**200
ARITH_ROWS = [  # (expression, records, value or the QueryError's words)
    ("a@cpu:x * a@cpu:x", {"x": BIG}, "too large"),
    ("a@cpu:x * a@cpu:x > 1", {"x": BIG}, "too large"),
    ("-a@cpu:x * a@cpu:x", {"x": BIG}, "too large"),
    ("a@cpu:x * a@cpu:x - 1", {"x": BIG}, "too large"),
    ("median(a@cpu:x) * a@cpu:x", {"x": BIG}, "too large"),
    ("a@cpu:x * 1e200", {"x": BIG}, "too large"),
    ("a@cpu:x / a@cpu:x", {"x": BIG}, 1.0),
    ("a@cpu:x + 1", {"x": 2**60}, 2**60 + 1),  # exact while it fits
    ("a@cpu:x * a@cpu:x", {"x": 10**150}, 10**300),
    ("a@cpu:x > 1.5", {"x": BIG}, True),
]


@pytest.mark.parametrize("expr, recs, want", ARITH_ROWS, ids=[r[0] for r in ARITH_ROWS])
def test_arithmetic_on_large_records_is_exact_or_too_large(expr, recs, want):
    from capture.evidence.query import Evaluator, QueryError
    ev = Evaluator(lambda ref: [{"name": ref.name, "value": recs[ref.name], "unit": "", "tags": {}}])
    if isinstance(want, str):
        with pytest.raises(QueryError, match=want):
            ev.eval(expr)
    else:
        assert ev.eval(expr).v == want


# -- messages that named the wrong cause -----------------------------------------------------------
def test_an_argument_list_too_long_is_not_called_a_wrong_binary(tmp_path):
    import errno
    from capture.machines.platform import exec_failure
    exe = Path(sys.executable).resolve()
    msg = exec_failure(str(exe), OSError(errno.E2BIG, os.strerror(errno.E2BIG)))
    assert "Argument list too long" in msg and "getconf ARG_MAX" in msg and "executable and this machine" not in msg
    msg = exec_failure(str(exe), OSError(errno.EACCES, os.strerror(errno.EACCES)))
    assert "executable and this machine" not in msg  # the binary's kind is the cause only for ENOEXEC


@pytest.mark.parametrize("block", ["file", "fifo"])
def test_a_doctree_folder_that_cannot_be_written_is_one_clear_error(tmp_path, block):
    from sphinx.errors import ConfigError
    from capture.sphinxext.site import buildguard
    out = tmp_path / "html"
    out.mkdir()
    parent = tmp_path / "_build"
    if block == "file":
        parent.write_text("a file where the build folder goes\n")
    else:
        os.mkfifo(parent)
    app = type("App", (), {"outdir": str(out), "doctreedir": str(parent / ".doctrees")})()
    with pytest.raises(ConfigError, match=r"cannot write the build's doctree folder: .*_build.*; .*-d OTHER_DIR"):
        buildguard.on_config_inited(app, None)
    if getattr(app, "_book_build_lock", None) is not None:
        os.close(app._book_build_lock)
