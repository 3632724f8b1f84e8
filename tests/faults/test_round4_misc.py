"""Faults, round 4 (issue 43, part B): behaviours a held-out fault run found misleading, each through the real
command line in a child process on a throwaway book (so a hang is a timeout and a narrow stream a real one).

Every case asserts the message (parts in order, " … " between them), the exit status, no traceback, and that the
committed files are byte-identical unless the command is meant to change them (and then which ones):

1. `noise --seeds 0` tested nothing and passed: refused, at least one seed.
2. `status --json` on a stream that cannot write UTF-8 (LC_ALL=C PYTHONUTF8=0) printed Python's escapes, not JSON.
3. A FIFO (or a link loop, a dangling link) at docs/experiments.toml read as "no docs/experiments.toml".
4. The refusal of another machine's platform offered `--adopt` on a host --adopt refuses (no GPU for a GPU platform).
5. A read-only docs/_build stopped the Sphinx build with an extension error (buildguard) or Sphinx's own traceback.
6. bench_status said "over budget at 1,000 experiments" with the 5,000-experiment figure.
7. A symlink loop in place of a fragment file: tracebacks in status, restamp and regenerate.
8. `--adopt` with a manifest cut down deleted the fragments of the experiments it no longer names without a word.
"""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from capture.storage.paths import Layout
from tests.faults.faultbook import ENTRIES, GOODS, PLAT, REPO, cli_env, manifest_text, spawn_code, write
from tests.faults.test_round3 import GPU_KEY, IS_ROOT, gpu_platform

VICTIM = "victim@cpu"
F = f"docs/_fragments/{PLAT}"
TIMEOUT = 120
TRACEBACK = ("Traceback", "Exception occurred", "Extension error")


def book_files(L: Layout) -> dict[str, bytes]:
    """Every regular file of the book (the committed files) but the machinery's own: its scratch (.capture/) and
    the store's lock file."""
    out = {}
    for p in sorted(L.root.rglob("*")):
        rel = p.relative_to(L.root).as_posix()
        if rel.startswith(".capture/") or rel == "docs/_fragments/.lock" or p.is_symlink() or not p.is_file():
            continue
        out[rel] = p.read_bytes()
    return out


def cli(L: Layout, argv: list[str], env: dict | None = None, cwd: Path | None = None, root: bool = True,
        stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", spawn_code(), *(["--root", str(L.root)] if root else []), *argv]
    e = cli_env(**(env or {}))
    if "PYTHONIOENCODING" not in (env or {}):  # the stream's encoding is the case's
        e.pop("PYTHONIOENCODING", None)
    return subprocess.run(cmd, env=e, capture_output=True, text=True, errors="replace", timeout=TIMEOUT,
                          cwd=cwd or L.root, stdin=stdin)


def says(out: str, message: str) -> None:
    """The parts of `message` (split at " … ") appear in `out` in that order."""
    pos = 0
    for part in message.split(" … "):
        found = out.find(part, pos)
        assert found >= 0, f"{part!r} not in:\n{out}"
        pos = found + len(part)


def clean(p: subprocess.CompletedProcess) -> str:
    out = p.stdout + p.stderr
    for word in TRACEBACK:
        assert word not in out, out
    return out


# -- 1. noise --seeds 0 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("seeds", ["0", "-3", "many"])
def test_noise_with_no_seed_is_refused(fb, seeds):
    before = book_files(fb)
    p = cli(fb, ["noise", "--seeds", seeds])
    out = clean(p)
    assert p.returncode == 2, out
    says(out, "noise: error: argument --seeds: … give at least 1")
    assert "flips" not in out
    assert book_files(fb) == before


# -- 2. status --json on a narrow stream -------------------------------------------------------------------
ODD = "café × 😀 中"  # Latin-1 range, outside the BMP, CJK: Python's escapes for the first two are not JSON


def odd_reason(L: Layout) -> None:
    """A skip record whose reason status shows in an entry's detail, with characters no narrow encoding has."""
    (L.fragments / PLAT / "after@cpu.skipped.json").write_text(
        json.dumps({"schema": 2, "reason": ODD}, ensure_ascii=True) + "\n", encoding="utf-8")


@pytest.mark.parametrize("env", [{"LC_ALL": "C", "PYTHONUTF8": "0"}, {"PYTHONIOENCODING": "ascii"},
                                 {"PYTHONIOENCODING": "latin-1"}, {"PYTHONIOENCODING": "cp1252"},
                                 {"PYTHONIOENCODING": "utf-8"}], ids=lambda e: "-".join(f"{k}={v}" for k, v in e.items()))
def test_status_json_is_json_whatever_the_stream_encodes(fb, env):
    odd_reason(fb)
    before = book_files(fb)
    p = cli(fb, ["status", "--json"], env=env)
    clean(p)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)  # the test reads the bytes as UTF-8 (text=True under the suite's C.UTF-8)
    details = {e["key"]: e["detail"] for e in data["entries"] if e["platform"] == PLAT}
    assert details["after@cpu"] == ODD, details
    if env.get("PYTHONIOENCODING") != "utf-8":
        assert p.stdout.isascii(), p.stdout  # JSON's own \u escapes, nothing the stream had to replace
        assert "cannot show" not in p.stderr, p.stderr
    assert book_files(fb) == before


# -- 3. a manifest that is not a regular file, found from the working folder ---------------------------------
def fifo_manifest(L: Layout) -> None:
    L.manifest.unlink()
    os.mkfifo(L.manifest)


def loop_manifest(L: Layout) -> None:
    L.manifest.unlink()
    L.manifest.symlink_to("experiments.toml")


def dangling_manifest(L: Layout) -> None:
    L.manifest.unlink()
    L.manifest.symlink_to("gone.toml")


MANIFEST_CASES = [
    (fifo_manifest, "docs/experiments.toml is a FIFO (named pipe), not a regular file; remove it (rm … ) and restore "
                    "it (git -C … checkout -- docs/experiments.toml)"),
    (loop_manifest, "docs/experiments.toml is a symlink loop (it points back to itself), not a regular file; remove it"),
    (dangling_manifest, "docs/experiments.toml: No such file or directory (a symlink to gone.toml); remove it (rm"),
]


@pytest.mark.parametrize("argv", [["status"], ["regenerate", "--no-review"], ["restamp"], ["noise"]], ids=lambda a: a[0])
@pytest.mark.parametrize("setup, message", MANIFEST_CASES, ids=["fifo", "loop", "dangling"])
@pytest.mark.parametrize("where", [".", "docs"])
def test_a_manifest_that_is_no_file_is_named_for_what_it_is(fb, setup, message, argv, where):
    setup(fb)
    before = book_files(fb)
    p = cli(fb, argv, root=False, cwd=fb.root / where)
    out = clean(p)
    assert p.returncode == 1, out
    says(out, message)
    assert "no docs/experiments.toml above" not in out
    assert book_files(fb) == before


def test_a_fifo_manifest_with_root_given_still_says_what_it_is(fb):
    fifo_manifest(fb)
    p = cli(fb, ["status"])
    assert p.returncode == 1
    says(clean(p), "docs/experiments.toml: cannot read … is a FIFO (named pipe), not a regular file")


# -- 4. the refusal of another machine's platform offers only ways that work here ---------------------------------
def foreign_cpu(L: Layout) -> None:
    """This host's platform, but its identity names another CPU: a host that can adopt it."""
    p = L.fragments / PLAT / "platform.json"
    ident = json.loads(p.read_text())
    ident["cpu"] = ident["fingerprint"]["cpu"] = "Some Other CPU(R) 9000"
    p.write_text(json.dumps(ident, indent=1))


def test_a_gpu_platform_on_a_host_without_gpu_is_not_offered_adopt(fb):
    gpu_platform(fb)
    before = book_files(fb)
    p = cli(fb, ["regenerate", "--no-review"], env={"BOOK_PLATFORM": GPU_KEY})
    out = clean(p)
    assert p.returncode == 2, out
    says(out, f"this host is not the machine whose fragments are under docs/_fragments/{GPU_KEY} … Nothing was written. "
              "One way on: … capture this host as a platform of its own: BOOK_PLATFORM= … "
              f"{GPU_KEY} cannot be adopted on this host: it cannot run what the platform holds (gpu: burn on cuda; "
              "… on a machine that can")
    assert "Two ways on" not in out and "or adopt" not in out
    assert book_files(fb) == before
    # and the --adopt it no longer suggests is indeed refused here
    p = cli(fb, ["regenerate", "--adopt", "--no-review"], env={"BOOK_PLATFORM": GPU_KEY})
    assert p.returncode == 2 and f"cannot adopt {GPU_KEY} on this host" in clean(p)
    assert book_files(fb) == before


def test_status_on_a_host_that_cannot_adopt_does_not_suggest_it(fb):
    gpu_platform(fb)
    before = book_files(fb)
    p = cli(fb, ["status"], env={"BOOK_PLATFORM": GPU_KEY})
    out = clean(p)
    assert p.returncode == 0, out
    says(out, f"this host is not {GPU_KEY}'s machine … This host cannot be made that machine (it cannot run gpu: "
              "… to capture it as a platform of its own: BOOK_PLATFORM=linux-")
    assert "-- --adopt" not in out
    assert book_files(fb) == before


def test_a_host_that_can_adopt_is_still_offered_both_ways(fb):
    foreign_cpu(fb)
    before = book_files(fb)
    p = cli(fb, ["regenerate", "--no-review"], env={"BOOK_PLATFORM": PLAT})
    out = clean(p)
    assert p.returncode == 2, out
    says(out, f"Two ways on: … BOOK_PLATFORM= … or adopt {PLAT} on this host: nox -s regenerate -- --adopt")
    p = cli(fb, ["status"], env={"BOOK_PLATFORM": PLAT})
    says(clean(p), "To make this host that machine: nox -s regenerate -- --adopt")
    assert book_files(fb) == before


# -- 5. a read-only docs/_build: one line from buildguard ----------------------------------------------------
CONF = f'''
import sys
sys.path.insert(0, {str(REPO)!r})
extensions = ["myst_parser", "capture.sphinxext.site.buildguard"]
language = "en"
'''

# A read-only file system for one folder, as root too (root writes through chmod): an audit hook refuses, with
# EROFS, every write under it (open for writing, mkdir, remove, rename), as a read-only mount does.
READ_ONLY = '''
import errno, os, sys
ro = os.path.realpath(sys.argv.pop(1))
def inside(p):
    try:
        p = os.path.realpath(os.fsdecode(p))
    except (TypeError, ValueError):
        return False
    return p == ro or p.startswith(ro + os.sep)
WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
def hook(event, args):
    if event == "open" and args and inside(args[0]):
        mode, flags = args[1], args[2]
        if (isinstance(mode, str) and set(mode) & set("wax+")) or (mode is None and isinstance(flags, int) and flags & WRITE):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(args[0]))
    elif event == "os.mkdir" and args and inside(args[0]) and not os.path.lexists(args[0]):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(args[0]))
    elif event in ("os.remove", "os.rmdir", "os.rename", "os.chmod") and args and inside(args[0]):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(args[0]))
sys.addaudithook(hook)
from sphinx.cmd.build import main
sys.exit(main(sys.argv[1:]))
'''


def sphinx_project(tmp_path: Path) -> Path:
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    src = tmp_path.resolve() / "site"  # as Sphinx names it
    write(src / "conf.py", CONF)
    write(src / "index.md", "# Book\n\nOne page.\n")
    return src


def sphinx(src: Path, read_only: Path | None = None) -> subprocess.CompletedProcess:
    args = ["-q", "-b", "html", str(src), str(src / "_build" / "html")]
    if read_only is None:
        cmd = [sys.executable, "-m", "sphinx", *args]
    else:
        cmd = [sys.executable, "-c", READ_ONLY, str(read_only), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, cwd=src)


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("state", ["empty", "built", "interrupted"])
def test_a_read_only_build_folder_is_one_line_from_buildguard(tmp_path, state):
    src = sphinx_project(tmp_path)
    build = src / "_build"
    build.mkdir()
    if state != "empty":
        assert sphinx(src).returncode == 0
    if state == "interrupted":  # the marker of a build stopped between saving the environment and writing the pages
        (build / "html" / ".doctrees" / "book-build-incomplete").write_text("pid 1\n")
    before = tree(build)
    p = sphinx(src, read_only=build)
    out = clean(p)
    assert p.returncode == 2, out
    what = "output folder" if state == "empty" else "doctree folder"
    says(out, f"cannot write the build's {what}: {build} … Read-only file system … remount it writable or build into "
              "another folder (sphinx-build ... SOURCEDIR OTHER_DIR")
    assert len([ln for ln in out.splitlines() if ln.strip()]) <= 2, out  # "Configuration error:" and the line
    assert tree(build) == before


@pytest.mark.skipif(IS_ROOT, reason="root writes through chmod: the read-only mount is simulated above")
@pytest.mark.parametrize("state", ["empty", "built", "interrupted"])
def test_a_chmod_read_only_build_folder_is_one_line_from_buildguard(tmp_path, state):
    src = sphinx_project(tmp_path)
    build = src / "_build"
    build.mkdir()
    if state != "empty":
        assert sphinx(src).returncode == 0
    if state == "interrupted":
        (build / "html" / ".doctrees" / "book-build-incomplete").write_text("pid 1\n")
    before = tree(build)
    for p in [build, *build.rglob("*")]:
        if p.is_dir():
            p.chmod(0o555)
    try:
        p = sphinx(src)
    finally:
        for q in [build, *build.rglob("*")]:
            if q.is_dir():
                q.chmod(0o755)
    out = clean(p)
    assert p.returncode == 2, out
    says(out, f"cannot write the build's … Permission denied … make it writable (chmod -R u+w {build}")
    assert tree(build) == before


# -- 6. bench_status judges each size by its own figure ------------------------------------------------------
@pytest.mark.parametrize("figures, message", [
    ({63: 0.2, 1000: 2.6, 5000: 9.0}, "over budget at 1,000 experiments: 2.60 CPU s > 2 s (2 s per 1,000 experiments)"),
    ({63: 0.2, 1000: 1.1, 5000: 12.5}, "over budget at 5,000 experiments: 12.50 CPU s > 10 s"),
    ({63: 0.2, 1000: 1.9, 5000: 9.5}, ""),
], ids=["1000-over", "5000-over", "within"])
def test_bench_status_names_the_size_whose_figure_is_over(monkeypatch, capsys, tmp_path, figures, message):
    from capture.commands import bench_status

    monkeypatch.setattr(bench_status, "make_book", lambda root, n: "linux-x86_64-cpu")

    def timed(cmd, runs, ok=(0,)):  # (wall, CPU, output) of one command on the book of n experiments
        n = int(Path(cmd[cmd.index("--root") + 1]).name.split("-")[1])
        return figures[n] / 2, figures[n], f"linux-x86_64-cpu ( {n} fresh"

    monkeypatch.setattr(bench_status, "timed", timed)
    rc = bench_status.main(["--sizes", *map(str, figures), "--runs", "1", "--keep", str(tmp_path / "books")])
    out = capsys.readouterr().out
    assert rc == (1 if message else 0), out
    if message:
        says(out, message)
        assert out.count("over budget") == 1, out
    else:
        assert "over budget" not in out, out


# -- 7. a symlink loop in place of a fragment file ------------------------------------------------------------
def loop(rel: str):
    def setup(L: Layout) -> None:
        p = L.root / rel
        p.unlink(missing_ok=True)
        p.symlink_to(p.name)
    return setup


LOOPED = "a symlink loop (it points back to itself), not a regular file; remove it"
LOOP_CASES = [  # (file, argv, message, exit status, the victim's files may change)
    ("json", ["status"], f"corrupt  {VICTIM} … {VICTIM}.json: {LOOPED}", 0, False),
    ("txt", ["status"], f"corrupt  {VICTIM} … {VICTIM}.txt: {LOOPED}", 0, False),
    ("json", ["restamp"], f"left as it was: {PLAT}/{VICTIM}.json (corrupt: … {VICTIM}.json: {LOOPED}", 0, False),
    ("txt", ["restamp"], f"left as it was: {PLAT}/{VICTIM}.json (corrupt: … {VICTIM}.txt: {LOOPED}", 0, False),
    ("json", ["check", "--only", "victim"], f"{VICTIM}: committed fragment is corrupt … {LOOPED}", 1, False),
    ("json", ["regenerate", "--no-review"], f"{VICTIM} … ok", 0, True),
    ("txt", ["regenerate", "--no-review"], f"{VICTIM} … ok", 0, True),
    ("failed.json", ["status"], f"{VICTIM}.failed.json: {LOOPED}", 0, False),
]


@pytest.mark.parametrize("suffix, argv, message, rc, rewrites", LOOP_CASES,
                         ids=[f"{c[0]}-{c[1][0]}" for c in LOOP_CASES])
def test_a_symlink_loop_for_a_fragment_is_a_corrupt_fragment(fb, suffix, argv, message, rc, rewrites):
    loop(f"{F}/{VICTIM}.{suffix}")(fb)
    before = book_files(fb)
    p = cli(fb, argv)
    out = clean(p)
    assert p.returncode == rc, out
    says(out, message)
    after = book_files(fb)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    victim = {f"{F}/{VICTIM}.txt", f"{F}/{VICTIM}.json"}
    may = (victim | {f"{F}/platform.json", f"{F}/after@cpu.txt", f"{F}/after@cpu.json"}) if rewrites else set()
    assert changed <= may, sorted(changed - may)
    if rewrites:  # the loop was replaced by the new capture
        assert not (fb.root / F / f"{VICTIM}.{suffix}").is_symlink()
        assert "fresh    " + VICTIM in clean(cli(fb, ["status"]))


# -- 8. --adopt that would delete fragments the manifest no longer names ----------------------------------------
def cut_manifest(L: Layout, extra: int = 0) -> None:
    """The manifest names only the victim; the platform also holds good-a, good-b and `extra` more fragments."""
    write(L.manifest, manifest_text({"victim": ENTRIES["victim"]}))
    d = L.fragments / PLAT
    for i in range(extra):
        for ext in ("txt", "json"):
            shutil.copy(d / f"good-a@cpu.{ext}", d / f"x{i:02d}@cpu.{ext}")


ADOPT = ["regenerate", "--adopt", "--no-review"]


def dropped_line(n: int) -> str:
    return (f"--adopt replaces {F} by what this host captures, and docs/experiments.toml names no experiment and role "
            f"for {n} of its committed fragments: ")


def test_adopt_without_a_terminal_or_yes_deletes_nothing_and_names_the_flag(fb):
    cut_manifest(fb)
    before = book_files(fb)
    p = cli(fb, ADOPT)
    out = clean(p)
    assert p.returncode == 2, out
    says(out, f"error: {dropped_line(2)}good-a@cpu, good-b@cpu. They would be deleted. Nothing was run or written. "
              "To delete them, run it again with --yes (nox -s regenerate -- --adopt --yes). To keep them, put their "
              "experiments back in docs/experiments.toml")
    assert book_files(fb) == before
    assert not (fb.root / ".capture/adopt").exists()  # nothing ran


def test_adopt_lists_many_fragments_shortly(fb):
    cut_manifest(fb, extra=30)
    before = book_files(fb)
    p = cli(fb, ADOPT)
    out = clean(p)
    assert p.returncode == 2, out
    says(out, f"{dropped_line(32)}good-a@cpu, good-b@cpu, x00@cpu, … x09@cpu and 20 more. They would be deleted")
    assert "x10@cpu" not in out
    assert book_files(fb) == before


def test_adopt_with_yes_lists_then_deletes(fb):
    cut_manifest(fb)
    before = book_files(fb)
    p = cli(fb, [*ADOPT, "--yes"])
    out = clean(p)
    assert p.returncode == 0, out
    says(out, f"{dropped_line(2)}good-a@cpu, good-b@cpu. They would be deleted (confirmed with --yes). … "
              f"adopted: {F} now holds 1 fragments … deleted 2 that no experiment names: good-a@cpu, good-b@cpu")
    after = book_files(fb)
    assert not any(k.startswith(f"{F}/good-") for k in after)
    assert {k for k in before if k not in after} == {f"{F}/{g}.{x}" for g in GOODS for x in ("txt", "json")}


def test_yes_without_adopt_is_refused(fb):
    before = book_files(fb)
    p = cli(fb, ["regenerate", "--yes"])
    assert p.returncode == 2
    says(clean(p), "error: --yes confirms what --adopt deletes; it does nothing without --adopt")
    assert book_files(fb) == before


def test_adopt_of_every_named_fragment_asks_nothing(fb):
    foreign_cpu(fb)
    p = cli(fb, ADOPT)
    out = clean(p)
    assert p.returncode == 0, out
    assert "would be deleted" not in out and "adopted: " in out


@pytest.mark.parametrize("answer, rc", [(b"n\n", 2), (b"\n", 2), (b"", 2), (b"y\n", 0)], ids=["n", "enter", "eof", "y"])
def test_adopt_on_a_terminal_asks(fb, answer, rc):
    cut_manifest(fb)
    before = book_files(fb)
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-c", spawn_code(), "--root", str(fb.root), *ADOPT], env=cli_env(),
                                stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=fb.root)
        os.close(slave)
        slave = -1
        if answer:
            os.write(master, answer)
        else:
            os.write(master, b"\x04")  # end of input on a terminal (Ctrl-D)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    p = subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))
    text = clean(p)
    assert p.returncode == rc, text
    says(text, f"{dropped_line(2)}good-a@cpu, good-b@cpu. They would be deleted. … delete these 2 fragment(s) of {F} "
               "when the adoption finishes? [y/N]")
    if rc:
        says(text, "not confirmed: nothing was run or written")
        assert book_files(fb) == before
    else:
        says(text, "deleted 2 that no experiment names")
        assert not (fb.fragments / PLAT / "good-a@cpu.json").exists()

