"""Faults and bad input, one case per row: what is broken, the message it must produce, the state of the store after.

Every row also asserts that the good fragments (good-a@cpu, good-b@cpu) did not change by a single byte,
and that nothing was written outside the book. Rows run the real entry points on a throwaway book
(real processes for the snippets; no torch, no Rust). Categories are counted in the closing report.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from dataclasses import dataclass
from typing import Callable

import pytest

from capture.commands import cli
from capture.commands.check import check
from capture.plan.manifest import load
from capture.storage.paths import Layout
from capture.evidence.book import Book
from capture.evidence.status import collect
from capture.storage.store import Store
from tests.faults.faultbook import CPU, GOODS, PLAT, key_files, run, set_entry, snapshot, write

VICTIM = "victim@cpu"
V_LINE = 15  # the victim's `id` line in the generated manifest


# -- how a row breaks the book -------------------------------------------------------------

def entry(body: str) -> Callable[[Layout], None]:
    """Replace the victim's manifest entry (its id line stays first, at line V_LINE)."""
    return lambda L: set_entry(L, "victim", 'id = "victim"\n' + body)


def manifest(text: str) -> Callable[[Layout], None]:
    return lambda L: write(L.manifest, text)


def code(src: str) -> Callable[[Layout], None]:
    return lambda L: write(L.root / "snippets/victim.py", src)


def records(raw: bytes, then: str = "") -> Callable[[Layout], None]:
    return code(f"import os\nprint('victim with records')\nopen(os.environ['BOOK_RECORDS'], 'wb').write({raw!r})\n{then}")


def frag(name: str, data: bytes) -> Callable[[Layout], None]:
    return lambda L: write(L.fragments / PLAT / name, data)


def both(*fs) -> Callable[[Layout], None]:
    def setup(L):
        for f in fs:
            f(L)
    return setup


def symlink(rel: str, target: Callable[[Layout], object]) -> Callable[[Layout], None]:
    def setup(L):
        link = L.root / rel
        if link.is_dir() and not link.is_symlink():
            import shutil
            shutil.rmtree(link)
        link.unlink(missing_ok=True)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target(L))
    return setup


def outside_file(L: Layout):
    p = L.root.parent / "outside" / "evil.py"
    write(p, "print('outside the repository')\n")
    return p


def outside_dir(L: Layout):
    d = L.root.parent / "outside-snippets"
    write(d / "victim.py", "print('outside')\n")
    write(d / "say.py", "print('outside')\n")
    return d


def outside_crate(L: Layout):
    d = L.root.parent / "outside-crate"
    write(d / "Cargo.toml", '[package]\nname = "evil"\nversion = "0.1.0"\n')
    return d


def good_meta(L: Layout) -> dict:
    return json.loads((L.fragments / PLAT / f"{VICTIM}.json").read_text())


def meta_with(**changes):
    def setup(L):
        m = good_meta(L)
        m.update(changes)
        write(L.fragments / PLAT / f"{VICTIM}.json", json.dumps(m))
    return setup


def truncated(L: Layout):
    p = L.fragments / PLAT / f"{VICTIM}.json"
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])


def git_repo(L: Layout) -> None:
    """Make the book a git repository (everything committed; `ignored/` ignored): the watch then asks git."""
    import subprocess

    write(L.root / ".gitignore", "ignored/\n.capture/\n__pycache__/\n")
    git = ["git", "-C", str(L.root), "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "book"]):
        subprocess.run(git + args, check=True, capture_output=True)


# -- the table -----------------------------------------------------------------------------

# A snippet that writes where it must not (the current folder is the repository's root).
REPO_WRITE = """\
import os, shutil
FR = "docs/_fragments/linux-x86_64-cpu/"
def write(path, text, mode="w"):
    with open(path, mode) as f:
        f.write(text)
print("victim ok")
"""
G = f"docs/_fragments/{PLAT}/"
REPO_ROWS = [
    ("other-fragment-text", "write(FR + 'good-a@cpu.txt', 'vandal\\n')\n", f"changed files outside its scratch folder: {G}good-a@cpu.txt (restored)"),
    ("other-fragment-json", "write(FR + 'good-b@cpu.json', '{}')\n", f"{G}good-b@cpu.json (restored)"),
    ("other-fragment-appended", "write(FR + 'good-a@cpu.txt', 'more\\n', 'a')\n", f"{G}good-a@cpu.txt (restored)"),
    ("other-fragment-deleted", "os.remove(FR + 'good-b@cpu.txt')\n", f"{G}good-b@cpu.txt (restored)"),
    ("other-fragment-same-size-same-mtime",
     "st = os.stat(FR + 'good-a@cpu.txt')\nwrite(FR + 'good-a@cpu.txt', 'X' * st.st_size)\nos.utime(FR + 'good-a@cpu.txt', ns=(st.st_atime_ns, st.st_mtime_ns))\n",
     f"{G}good-a@cpu.txt (restored)"),
    ("own-fragment", "write(FR + 'victim@cpu.txt', 'mine\\n')\n", f"{G}victim@cpu.txt (restored)"),
    ("new-fragment", "write(FR + 'evil@cpu.json', '{}')\nwrite(FR + 'evil@cpu.txt', 'evil')\n",
     f"{G}evil@cpu.json (restored), {G}evil@cpu.txt (restored)"),
    ("platform-folder-replaced", "shutil.rmtree(FR)\nos.symlink('/tmp', FR.rstrip('/'))\n", f"{G}good-a@cpu.json (restored)"),
    ("store-removed", "shutil.rmtree('docs/_fragments')\n", f"{G}good-b@cpu.txt (restored)"),
    ("page", "write('docs/index.md', '# vandal\\n')\n",
     "changed files outside its scratch folder: docs/index.md. A run may write only in its scratch folder … git checkout -- docs/index.md"),
    ("manifest", "write('docs/experiments.toml', '# more\\n', 'a')\n", "changed files outside its scratch folder: docs/experiments.toml."),
    ("snippet", "write('snippets/say.py', '# touched\\n', 'a')\n", "snippets/say.py"),
]
GIT_ROWS = [  # the same watch when the book is a git repository
    ("tracked", "write('snippets/say.py', '# touched\\n', 'a')\n", "changed files outside its scratch folder: snippets/say.py.", "failed"),
    ("untracked", "write('docs/new.md', '# new\\n')\n", "changed files outside its scratch folder: docs/new.md.", "failed"),
    ("fragment", "write(FR + 'good-a@cpu.txt', 'vandal\\n')\n", f"{G}good-a@cpu.txt (restored)", "failed"),
    ("ignored", "os.makedirs('ignored', exist_ok=True)\nwrite('ignored/x', 'x')\n", "ok", "ok"),
]

# Records files: (id, bytes a snippet wrote to BOOK_RECORDS, the message, whether the run may publish).
RECORD_ROWS = [
    ("record-nan", b'{"name": "r", "value": NaN}\n', "line 1: NaN is not a finite number", False),
    ("record-infinity", b'{"name": "r", "value": 1}\n{"name": "r", "value": -Infinity}\n', "line 2: -Infinity is not a finite number", False),
    ("record-null", b'{"name": "r", "value": null}\n', "line 1: record 'r': value null is a NoneType, not a number, string or bool", False),
    ("record-list-value", b'{"name": "r", "value": [1]}\n', "line 1: record 'r': value [1] is a list", False),
    ("record-empty-name", b'{"name": "", "value": 1}\n', "line 1: name must be a non-empty string, not ''", False),
    ("record-int-name", b'{"name": 3, "value": 1}\n', "line 1: name must be a non-empty string, not 3", False),
    ("record-unit-int", b'{"name": "r", "value": 1, "unit": 1}\n', "line 1: record 'r': unit must be a string", False),
    ("record-nested-tag", b'{"name": "r", "value": 1, "tags": {"a": {"b": 1}}}\n', "line 1: record 'r': tag 'a'", False),
    ("record-tags-list", b'{"name": "r", "value": 1, "tags": ["a"]}\n', "tags must be an object of scalars, not list", False),
    ("record-unknown-field", b'{"name": "r", "value": 1, "note": "x"}\n', "line 1: unknown field(s) ['note']", False),
    ("record-not-object", b'[1, 2]\n', "line 1: a record is a JSON object, not list", False),
    ("record-bad-utf8", b'{"name": "r", "value": 1}\n{"name": "\xff", "value": 2}\n', "line 2: not UTF-8 (byte 0xff at column 11)", False),
    ("record-bad-json-middle", b'{"name": "r", "value": 1}\n{"name": \n{"name": "s", "value": 2}\n', "line 2: Expecting value", False),
    ("record-huge-int", b'{"name": "r", "value": 1' + b"0" * 400 + b'}\n', "line 1: record 'r': value an integer of 401 digits is too large for a number", False),
    ("record-huge-int-tag", b'{"name": "r", "value": 1, "tags": {"n": 1' + b"0" * 400 + b'}}\n', "record 'r': tag 'n': an integer of 401 digits", False),
    ("record-int-past-digit-limit", b'{"name": "r", "value": 1' + b"0" * 5000 + b'}\n', "line 1: an integer of more than 4300 digits is too large", False),
    ("record-lone-surrogate", b'{"name": "r", "value": "a\\ud800"}\n', "record 'r': value 'a\\ud800' is not valid Unicode text (a lone surrogate '\\ud800' at character 2)", False),
    ("record-surrogate-name", b'{"name": "\\udfff", "value": 1}\n', "line 1: name '\\udfff' is not valid Unicode text", False),
    ("record-surrogate-unit", b'{"name": "r", "value": 1, "unit": "\\ud800"}\n', "record 'r': unit '\\ud800' is not valid Unicode text", False),
    ("record-half-last-line", b'{"name": "r", "value": 1}\n{"name": "s", "va', "ok", True),
]


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    setup: Callable[[Layout], None]
    action: str  # cli | regen | force | status | read | check
    message: str  # must appear in what the action reports (parts separated by " … " must each appear, in order)
    victim: str  # state of victim@cpu after: unchanged | failed | ok | corrupt
    batch: bool = True  # the rest of the batch (`after`) runs fine; False: the goods fail too (failure records beside them)


M = f"docs/experiments.toml:{V_LINE}: experiment victim: "
S = 'script = "snippets/victim.py"\n'

CASES = [
    # manifest mistakes: the whole run refuses, naming file:line: id: reason; nothing is written
    Case("expect-int", "manifest", entry(S + "expect = 0\n"), "cli", M + "expect must be a string: 'exit N', 'exit any' or 'timeout', not integer 0", "unchanged"),
    Case("expect-words", "manifest", entry(S + 'expect = "exit zero"\n'), "cli", M + "expect must be 'exit N'", "unchanged"),
    Case("expect-role-missing", "manifest", entry(S + 'roles = ["cpu", "gpu"]\nexpect = { cpu = "exit 0" }\n'), "cli", M + "expect: no value for role(s) ['gpu']", "unchanged"),
    Case("args-string", "manifest", entry(S + 'args = "a b"\n'), "cli", M + "args must be an array of strings, not string 'a b'", "unchanged"),
    Case("args-int-item", "manifest", entry(S + "args = [1]\n"), "cli", M + "args[0] must be a string, not integer 1", "unchanged"),
    Case("args-unknown-placeholder", "manifest", entry(S + 'args = ["{dev}"]\n'), "cli", M + "args: unknown placeholder {dev} in '{dev}' (did you mean 'device'?)", "unchanged"),
    Case("args-placeholder-typo", "manifest", entry(S + 'args = ["--on={devcie}"]\n'), "cli", "unknown placeholder {devcie}", "unchanged"),
    Case("args-role-missing", "manifest", entry(S + 'roles = ["cpu", "gpu"]\nargs = { cpu = ["x"] }\n'), "cli", M + "args: no value for role(s) ['gpu']", "unchanged"),
    Case("args-role-unknown", "manifest", entry(S + 'args = { tpu = ["x"], cpu = [] }\n'), "cli", M + "args: unknown role(s) ['tpu']", "unchanged"),
    Case("platforms-unknown", "manifest", entry(S + 'platforms = ["windows"]\n'), "cli", M + "platforms: unknown operating system 'windows'", "unchanged"),
    Case("platforms-typo", "manifest", entry(S + 'platforms = ["macOS"]\n'), "cli", "(did you mean 'macos'?)", "unchanged"),
    Case("platforms-string", "manifest", entry(S + 'platforms = "linux"\n'), "cli", M + "platforms must be an array of strings", "unchanged"),
    Case("mask-invalid-regex", "manifest", entry(S + "mask = ['(unclosed']\n"), "cli", M + "mask[0] '(unclosed' is not a valid regular expression", "unchanged"),
    Case("mask-string", "manifest", entry(S + "mask = 'x+'\n"), "cli", M + "mask must be an array of strings", "unchanged"),
    Case("unknown-key-timout", "manifest", entry(S + "timout = 5\n"), "cli", M + "unknown key 'timout' in this entry (did you mean 'timeout'?)", "unchanged"),
    Case("unknown-key-far", "manifest", entry(S + "colour = 'red'\n"), "cli", M + "unknown key 'colour' in this entry; allowed: id, framework", "unchanged"),
    Case("timeout-negative", "manifest", entry(S + "timeout = -1\n"), "cli", M + "timeout must be a positive number of seconds, not -1", "unchanged"),
    Case("timeout-string", "manifest", entry(S + 'timeout = "10"\n'), "cli", M + "timeout must be a number of seconds, not string '10'", "unchanged"),
    Case("timeout-bool", "manifest", entry(S + "timeout = true\n"), "cli", M + "timeout must be a number of seconds, not boolean True", "unchanged"),
    Case("timeout-nan", "manifest", entry(S + "timeout = nan\n"), "cli", M + "timeout must be a positive number of seconds, not nan", "unchanged"),
    Case("env-int-value", "manifest", entry(S + "env = { A = 1 }\n"), "cli", M + "env.A must be a string (write 1 in quotes), not integer 1", "unchanged"),
    Case("env-string", "manifest", entry(S + 'env = "A=1"\n'), "cli", M + "env must be a table of strings", "unchanged"),
    Case("env-bad-name", "manifest", entry(S + 'env = { "1A" = "x" }\n'), "cli", M + "env: '1A' is not an environment variable name", "unchanged"),
    Case("roles-unknown", "manifest", entry(S + 'roles = ["tpu"]\n'), "cli", M + "roles must be a non-empty subset", "unchanged"),
    Case("roles-repeated", "manifest", entry(S + 'roles = ["cpu", "cpu"]\n'), "cli", "without repeats, not ['cpu', 'cpu']", "unchanged"),
    Case("roles-empty", "manifest", entry(S + "roles = []\n"), "cli", M + "roles must be a non-empty subset", "unchanged"),
    Case("framework-unknown", "manifest", entry(S + 'framework = "jax"\n'), "cli", M + "framework must be one of torch, burn, candle, none, not string 'jax'", "unchanged"),
    Case("script-and-crate", "manifest", entry(S + 'crate = "tiny"\n'), "cli", M + "give exactly one of script (Python) or crate (Rust)", "unchanged"),
    Case("neither-script-nor-crate", "manifest", entry('args = ["x"]\n'), "cli", M + "give exactly one of script", "unchanged"),
    Case("script-absolute", "manifest", entry('script = "/etc/passwd"\n'), "cli", M + "script '/etc/passwd' is absolute", "unchanged"),
    Case("script-dotdot", "manifest", entry('script = "snippets/../../../etc/x.py"\n'), "cli", M + "script 'snippets/../../../etc/x.py' has '..'", "unchanged"),
    Case("script-outside-snippets", "manifest", entry('script = "docs/conf.py"\n'), "cli", M + "script 'docs/conf.py' must be a Python file under snippets/", "unchanged"),
    Case("script-not-python", "manifest", entry('script = "snippets/victim.sh"\n'), "cli", "must be a Python file under snippets/", "unchanged"),
    Case("crate-path", "manifest", entry('crate = "../evil"\n'), "cli", M + "crate '../evil' must be a name", "unchanged"),
    Case("bin-without-crate", "manifest", entry(S + 'bin = "x"\n'), "cli", M + "bin names a binary of a crate; it needs crate", "unchanged"),
    Case("id-invalid", "manifest", lambda L: set_entry(L, "victim", 'id = "Victim_X"\n' + S), "cli", "docs/experiments.toml:15: experiment Victim_X: id must be a string of lowercase", "unchanged"),
    Case("id-missing", "manifest", lambda L: set_entry(L, "victim", S + 'title = "no id"\n'), "cli", "docs/experiments.toml:14: experiment ?: no id", "unchanged"),
    Case("id-duplicate", "manifest", lambda L: set_entry(L, "after", 'id = "good-a"\nscript = "snippets/say.py"\n'), "cli",
         "docs/experiments.toml:19: experiment good-a: duplicate experiment id 'good-a' (first at line 5)", "unchanged"),
    Case("source-hash-unknown", "manifest", entry(S + 'source_hash = "bytes"\n'), "cli", M + "source_hash must be one of code, lines, exact", "unchanged"),
    Case("max-output-negative", "manifest", entry(S + "max_output = -5\n"), "cli", M + "max_output must be positive, not -5", "unchanged"),
    Case("max-output-words", "manifest", entry(S + 'max_output = "lots"\n'), "cli", M + "max_output 'lots': write a number of bytes", "unchanged"),
    Case("title-int", "manifest", entry(S + "title = 3\n"), "cli", M + "title must be a string, not integer 3", "unchanged"),
    Case("defaults-unknown-key", "manifest", manifest('[defaults]\ntimout = 5\n\n[[experiment]]\nid = "good-a"\nscript = "snippets/say.py"\n'), "cli",
         "docs/experiments.toml:1: unknown key 'timout' in [defaults] (did you mean 'timeout'?)", "unchanged"),
    Case("defaults-expect-int", "manifest", manifest("[defaults]\nexpect = 0\n"), "cli", "docs/experiments.toml:1: [defaults] expect must be a string", "unchanged"),
    Case("top-level-typo", "manifest", manifest('[[experimnet]]\nid = "x"\n'), "cli", "unknown key 'experimnet' in the manifest (did you mean 'experiment'?)", "unchanged"),
    Case("toml-syntax", "manifest", manifest('[[experiment]]\nid = "x\n'), "cli", "docs/experiments.toml: Illegal character", "unchanged"),
    Case("two-mistakes-both-named", "manifest", entry(S + "expect = 0\ntimout = 1\n"), "cli", "source_hash, max_output, processes, caches, needs, gpu_device, features, runs\n" + M + "expect must be a string", "unchanged"),

    # a missing or escaping file fails that experiment (failure record naming the manifest line), not the run
    Case("script-missing", "missing file", entry('script = "snippets/gone.py"\n'), "regen", M + "script snippets/gone.py not found", "failed"),
    Case("crate-missing", "missing file", entry('crate = "gone"\n'), "regen", M + "crate crates/gone not found", "failed"),
    Case("script-is-a-folder", "missing file", both(entry('script = "snippets/dir.py"\n'), lambda L: (L.root / "snippets/dir.py").mkdir()), "regen", "script snippets/dir.py not found", "failed"),
    Case("import-unreadable", "missing file", code("import helper\n"), "regen", "ModuleNotFoundError: No module named 'helper'", "failed"),

    # paths that leave their root
    Case("script-symlink-out", "path", both(entry('script = "snippets/evil.py"\n'), symlink("snippets/evil.py", outside_file)), "regen",
         "leaves", "failed"),
    Case("script-symlink-in-repo", "path", both(entry('script = "snippets/conf.py"\n'), lambda L: write(L.root / "docs/conf.py", "print(1)\n"),
                                                  symlink("snippets/conf.py", lambda L: L.root / "docs/conf.py")), "regen", "only files inside", "failed"),
    Case("snippets-dir-symlink-out", "path", symlink("snippets", outside_dir), "regen", M + "the snippets/ folder … leaves … (through a symlink)", "failed", batch=False),
    Case("crate-symlink-out", "path", both(entry('crate = "evil"\n'), symlink("crates/evil", outside_crate)), "regen", "crate ", "failed"),
    Case("fragment-symlink-out", "path", symlink(f"docs/_fragments/{PLAT}/{VICTIM}.json", lambda L: outside_file(L)), "read", "a symlink is not a fragment", "corrupt"),
    Case("platform-dotdot-read", "platform key", lambda L: None, "read:../../x", "'../../x' is not a valid platform key", "unchanged"),
    Case("platform-slash-write", "platform key", lambda L: None, "write:a/b", "'a/b' is not a valid platform key", "unchanged"),
    Case("platform-empty-write", "platform key", lambda L: None, "write:", "'' is not a valid platform key", "unchanged"),
    Case("platform-upper-write", "platform key", lambda L: None, "write:Linux-X86", "'Linux-X86' is not a valid platform key", "unchanged"),
    Case("platform-env-regenerate", "platform key", lambda L: None, "cli:BOOK_PLATFORM=../../x", "BOOK_PLATFORM '../../x' is not a valid platform key", "unchanged"),
    Case("platform-env-status", "platform key", lambda L: None, "cli-status:BOOK_PLATFORM=a b", "'a b' is not a valid platform key", "unchanged"),
    Case("platform-scratch", "platform key", lambda L: None, "scratch:../x", "'../x' is not a valid platform key", "unchanged"),

    # corrupt store files: a state (named with the path) that regenerate overwrites, never a crash
    Case("json-truncated-status", "corrupt store", truncated, "status", f"corrupt: … /docs/_fragments/{PLAT}/{VICTIM}.json: invalid JSON", "corrupt"),
    Case("json-truncated-regen", "corrupt store", truncated, "regen", "ok", "ok"),
    Case("json-truncated-force-only", "corrupt store", truncated, "force", "ok", "ok"),
    Case("json-empty", "corrupt store", frag(f"{VICTIM}.json", b""), "read", f"{VICTIM}.json: empty", "corrupt"),
    Case("json-empty-regen", "corrupt store", frag(f"{VICTIM}.json", b"  \n"), "regen", "ok", "ok"),
    Case("json-list", "corrupt store", frag(f"{VICTIM}.json", b"[]"), "read", "metadata is a JSON list, not an object", "corrupt"),
    Case("json-string", "corrupt store", frag(f"{VICTIM}.json", b'"x"'), "status", f"corrupt: … {VICTIM}.json: metadata is a JSON str, not an object", "corrupt"),
    Case("json-no-hash", "corrupt store", frag(f"{VICTIM}.json", b"{}"), "read", "metadata has no 'inputs_hash'", "corrupt"),
    Case("json-hash-int", "corrupt store", meta_with(inputs_hash=5), "read", "metadata field 'inputs_hash' is int, not str", "corrupt"),
    Case("json-records-string", "corrupt store", meta_with(records="x"), "read", "metadata field 'records' is str, not list", "corrupt"),
    Case("json-record-nan", "corrupt store", lambda L: write(L.fragments / PLAT / f"{VICTIM}.json",
         json.dumps({**good_meta(L), "records": [{"name": "a", "value": float("nan")}]})), "read", "records[0]: record 'a': value nan is not a finite number", "corrupt"),
    Case("json-record-no-name", "corrupt store", meta_with(records=[{"value": 1}]), "status", "corrupt: … records[0]: name must be a non-empty string", "corrupt"),
    Case("json-exit-status-bool", "corrupt store", meta_with(exit_status=True), "read", "metadata field 'exit_status' is bool, not int/null", "corrupt"),
    Case("json-bad-utf8", "corrupt store", lambda L: write(L.fragments / PLAT / f"{VICTIM}.json", b'{"inputs_hash": "\xff"}'), "read", "not UTF-8 (byte 0xff", "corrupt"),
    Case("txt-bad-utf8", "corrupt store", frag(f"{VICTIM}.txt", b"victim \xfe ok\n"), "read", f"{VICTIM}.txt: not UTF-8 (byte 0xfe at offset 7)", "corrupt"),
    Case("txt-bad-utf8-regen", "corrupt store", frag(f"{VICTIM}.txt", b"\xfe"), "regen", "ok", "ok"),
    Case("txt-missing-torn", "corrupt store", lambda L: (L.fragments / PLAT / f"{VICTIM}.txt").unlink(), "status", "torn: text and metadata disagree", "ok-after-regen"),
    Case("failed-json-corrupt", "corrupt store", frag(f"{VICTIM}.failed.json", b"{"), "status", f"corrupt: … {VICTIM}.failed.json: invalid JSON", "corrupt"),
    Case("failed-json-corrupt-regen", "corrupt store", frag(f"{VICTIM}.failed.json", b"[1]"), "regen", "ok", "ok"),
    Case("skipped-json-corrupt", "corrupt store", frag(f"{VICTIM}.skipped.json", b"nope"), "status", f"corrupt: … {VICTIM}.skipped.json: JSONDecodeError", "corrupt"),
    Case("skipped-json-corrupt-regen", "corrupt store", frag(f"{VICTIM}.skipped.json", b"[]"), "regen", "ok", "ok"),
    Case("json-is-a-folder", "corrupt store", lambda L: ((L.fragments / PLAT / f"{VICTIM}.json").unlink(), (L.fragments / PLAT / f"{VICTIM}.json").mkdir()),
         "regen", f"cannot write to the fragment store: … {VICTIM}.json: Is a directory; fix that path, then run the command again", "unchanged"),
    Case("check-corrupt-committed", "corrupt store", truncated, "check", f"{VICTIM}: committed fragment is corrupt", "corrupt"),

    # output caps
    Case("output-over-default-cap", "output cap", code("import sys\nsys.stdout.write('x' * 300000)\n"), "regen",
         "output passed max_output (300000 > 262144 bytes); kept truncated, not published. If that much output is intended, raise max_output at " + M[:-2], "failed"),
    Case("output-forever", "output cap", code("while True:\n    print('y' * 1000)\n"), "regen", "output passed max_output", "failed"),
    Case("output-cap-raised", "output cap", both(code("import sys\nsys.stdout.write('x' * 300000)\n"), entry(S + 'max_output = "1 MiB"\n')), "regen", "ok", "ok"),
    Case("output-cap-small", "output cap", both(code("print('z' * 200)\n"), entry(S + "max_output = 100\n")), "regen", "(201 > 100 bytes)", "failed"),
    Case("output-at-cap", "output cap", both(code("import sys\nsys.stdout.write('z' * 100)\n"), entry(S + "max_output = 100\n")), "regen", "ok", "ok"),
    Case("records-over-cap", "output cap", both(records(b'{"name": "r", "value": 1}\n' * 20), entry(S + "max_output = 200\n")), "regen",
         "records file passed max_output (520 > 200 bytes)", "failed"),

    # records: see RECORD_ROWS
    *[Case(i, "records", records(raw), "regen", "ok" if ok else msg, "ok" if ok else "failed") for i, raw, msg, ok in RECORD_ROWS],

    # a run that writes into the repository fails, naming what it changed; the fragment store is put back
    *[Case(f"writes-{cid}", "repository", code(REPO_WRITE + body), "regen", message, "failed") for cid, body, message in REPO_ROWS],
    *[Case(f"git-writes-{cid}", "repository", both(git_repo, code(REPO_WRITE + body)), "regen", message, state) for cid, body, message, state in GIT_ROWS],
    Case("writes-scratch-only", "repository", code(REPO_WRITE + "write(os.path.join(os.path.dirname(os.environ['BOOK_RECORDS']), 'mine.txt'), 'x')\n"),
         "regen", "ok", "ok"),

    # runs that end the wrong way keep the last good fragment
    Case("exit-1-unexpected", "run", code("raise SystemExit(1)\n"), "regen", "expected exit 0, got exit 1", "failed"),
    Case("hang-past-timeout", "run", both(code("import time\nprint('working', flush=True)\ntime.sleep(60)\n"), entry(S + "timeout = 1\n")), "regen", "expected exit 0, got timeout", "failed"),
    Case("timeout-expected-but-exits", "run", entry(S + 'expect = "timeout"\n'), "force", "expected timeout, got exit 0", "failed"),
    Case("exception-unexpected", "run", code("raise RuntimeError('boom')\n"), "regen", "RuntimeError: boom", "failed"),
]


def _cli(fb: Layout, argv: list[str], env: dict[str, str], monkeypatch) -> str:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(err):
        try:
            rc = cli.main(["--root", str(fb.root), *argv])
        except SystemExit as e:
            return f"{e.code}\n{err.getvalue()}"
    return f"exit {rc}\n{err.getvalue()}"


def act(fb: Layout, action: str, monkeypatch, batch: bool = True) -> str:
    """Run the action; everything it reports, as one text."""
    store = Store(fb.fragments)
    kind, _, arg = action.partition(":")
    if kind in ("cli", "cli-status"):
        env = {"BOOK_PLATFORM": PLAT}
        if arg:
            k, _, v = arg.partition("=")
            env[k] = v
        return _cli(fb, ["regenerate"] if kind == "cli" else ["status"], env, monkeypatch)
    if kind in ("regen", "force"):
        outcomes, log = run(fb, **({"force": True, "only": ["victim"]} if kind == "force" else {}))
        if kind == "regen" and batch:
            assert outcomes["after@cpu"].status == "ok", log  # the rest of the batch ran
        failed = store.read(PLAT, VICTIM, failed=True)
        return "\n".join([log, outcomes[VICTIM].status, outcomes[VICTIM].message, failed.text if failed else ""])
    if kind == "status":
        entries = collect(Book(fb.root), [PLAT])
        return "\n".join(f"{e.state}: {e.detail}" for e in entries if e.key == VICTIM)
    if kind == "read":
        try:
            frag = store.read(arg or PLAT, VICTIM)
        except ValueError as e:
            return str(e)
        return frag.corrupt or ""
    if kind == "write":
        with pytest.raises(ValueError) as e:
            store.write(arg, VICTIM, "x\n", {"inputs_hash": "h"})
        return str(e.value)
    if kind == "scratch":
        with pytest.raises(ValueError) as e:
            fb.run_dir(arg)
        return str(e.value)
    if kind == "check":
        out = io.StringIO()
        rc = check(fb, load(fb.manifest), store, CPU, only=["victim"], out=out)
        return f"exit {rc}\n{out.getvalue()}"
    raise AssertionError(action)


def outside_listing(fb: Layout) -> set[str]:
    """Files next to the book (its parent folder), except the ones rows create on purpose as symlink targets."""
    return {p.relative_to(fb.root.parent).as_posix() for p in fb.root.parent.rglob("*")
            if fb.root not in (p, *p.parents) and not p.relative_to(fb.root.parent).parts[0].startswith("outside")}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fault(fb, case, monkeypatch):
    case.setup(fb)
    before = snapshot(fb)
    around = outside_listing(fb)
    report = act(fb, case.action, monkeypatch, case.batch)
    pos = 0
    for part in case.message.split(" … "):
        found = report.find(part, pos)
        assert found >= 0, f"{part!r} not in:\n{report}"
        pos = found + len(part)
    assert not re.search(r'File ".*/capture/', report), report  # no traceback out of the machinery
    after = snapshot(fb)
    for good in GOODS:
        def own(snap):
            return {k: v for k, v in key_files(snap, good).items() if ".failed." not in k or case.batch}
        assert own(after) == own(before), f"{good} changed"
    assert outside_listing(fb) == around, "something was written outside the book"
    assert_victim(fb, case.victim, before, after)


def assert_victim(fb: Layout, state: str, before: dict, after: dict) -> None:
    store = Store(fb.fragments)
    def mine(snap):
        return {k: v for k, v in key_files(snap, VICTIM).items() if ".failed." not in k and ".skipped." not in k}
    if state == "unchanged":
        assert key_files(after, VICTIM) == key_files(before, VICTIM)
    elif state == "failed":
        assert mine(after) == mine(before), "the last good fragment changed"
        failed = store.read(PLAT, VICTIM, failed=True)
        assert failed is not None and not failed.corrupt and failed.meta["failure"]
    elif state == "ok":
        frag = store.read(PLAT, VICTIM)
        assert frag is not None and not frag.torn and not frag.corrupt
        assert store.read(PLAT, VICTIM, failed=True) is None and store.corrupt(PLAT, VICTIM) is None
        assert frag.text and frag.meta["exit_status"] == 0
    elif state == "ok-after-regen":  # reported, then repaired by a plain regenerate
        outcomes, log = run(fb)
        assert outcomes[VICTIM].status == "ok", log
        assert_victim(fb, "ok", before, snapshot(fb))
    elif state == "corrupt":
        assert mine(after) == mine(before) or not mine(before)
        assert store.corrupt(PLAT, VICTIM)
        # and the next regenerate repairs it
        outcomes, log = run(fb, force=True, only=["victim"])
        assert outcomes[VICTIM].status == "ok", log
        assert store.corrupt(PLAT, VICTIM) is None and not store.read(PLAT, VICTIM).torn
    else:
        raise AssertionError(state)


def test_table_is_large_enough_and_covers_every_category():
    cats = {}
    for c in CASES:
        cats[c.category] = cats.get(c.category, 0) + 1
    assert len(CASES) >= 60 and len({c.id for c in CASES}) == len(CASES)
    assert {"manifest", "missing file", "path", "platform key", "corrupt store", "output cap", "records", "run", "repository"} <= set(cats)


def test_an_unforeseen_error_fails_its_job_alone(fb, monkeypatch):
    """Whatever a job raises that no rule foresaw, that job fails with a located message and a log of the
    traceback; the batch goes on and the last good fragment stays."""
    import capture.running.regenerate as regen

    real = regen.sanitize.records

    def records(recs, places):
        if any(r["name"] == "victim.value" for r in recs):
            raise RuntimeError("no rule for this")
        return real(recs, places)

    monkeypatch.setattr(regen.sanitize, "records", records)
    before = snapshot(fb)
    outcomes, log = run(fb, force=True, only=["victim", "after"])
    assert outcomes["after@cpu"].status == "ok", log
    msg = outcomes[VICTIM].message
    assert msg.startswith(f"internal error while capturing {VICTIM} (docs/experiments.toml:{V_LINE}: experiment victim): "
                          "RuntimeError: no rule for this; the traceback is in .capture/runs/"), msg
    log_file = fb.root / msg.split("the traceback is in ")[1].split(";")[0]
    assert "Traceback" in log_file.read_text() and "Traceback" not in log
    assert_victim(fb, "failed", before, snapshot(fb))
    for good in GOODS:
        assert key_files(snapshot(fb), good) == key_files(before, good)
