"""`check` (re-run and compare with the committed fragments) and `review` (what changed after a regenerate)."""

from __future__ import annotations

import io
import json
import os

import pytest

from capture.commands.check import check
from capture.plan.manifest import load
from capture.running.review import figure_changes, review
from capture.storage.store import Store, sha256_text
from tests.faults.faultbook import CPU, PLAT, cut_between_renames, run, set_entry, snapshot, write


def do_check(fb, only=None):
    out = io.StringIO()
    rc = check(fb, load(fb.manifest), Store(fb.fragments), CPU, only=only, out=out)
    return rc, out.getvalue()


def rewrite_committed(fb, key, text):
    """Change a committed fragment's text consistently (sha updated): a real mismatch, not a torn file."""
    js = fb.fragments / PLAT / f"{key}.json"
    meta = json.loads(js.read_text())
    meta["text_sha256"] = sha256_text(text)
    (fb.fragments / PLAT / f"{key}.txt").write_text(text)
    js.write_text(json.dumps(meta))


def test_check_passes_on_a_fresh_book_and_writes_nothing(fb):
    before = snapshot(fb)
    rc, out = do_check(fb, only=["good-a", "good-b", "victim"])
    assert rc == 0 and "check: 3 jobs, 0 problems" in out, out
    assert snapshot(fb) == before
    assert not [p for p in (fb.root / ".capture").rglob("*") if p.is_file()]  # its scratch is gone


def test_check_reports_a_changed_output_with_its_diff(fb):
    rewrite_committed(fb, "good-a@cpu", "say alpha, but different\n")
    rc, out = do_check(fb, only=["good-a"])
    assert rc == 1
    assert "MISMATCH good-a@cpu: output no longer matches the committed fragment" in out
    assert "-say alpha, but different" in out and "+say alpha" in out
    assert "check: 1 jobs, 1 problems" in out


def test_check_masks_what_the_manifest_masks(fb):
    rewrite_committed(fb, "good-a@cpu", "say ALPHA\n")
    # the mask is not an input: the fragment stays fresh; only the comparison changes
    set_entry(fb, "good-a", 'id = "good-a"\nscript = "snippets/say.py"\nargs = ["alpha"]\nmask = ["say \\\\w+"]\n')
    rc, out = do_check(fb, only=["good-a"])
    assert rc == 0, out


@pytest.mark.parametrize("setup, message", [
    (lambda fb: write(fb.root / "snippets/say.py", "print('changed')\n"), "committed fragment is stale (inputs changed); run `nox -s regenerate -- --only good-a --device cpu`"),
    (lambda fb: (fb.fragments / PLAT / "good-a@cpu.json").unlink(), "no committed fragment for linux-x86_64-cpu; run `nox -s regenerate -- --only good-a --device cpu` and commit it"),
    (lambda fb: (fb.fragments / PLAT / "good-a@cpu.json").write_text("{"), "committed fragment is corrupt ("),
    (lambda fb: cut_between_renames(fb.fragments / PLAT, "good-a@cpu", "say alpha\n", "half\n"), "committed fragment is torn"),
    (lambda fb: (fb.fragments / PLAT / "good-a@cpu.txt").write_text("half\n"), "committed fragment is corrupt ( … good-a@cpu.txt: edited after the capture"),
    (lambda fb: write(fb.root / "snippets/say.py", "raise SystemExit(3)\n"), "the fresh run failed: expected exit 0, got exit 3"),
], ids=["stale", "missing", "corrupt", "torn", "edited", "fresh-run-fails"])
def test_check_names_each_problem_and_its_fix(fb, setup, message):
    setup(fb)
    before = snapshot(fb)
    rc, out = do_check(fb, only=["good-a"])
    first, _, rest = message.partition(" … ")
    assert rc == 1 and f"MISMATCH good-a@cpu: {first}" in out and rest in out, out
    assert snapshot(fb) == before  # check never writes the committed store


def test_check_ignores_a_torn_file_that_settles(fb, monkeypatch):
    """A committed fragment caught between the two renames of a concurrent publish is read again."""
    import capture.commands.check as checkmod

    txt = fb.fragments / PLAT / "good-a@cpu.txt"
    good = txt.read_text()
    cut_between_renames(txt.parent, "good-a@cpu", good, "mid-publish\n", os.getpid())
    reads = []
    real = Store.read

    def read(self, platform, key, failed=False):
        reads.append(key)
        if len(reads) == 3:
            txt.write_text(good)  # the publish completes
        return real(self, platform, key, failed)

    monkeypatch.setattr(checkmod.Store, "read", read)
    monkeypatch.setattr(checkmod, "TORN_RETRIES", 5)
    rc, out = do_check(fb, only=["good-a"])
    assert rc == 0, out


# -- review --------------------------------------------------------------------------------

def test_review_shows_skeleton_diff_figures_and_pages(fb):
    write(fb.root / "docs/page.md", "见 {output}`good-a@cpu`\n")
    first, _ = run(fb, force=True, only=["after"])
    assert "after@cpu: new fragment" in review(list(first.values()), fb)
    write(fb.root / "snippets/say.py", (fb.root / "snippets/say.py").read_text().replace('print(f"say {word}")', 'print(f"said {word}!")').replace("len(word)", "len(word) * 2"))
    outcomes, _ = run(fb, only=["good-a"])
    text = review(list(outcomes.values()), fb)
    assert text.startswith("review (against the previous capture of this platform")
    assert "good-a@cpu: output skeleton CHANGED" in text
    assert "-say alpha" in text and "+said alpha!" in text
    assert "~ say.len{word=alpha}: 5 -> 10 (+100%)" in text
    assert "pages: docs/page.md" in text


def test_review_is_quiet_when_nothing_ran(fb):
    outcomes, _ = run(fb)
    assert review([o for o in outcomes.values() if o.key != "after@cpu"], fb) == ""


@pytest.mark.parametrize("old, new, threshold, expected", [
    ([{"name": "t", "value": 1.0, "tags": {}}], [{"name": "t", "value": 1.04, "tags": {}}], 0.05, []),
    ([{"name": "t", "value": 1.0, "tags": {}}], [{"name": "t", "value": 1.06, "tags": {}}], 0.05, ["    ~ t: 1 -> 1.06 (+6%)"]),
    ([{"name": "t", "value": 2.0, "tags": {"k": "a"}}], [], 0.0, ["    - t{k=a}: gone (was 2.0)"]),
    ([], [{"name": "t", "value": 2.0, "tags": {}}], 0.0, ["    + t: new 2.0"]),
    ([{"name": "p", "value": "cpu", "tags": {}}], [{"name": "p", "value": "cuda", "tags": {}}], 0.0, ["    ! p: 'cpu' -> 'cuda'"]),
    ([{"name": "b", "value": True, "tags": {}}], [{"name": "b", "value": False, "tags": {}}], 0.0, ["    ! b: True -> False"]),
    ([{"name": "z", "value": 0, "tags": {}}], [{"name": "z", "value": 0, "tags": {}}], 0.0, []),
])
def test_figure_changes(old, new, threshold, expected):
    assert figure_changes(old, new, threshold) == expected


def test_review_after_a_corrupt_fragment_was_repaired(fb):
    (fb.fragments / PLAT / "victim@cpu.json").write_text("[]")
    outcomes, _ = run(fb, only=["victim"])
    assert outcomes["victim@cpu"].status == "ok"
    text = review(list(outcomes.values()), fb)
    assert "victim@cpu" in text  # an old corrupt fragment has no text or records: shown as changed, no crash
