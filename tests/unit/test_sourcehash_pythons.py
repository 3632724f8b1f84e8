"""The inputs hash of a Python file is the same on every Python the book runs on.

Python 3.12 tokenizes f-strings into parts (FSTRING_START / MIDDLE / END) where 3.11 gives one STRING
token; the H200 runs 3.12 and this box 3.11, so before hash scheme 3 every torch fragment captured there
looked stale here. The test hashes real and tricky sources under each interpreter it can find.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from capture.plan import sourcehash

REPO = Path(__file__).resolve().parents[2]

TRICKY = '''\
x = 3
a = f"{x}"
b = f'{x!r:>{10}} and {{braces}}'  # a comment
c = f"""multi
{x + 1}
line""" + rf"\\d{x}"
d = f"{'nested ' + f'{x}'}" ; e = "plain"
def g():
    return f"{x=}"  # self-documenting
'''

PROBE = r"""
import hashlib, sys
sys.path.insert(0, sys.argv[1])
from capture.plan import sourcehash
for path in sys.argv[2:]:
    data = open(path, 'rb').read()
    both = sourcehash.normalised('x.py', data, 'code') + '\0' + sourcehash.normalised('x.py', data, 'lines')
    print(hashlib.sha256(both.encode('utf-8', 'surrogateescape')).hexdigest())
"""


def interpreters() -> list[str]:
    """Other CPython 3.11+ interpreters on this machine (PATH, pyenv), one per minor version."""
    found: dict[str, str] = {}
    names = [shutil.which(f"python3.{m}") for m in range(11, 16)]
    pyenv = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    names += sorted(glob.glob(f"{pyenv}/versions/3.1[1-9]*/bin/python3"))
    for exe in filter(None, names):
        r = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True)
        if r.returncode == 0:  # a pyenv shim of a version not selected here fails
            found.setdefault(r.stdout.strip(), exe)
    return [found[k] for k in sorted(found)]


def digests(python: str, files: list[Path]) -> list[str]:
    r = subprocess.run([python, "-c", PROBE, str(REPO), *map(str, files)], capture_output=True, text=True, check=True)
    return r.stdout.split("\n")[:-1]


def test_python_sources_hash_the_same_on_every_interpreter(tmp_path):
    tricky = tmp_path / "tricky.py"
    tricky.write_text(TRICKY)
    files = [tricky, *sorted((REPO / "snippets").glob("*.py")), *sorted((REPO / "capture").rglob("*.py"))]
    pythons = interpreters()
    if len(pythons) < 2:
        pytest.skip(f"only {len(pythons)} CPython 3.11+ interpreter(s) found; need two to compare")
    here = digests(sys.executable, files)
    for p in pythons:
        assert digests(p, files) == here, f"{p} hashes Python sources differently from {sys.executable}"


def test_an_fstring_is_one_token_with_its_source_text():
    out = sourcehash.normalised("x.py", b'y = f"{a!r:>{w}} {{b}}"  # c\n', "code")
    assert out.splitlines() == ["NAME y", "OP =", 'STRING f"{a!r:>{w}} {{b}}"', "NEWLINE "]


def test_scheme_2_keeps_the_interpreters_own_tokens():
    text = b'y = f"{a}"\n'
    old = sourcehash.normalised("x.py", text, "code", scheme=2)
    if sys.version_info >= (3, 12):
        assert "FSTRING_START" in old
    else:
        assert old == sourcehash.normalised("x.py", text, "code", scheme=3)
