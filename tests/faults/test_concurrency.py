"""`check` and `regenerate` at the same time (e.g. `nox -s tests` in one terminal, `nox -s regenerate` in
another): every fragment regenerate publishes is exactly what its own run produced.

Each run of the snippet draws a token, prints its lines slowly (so the two processes overlap), records one
record per line, and leaves its whole expected output as evidence under the token's name. After each
trial, the published fragment's token leads to the evidence, which must match the text and the records
byte for byte. Real processes, `python -m capture` twice per trial. FAULTS_TRIALS sets the trial count.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys

from capture.storage.store import Store
from tests.faults.faultbook import PLAT, REPO, cli_env, spawn_code, write

TRIALS = int(os.environ.get("FAULTS_TRIALS", "12"))
LINES = 30

TALKER = f'''\
import json, os, secrets, sys, time
import bookrec
token = f"{{os.getpid()}}-{{secrets.token_hex(4)}}"
text = ""
for i in range({LINES}):
    line = f"{{sys.argv[1]}} line {{i}} tok={{token}}"
    print(line, flush=True)
    text += line + "\\n"
    bookrec.record("line", i, "", tok=token)
    time.sleep(0.004)
with open(os.path.join(sys.argv[2], token + ".json"), "w") as f:
    json.dump({{"text": text, "records": {LINES}}}, f)
'''


def make(root, evidence):
    write(root / "snippets/talker.py", TALKER)
    write(root / "snippets/bookrec.py", (REPO / "snippets/bookrec.py").read_text())
    entries = "".join(
        f'\n[[experiment]]\nid = "talk-{n}"\nscript = "snippets/talker.py"\nargs = ["{n}", "{evidence}"]\nmask = [\'tok=\\S+\']\n'
        for n in ("a", "b", "c")
    )
    write(root / "docs/experiments.toml", "[defaults]\ntimeout = 60\n" + entries)


def cli(root, *args):
    return subprocess.Popen([sys.executable, "-c", spawn_code(), "--root", str(root), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=cli_env())


def test_check_and_regenerate_concurrently_never_publish_a_mixed_fragment(tmp_path):
    root, evidence = tmp_path / "book", tmp_path / "evidence"
    evidence.mkdir()
    make(root, evidence)
    first = cli(root, "regenerate", "--no-review")
    assert first.wait(timeout=120) == 0, first.stdout.read()
    store = Store(root / "docs/_fragments")
    rng = random.Random(14)
    published = set()
    for trial in range(TRIALS):
        procs = [cli(root, "check"), cli(root, "regenerate", "--no-review", "--force")]
        if rng.random() < 0.5:
            procs.reverse()
        outs = [p.communicate(timeout=300)[0] for p in procs]
        for p, out in zip(procs, outs):
            assert p.returncode == 0, f"trial {trial}: {p.args[-3:]} exit {p.returncode}:\n{out}"
        for n in ("a", "b", "c"):
            frag = store.read(PLAT, f"talk-{n}@cpu")
            assert frag is not None and not frag.torn and not frag.corrupt, f"trial {trial}: talk-{n}: {frag}"
            token = re.search(r"tok=(\S+)", frag.text).group(1)
            run = json.loads((evidence / f"{token}.json").read_text())
            assert frag.text == run["text"], f"trial {trial}: talk-{n} text is not what its run printed"
            assert len(frag.records) == run["records"] and {r["tags"]["tok"] for r in frag.records} == {token}
            assert [r["value"] for r in frag.records] == list(range(LINES))
            published.add(token)
    assert len(published) == 3 * TRIALS  # every trial published fresh fragments
    # each process cleaned its own scratch folder after success
    assert not [p for p in (root / ".capture").rglob("*") if p.is_file()]
    print(f"concurrent check+regenerate: {TRIALS} trials, {len(published)} published fragments compared")
