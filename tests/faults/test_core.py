"""The pure parts of the core that faults go through: path policy, records, store, manifest details, compare.

In-process and fast (no snippet runs), so that the mutation run (`nox -s mutate`) can afford them.
"""

from __future__ import annotations

import json
import os

import pytest

from capture.plan import manifest as mf
from capture.commands.check import compare
from capture.storage.keys import KeyError_
from capture.storage.paths import Layout, PathError, contained, relative_shape
from capture.storage.records import matches, parse_records, read_file, read_records, record_problem, select
from capture.running.regenerate import Outcome
from capture.storage.store import SCHEMA, Store, StoreLocked, meta_problem, sha256_text
from tests.faults.faultbook import cut_between_renames

PLAT = "linux-x86_64-cpu"


# -- path policy ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("", "must be a non-empty relative path"),
    ("   ", "must be a non-empty relative path"),
    (None, "must be a non-empty relative path, not None"),
    ("snippets\\a.py", "write the path with '/'"),
    ("snippets/a\0.py", "no NUL"),
    ("/abs/a.py", "is absolute"),
    ("C:/a.py", "is absolute"),
    ("snippets/../a.py", "has '..'"),
    ("./snippets/a.py", "has '..', '.'"),
    ("snippets//a.py", "an empty part"),
])
def test_relative_shape_refuses(text, message):
    with pytest.raises(PathError, match=message.replace("(", r"\(").replace(".", r"\.")):
        relative_shape(text, "script")


def test_relative_shape_accepts_a_plain_path():
    assert relative_shape("snippets/sub/a.py", "script").parts == ("snippets", "sub", "a.py")


def test_contained_allows_the_root_and_below_only(tmp_path):
    root = tmp_path / "r"
    (root / "a").mkdir(parents=True)
    assert contained(root, root, "x") == root.resolve()
    assert contained(root / "a" / "b", root, "x") == (root / "a" / "b").resolve()
    with pytest.raises(PathError, match="leaves"):
        contained(tmp_path / "r2", root, "x")  # a sibling whose name starts like the root
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(PathError, match=r"\(through a symlink\)"):
        contained(root / "link" / "f", root, "x")


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "snippets").mkdir(parents=True)
    (root / "snippets/a.py").write_text("print(1)\n")
    (root / "crates/c/src").mkdir(parents=True)
    (root / "crates/c/Cargo.toml").write_text("[package]\n")
    (root / "crates/c/src/main.rs").write_text("fn main() {}\n")
    return Layout(root)


def test_layout_paths_resolve_inside_their_roots(repo):
    assert repo.script("snippets/a.py") == (repo.root / "snippets/a.py").resolve()
    assert repo.crate("c") == (repo.root / "crates/c").resolve()
    assert repo.shown("crates/c/src/main.rs") == (repo.root / "crates/c/src/main.rs").resolve()
    assert repo.shown("snippets/a.py").name == "a.py"


@pytest.mark.parametrize("call, arg, message", [
    ("script", "crates/c/src/main.rs", "must be a file under snippets/"),
    ("script", "snippets", "must be a file under snippets/"),
    ("script", "snippets/none.py", "script snippets/none.py not found"),
    ("crate", "c/src", "must be a crate folder name"),
    ("crate", "none", "crate crates/none not found"),
    ("crate", 3, "must be a crate folder name"),
    ("shown", "docs/x.md", "only files under snippets/ or crates/"),
    ("shown", "crates", "only files under snippets/ or crates/"),
    ("shown", "snippets/none.py", "snippet file snippets/none.py not found"),
])
def test_layout_refuses(repo, call, arg, message):
    with pytest.raises((PathError, KeyError_), match=message):
        getattr(repo, call)(arg)


def test_a_folder_is_not_a_script(repo):
    (repo.root / "snippets/d.py").mkdir()
    with pytest.raises(PathError, match="not found"):
        repo.script("snippets/d.py")
    with pytest.raises(PathError, match="not found"):
        repo.shown("snippets/d.py")


def test_rel_names_a_path_inside_and_leaves_others_alone(repo, tmp_path):
    assert repo.rel(repo.root / "snippets/a.py") == "snippets/a.py"
    assert repo.rel(tmp_path / "elsewhere") == str(tmp_path / "elsewhere")


# -- records -------------------------------------------------------------------------------

def test_records_parse_fills_defaults_and_keeps_order():
    p = parse_records(b'{"name": "a", "value": 1}\n\n{"name": "b", "value": "x", "unit": "s", "tags": {"k": 2}}\n')
    assert p.errors == []
    assert p.records == [{"name": "a", "value": 1, "unit": "", "tags": {}},
                         {"name": "b", "value": "x", "unit": "s", "tags": {"k": 2}}]


def test_records_unterminated_bad_line_is_only_forgiven_at_the_end():
    assert parse_records(b'{"name": "a", "value": 1}\n{"na').errors == []
    assert parse_records(b'{"na\n{"name": "a", "value": 1}').errors[0].startswith("line 1:")
    assert parse_records(b'{"name": "a", "value": 1}').records[0]["name"] == "a"  # complete, just no newline
    assert parse_records(b'{"name": "", "value": 1}').errors == ["line 1: name must be a non-empty string, not ''"]


@pytest.mark.parametrize("rec, problem", [
    ({"name": "a", "value": True}, None),
    ({"name": "a", "value": 0}, None),
    ({"name": "a", "value": -1.5e-9, "unit": "s", "tags": {"b": True, "n": 1, "f": 0.5, "s": "x"}}, None),
    ({"name": " ", "value": 1}, "name must be a non-empty string"),
    ({"name": "a"}, "record 'a' has no value"),
    ({"name": "a", "value": float("inf")}, "value inf is not a finite number"),
    ({"name": "a", "value": None}, "value null is a NoneType"),
    ({"name": "a", "value": {"x": 1}}, "is a dict"),
    ({"name": "a", "value": 1, "tags": {"k": None}}, "tag 'k': null is a NoneType"),
    ({"name": "a", "value": 1, "tags": {"k": float("nan")}}, "tag 'k': nan is not a finite number"),
    ({"name": "a", "value": 1, "unit": None}, "unit must be a string"),
    ("a", "a record is a JSON object, not str"),
])
def test_record_problem(rec, problem):
    got = record_problem(rec)
    assert (got is None) if problem is None else (problem in got), got


def test_read_file_and_select(tmp_path):
    assert read_file(tmp_path / "absent").records == [] and read_records(tmp_path / "absent") == []
    f = tmp_path / "r.jsonl"
    f.write_bytes(b'{"name": "t", "value": 1, "tags": {"run": "0"}}\n{"name": "t", "value": 2, "tags": {"run": 1}}\nbad\n')
    recs = read_records(f)
    assert [r["value"] for r in recs] == [1, 2]
    assert [r["value"] for r in select(recs, "t", {"run": 1})] == [2]  # tags compare as text
    assert select(recs, "t") == recs and select(recs, "u") == []
    assert matches(recs[0], "t", {"run": "0"}) and not matches(recs[0], "t", {"run": "1"})
    assert read_file(f).errors == ["line 3: Expecting value: line 1 column 1 (char 0)"]


# -- store ---------------------------------------------------------------------------------

def test_store_write_read_round_trip(tmp_path):
    s = Store(tmp_path)
    s.write(PLAT, "e@cpu", "out\n", {"inputs_hash": "h", "records": [{"name": "a", "value": 1, "unit": "", "tags": {}}]})
    f = s.read(PLAT, "e@cpu")
    assert (f.text, f.inputs_hash, f.torn, f.corrupt) == ("out\n", "h", False, None)
    assert f.meta["schema"] == SCHEMA and f.meta["text_sha256"] == sha256_text("out\n") and f.records[0]["name"] == "a"
    assert s.read(PLAT, "other@cpu") is None and s.read(PLAT, "e@cpu", failed=True) is None
    assert s.keys(PLAT) == ["e@cpu"] and s.platforms() == [PLAT]
    assert not list((tmp_path / PLAT).glob(".*.tmp"))


def test_store_failure_then_success_clears_the_records(tmp_path):
    s = Store(tmp_path)
    s.write(PLAT, "e@cpu", "good\n", {"inputs_hash": "h"})
    s.write_failure(PLAT, "e@cpu", "bad\n", {"inputs_hash": "h", "failure": "boom"})
    s.write_skip(PLAT, "e@cpu", "no device")
    assert s.read(PLAT, "e@cpu").text == "good\n"
    assert s.read(PLAT, "e@cpu", failed=True).meta["failure"] == "boom"
    assert s.skip_reason(PLAT, "e@cpu") == "no device"
    assert s.keys(PLAT) == ["e@cpu"]
    s.write(PLAT, "e@cpu", "good again\n", {"inputs_hash": "h2"})
    assert s.read(PLAT, "e@cpu", failed=True) is None and s.skip_reason(PLAT, "e@cpu") is None


def test_skip_record_is_not_rewritten_when_unchanged(tmp_path):
    s = Store(tmp_path)
    s.write_skip(PLAT, "e@gpu", "why")
    p = tmp_path / PLAT / "e@gpu.skipped.json"
    os.utime(p, ns=(1, 1))
    s.write_skip(PLAT, "e@gpu", "why")
    assert p.stat().st_mtime_ns == 1
    s.write_skip(PLAT, "e@gpu", "other")
    assert p.stat().st_mtime_ns != 1 and s.skip_reason(PLAT, "e@gpu") == "other"
    p.write_text('{"schema": 1}')
    assert s.skip_reason(PLAT, "e@gpu") == "skipped"


def test_store_platforms_lists_valid_keys_only(tmp_path):
    for name in (PLAT, "Not A Key", ".hidden", "a..b"):
        (tmp_path / name).mkdir()
    (tmp_path / "file-not-dir").write_text("")
    assert Store(tmp_path).platforms() == [PLAT]
    assert Store(tmp_path / "absent").platforms() == [] and Store(tmp_path).keys("macos-arm64-x") == []


@pytest.mark.parametrize("key", ["e", "e@tpu", "E@cpu", "../e@cpu"])
def test_store_refuses_bad_fragment_keys(tmp_path, key):
    with pytest.raises(KeyError_):
        Store(tmp_path).read(PLAT, key)


def test_corrupt_names_the_first_bad_file(tmp_path):
    s = Store(tmp_path)
    s.write(PLAT, "e@cpu", "x\n", {"inputs_hash": "h"})
    assert s.corrupt(PLAT, "e@cpu") is None
    (tmp_path / PLAT / "e@cpu.skipped.json").write_text("{")
    assert "e@cpu.skipped.json" in s.corrupt(PLAT, "e@cpu")
    (tmp_path / PLAT / "e@cpu.failed.json").write_text("[]")
    assert "e@cpu.failed.json: metadata is a JSON list" in s.corrupt(PLAT, "e@cpu")
    (tmp_path / PLAT / "e@cpu.json").write_text("")
    assert s.corrupt(PLAT, "e@cpu").endswith("e@cpu.json: empty")
    f = s.read(PLAT, "e@cpu")
    assert f.torn and f.text == "" and f.meta == {} and f.records == [] and f.inputs_hash == ""


@pytest.mark.parametrize("meta, problem", [
    ({"inputs_hash": "h", "text_sha256": "s"}, None),
    ({"inputs_hash": "h", "text_sha256": "s", "device": None, "exit_status": None, "load_before": None}, None),
    ({"inputs_hash": "h", "text_sha256": "s", "exit_status": 3, "timed_out": False, "records": []}, None),
    ({"text_sha256": "s"}, "metadata has no 'inputs_hash'"),
    ({"inputs_hash": "h"}, "metadata has no 'text_sha256'"),
    ({"inputs_hash": "h", "text_sha256": "s", "timed_out": 0}, "'timed_out' is int, not bool"),
    ({"inputs_hash": "h", "text_sha256": "s", "exit_status": False}, "'exit_status' is bool, not int/null"),
    ({"inputs_hash": "h", "text_sha256": "s", "device": 1}, "'device' is int, not str/null"),
    ({"inputs_hash": "h", "text_sha256": "s", "inputs": []}, "'inputs' is list, not dict"),
    ({"inputs_hash": "h", "text_sha256": "s", "records": [{"name": "a", "value": [1]}]}, "records[0]: record 'a'"),
    ({"inputs_hash": "h", "text_sha256": "s", "records": [{"name": "a", "value": 1}, 2]}, "records[1]: a record is a JSON object"),
    (None, "metadata is a JSON NoneType"),
])
def test_meta_problem(meta, problem):
    got = meta_problem(meta)
    assert (got is None) if problem is None else (problem in got), got


def test_torn_is_an_interrupted_publish_and_an_edit_is_corrupt(tmp_path):
    s = Store(tmp_path)
    s.write(PLAT, "e@cpu", "x\n", {"inputs_hash": "h"})
    (tmp_path / PLAT / "e@cpu.txt").write_text("y\n")
    f = s.read(PLAT, "e@cpu")
    assert f.torn and f.corrupt == (f"{tmp_path / PLAT / 'e@cpu.txt'}: edited after the capture: the text is not the one "
                                    "e@cpu.json vouches for, and no interrupted write explains it (restore it from git, or capture it again)")
    cut_between_renames(tmp_path / PLAT, "e@cpu", "x\n", "y\n")
    f = s.read(PLAT, "e@cpu")
    assert f.torn and f.corrupt is None and f.text == "y\n"
    assert s.repair(PLAT) == ["e@cpu.txt"]  # its process is gone: the old text goes back
    assert s.read(PLAT, "e@cpu").text == "x\n" and not s.read(PLAT, "e@cpu").torn
    assert not list((tmp_path / PLAT).glob(".*.tmp"))
    (tmp_path / PLAT / "e@cpu.txt").unlink()
    assert s.read(PLAT, "e@cpu").torn and s.read(PLAT, "e@cpu").corrupt is None


def test_lock_refuses_a_second_holder_and_names_the_first(tmp_path):
    a, b = Store(tmp_path), Store(tmp_path)
    with a.lock():
        with pytest.raises(StoreLocked, match=rf"another regenerate is running on {tmp_path} \(pid {os.getpid()}, started "):
            with b.lock():
                pass
    with b.lock():  # released
        pass


# -- manifest details ----------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("exit 0", (0, False)), ("exit 101", (101, False)), ("exit -9", (-9, False)), ("exit any", (None, False)),
    (" timeout ", (None, True)),
])
def test_expect_parse(text, expected):
    e = mf.Expect.parse(text)
    assert (e.exit, e.timeout) == expected and mf.Expect.parse(str(e)) == e


@pytest.mark.parametrize("expect, exit_status, timed_out, met", [
    ("exit 0", 0, False, True), ("exit 0", 1, False, False), ("exit 0", None, True, False),
    ("exit 101", 101, False, True), ("exit any", 7, False, True), ("exit any", None, True, False),
    ("timeout", None, True, True), ("timeout", 0, False, False),
])
def test_expect_met_by(expect, exit_status, timed_out, met):
    assert mf.Expect.parse(expect).met_by(exit_status, timed_out) is met


@pytest.mark.parametrize("value, size", [
    (1, 1), (100, 100), ("100", 100), ("2 KB", 2000), ("2 KiB", 2048), ("1.5 MiB", 1572864), ("3MB", 3_000_000), ("7 B", 7),
])
def test_max_output_sizes(value, size):
    assert mf._size(value) == size


def write_manifest(tmp_path, text):
    p = tmp_path / "docs" / "experiments.toml"
    p.parent.mkdir(exist_ok=True)
    p.write_text(text)
    return p


def test_manifest_values_and_defaults(tmp_path):
    p = write_manifest(tmp_path, '[defaults]\ntimeout = 7\nexpect = "exit 3"\nmax_output = "1 KiB"\n\n'
                                 '[[experiment]]\nid = "a"\nscript = "snippets/a.py"\nroles = ["cpu", "gpu"]\n'
                                 'args = { cpu = ["x", "{device}"], gpu = [] }\nenv = { K = "v" }\nmask = ["m+"]\n'
                                 'platforms = ["macos"]\ntitle = "t"\nsource_hash = "exact"\n\n'
                                 '[[experiment]]\nid = "b"\ncrate = "c"\nbin = "d"\ntimeout = 2.5\nexpect = "timeout"\nmax_output = 10\n')
    m = mf.load(p)
    a, b = m.experiments
    assert (a.timeout, str(a.expect["cpu"]), a.max_output, a.roles) == (7.0, "exit 3", 1024, ("cpu", "gpu"))
    assert a.args == {"cpu": ("x", "{device}"), "gpu": ()} and a.env == {"K": "v"} and a.mask == ("m+",)
    assert (a.platforms, a.title, a.source_hash, a.framework, a.line, a.lang) == (("macos",), "t", "exact", "none", 7, "python")
    assert (b.timeout, str(b.expect["cpu"]), b.max_output, b.binary, b.lang, b.line) == (2.5, "timeout", 10, "d", "rust", 18)
    assert m.where(b) == "docs/experiments.toml:18: experiment b" and m.get("b") is b
    assert m.select(None) == [a, b] and m.select(["b"]) == [b]
    with pytest.raises(mf.ManifestError, match=r"no experiment 'z' \(known: a, b\)"):
        m.get("z")


def test_manifest_defaults_when_nothing_is_said(tmp_path):
    p = write_manifest(tmp_path, '[[experiment]]\nid = "a"\nscript = "snippets/a.py"\n')
    a = mf.load(p).experiments[0]
    assert (a.timeout, str(a.expect["cpu"]), a.max_output, a.roles, a.args, a.mask, a.env) == (300.0, "exit 0", 262144, ("cpu",), {"cpu": ()}, (), {})
    assert a.binary == "" and a.key("cpu") == "a@cpu"


def test_manifest_lines_for_entries_without_id_lines_first(tmp_path):
    p = write_manifest(tmp_path, '[[experiment]]\nscript = "snippets/a.py"\nid = "a"\n[experiment.env]\nK = "v"\n\n'
                                 '  [[ experiment ]]\n# comment\nid = "b"\nid2 = 1\nscript = "snippets/b.py"\n')
    with pytest.raises(mf.ManifestError) as e:
        mf.load(p)
    assert str(e.value) == ("docs/experiments.toml:9: experiment b: unknown key 'id2' in this entry (did you mean 'id'?); "
                            "allowed: " + ", ".join(mf.KEYS))


def test_manifest_path_outside_docs_is_shown_as_is(tmp_path):
    p = tmp_path / "m.toml"
    p.write_text('[[experiment]]\nid = "a"\n')
    with pytest.raises(mf.ManifestError, match=rf"^{p}:2: experiment a: give exactly one"):
        mf.load(p)


def test_manifest_unreadable(tmp_path):
    p = write_manifest(tmp_path, "")
    p.write_bytes(b'id = "\xff"\n')
    with pytest.raises(mf.ManifestError, match="docs/experiments.toml: not UTF-8"):
        mf.load(p)
    with pytest.raises(mf.ManifestError, match="cannot read"):
        mf.load(tmp_path / "docs" / "absent.toml")


@pytest.mark.parametrize("body, message", [
    ('experiment = 3\n', "experiment must be an array of tables"),
    ('experiment = [3]\n', "docs/experiments.toml:0: experiment ?: an [[experiment]] entry must be a table, not integer 3"),
    ('defaults = 3\n', "[defaults] must be a table, not integer 3"),
    ('[defaults]\ntimeout = 0\n', "docs/experiments.toml:1: [defaults] timeout must be a positive number"),
    ('[defaults]\nmax_output = "x"\n', "[defaults] max_output 'x'"),
])
def test_manifest_shapes(tmp_path, body, message):
    with pytest.raises(mf.ManifestError) as e:
        mf.load(write_manifest(tmp_path, body))
    assert message in str(e.value)


# -- compare (check) -----------------------------------------------------------------------

def test_compare_names_every_kind_of_difference(tmp_path):
    m = mf.load(write_manifest(tmp_path, "".join(f'[[experiment]]\nid = "{i}"\nscript = "snippets/a.py"\nmask = ["n=\\\\d+"]\n' for i in "abcdefg")))
    old, new = Store(tmp_path / "old"), Store(tmp_path / "new")
    for i in "abcdefg":
        new.write(PLAT, f"{i}@cpu", "same n=1\n", {"inputs_hash": "h"})
    old.write(PLAT, "a@cpu", "same n=2\n", {"inputs_hash": "h"})  # masked difference: fine
    old.write(PLAT, "b@cpu", "other\n", {"inputs_hash": "h"})
    old.write(PLAT, "c@cpu", "same n=1\n", {"inputs_hash": "old"})
    (tmp_path / "old" / PLAT / "d@cpu.json").write_text("[]")
    old.write(PLAT, "e@cpu", "same n=1\n", {"inputs_hash": "h"})
    cut_between_renames(tmp_path / "old" / PLAT, "e@cpu", "same n=1\n", "torn\n")
    outcomes = [Outcome(f"{i}@cpu", "ok") for i in "abcde"] + [Outcome("f@cpu", "failed", "boom"), Outcome("g@cpu", "skipped")]
    outcomes.append(Outcome("g@cpu", "ok"))  # never committed
    import capture.commands.check as checkmod

    checkmod.TORN_RETRIES, saved = 0, checkmod.TORN_RETRIES
    try:
        problems = compare(m, old, new, PLAT, outcomes)
    finally:
        checkmod.TORN_RETRIES = saved
    assert [p.split(":")[0] for p in problems] == ["b@cpu", "c@cpu", "d@cpu", "e@cpu", "f@cpu", "g@cpu"]
    assert "output no longer matches" in problems[0] and "-other" in problems[0] and "+same <masked>" in problems[0]
    assert "stale" in problems[1] and "corrupt" in problems[2] and "torn" in problems[3]
    assert problems[4] == "f@cpu: the fresh run failed: boom"
    assert problems[5].startswith("g@cpu: no committed fragment for linux-x86_64-cpu")
    assert json.loads((tmp_path / "old" / PLAT / "d@cpu.json").read_text()) == []  # compare never writes


# -- the fault table's rows, straight at the core (fast enough for the mutation run) ------------

from tests.faults import test_faults as table  # noqa: E402
from tests.faults.faultbook import manifest_text, write  # noqa: E402


def _parts_in(message: str, text: str) -> None:
    pos = 0
    for part in message.split(" … "):
        found = text.find(part, pos)
        assert found >= 0, f"{part!r} not in:\n{text}"
        pos = found + len(part)


@pytest.mark.parametrize("case", [c for c in table.CASES if c.category == "manifest"], ids=lambda c: c.id)
def test_manifest_rule(tmp_path, case):
    layout = Layout(tmp_path)
    write(layout.manifest, manifest_text())
    case.setup(layout)
    with pytest.raises(mf.ManifestError) as e:
        mf.load(layout.manifest)
    _parts_in(case.message, "error: " + str(e.value))


@pytest.mark.parametrize("rid, raw, message, ok", table.RECORD_ROWS, ids=[r[0] for r in table.RECORD_ROWS])
def test_records_row(rid, raw, message, ok):
    parsed = parse_records(raw)
    if ok:
        assert parsed.errors == [] and parsed.records
    else:
        assert any(message in e for e in parsed.errors), parsed.errors


def _store_with_victim(tmp_path) -> Layout:
    layout = Layout(tmp_path / "book")
    store = Store(layout.fragments)
    meta = {"experiment": "victim", "inputs_hash": "h", "records": [{"name": "v", "value": 1.5, "unit": "s", "tags": {}}]}
    store.write(PLAT, "victim@cpu", "victim ok\n", meta)
    return layout


CORRUPT = [c for c in table.CASES if c.victim == "corrupt" and c.action in ("read", "status")]


@pytest.mark.parametrize("case", CORRUPT, ids=lambda c: c.id)
def test_corrupt_row(tmp_path, case):
    layout = _store_with_victim(tmp_path)
    case.setup(layout)
    store = Store(layout.fragments)
    reason = store.corrupt(PLAT, "victim@cpu")
    _parts_in(case.message.split(" … ")[-1], reason)
    assert str(layout.fragments / PLAT) in reason  # names the path
    for failed in (False, True):
        frag = store.read(PLAT, "victim@cpu", failed)
        if frag is not None and frag.corrupt:
            assert (frag.platform, frag.key, frag.text, frag.meta, frag.torn) == (PLAT, "victim@cpu", "", {}, True)


@pytest.mark.parametrize("which", ["json", "txt"])
def test_a_folder_where_a_fragment_file_goes_is_corrupt(tmp_path, which):
    layout = _store_with_victim(tmp_path)
    f = layout.fragments / PLAT / f"victim@cpu.{which}"
    f.unlink()
    f.mkdir()
    frag = Store(layout.fragments).read(PLAT, "victim@cpu")
    assert frag.corrupt == f"{f}: a folder, not a regular file; remove it (the next regenerate on that platform writes the file again)"


def test_corrupt_messages_exactly(tmp_path):
    layout = _store_with_victim(tmp_path)
    js, txt = layout.fragments / PLAT / "victim@cpu.json", layout.fragments / PLAT / "victim@cpu.txt"
    store = Store(layout.fragments)
    good = js.read_bytes()
    js.write_bytes(b'{"a": 1,')
    assert store.read(PLAT, "victim@cpu").corrupt == f"{js}: invalid JSON (Expecting property name enclosed in double quotes at line 1 column 9)"
    js.write_bytes(b"\n \n")
    assert store.read(PLAT, "victim@cpu").corrupt == f"{js}: empty"
    js.write_bytes(b'{"x": "\xc3"}')
    assert store.read(PLAT, "victim@cpu").corrupt == f"{js}: not UTF-8 (byte 0xc3 at offset 7)"
    js.write_bytes(good)
    txt.write_bytes(b"ok \xff")
    assert store.read(PLAT, "victim@cpu").corrupt == f"{txt}: not UTF-8 (byte 0xff at offset 3)"
    txt.unlink()
    txt.symlink_to(tmp_path)
    assert store.read(PLAT, "victim@cpu").corrupt.startswith(f"{txt}: a symlink is not a fragment (fragment file {txt} leaves")
    sk = layout.fragments / PLAT / "victim@cpu.skipped.json"
    sk.write_text("{")
    assert store.corrupt(PLAT, "victim@cpu") == f"{txt}: a symlink is not a fragment (fragment file {txt} leaves {layout.fragments} (through a symlink): it resolves to {tmp_path}; only files inside {layout.fragments} are allowed)"
    txt.unlink()
    txt.write_text("victim ok\n")
    assert store.corrupt(PLAT, "victim@cpu") == f"{sk}: JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    sk.write_text(" ")
    assert store.corrupt(PLAT, "victim@cpu") == f"{sk}: empty"
    sk.write_text('{"reason": 3}')
    assert store.corrupt(PLAT, "victim@cpu") == f"{sk}: a skip record is an object with a string 'reason'"
    sk.write_text('["x"]')
    assert store.corrupt(PLAT, "victim@cpu") == f"{sk}: a skip record is an object with a string 'reason'"
    assert store.skip_reason(PLAT, "victim@cpu") is None


def test_written_files_are_exactly_the_committed_format(tmp_path):
    """Fragments are committed: stable, readable bytes (indent 1, Chinese as is, keys in the order given)."""
    s = Store(tmp_path)
    s.write(PLAT, "e@cpu", "输出\r\n", {"z": 1, "inputs_hash": "h", "a": "中"})
    js = (tmp_path / PLAT / "e@cpu.json").read_bytes().decode("utf-8")
    sha = sha256_text("输出\r\n")
    assert js == f'{{\n "schema": {SCHEMA},\n "z": 1,\n "inputs_hash": "h",\n "a": "中",\n "text_sha256": "{sha}"\n}}\n'
    assert (tmp_path / PLAT / "e@cpu.txt").read_bytes() == "输出\r\n".encode("utf-8")
    s.write_failure(PLAT, "e@cpu", "失败\n", {"inputs_hash": "h", "failure": "坏"})
    fj = (tmp_path / PLAT / "e@cpu.failed.json").read_bytes().decode("utf-8")
    assert fj == f'{{\n "schema": {SCHEMA},\n "inputs_hash": "h",\n "failure": "坏",\n "text_sha256": "{sha256_text("失败" + chr(10))}"\n}}\n'
    s.write_skip(PLAT, "e@gpu", "没有 GPU")
    assert (tmp_path / PLAT / "e@gpu.skipped.json").read_bytes().decode("utf-8") == f'{{"schema": {SCHEMA}, "reason": "没有 GPU"}}\n'
    assert sha256_text("a") == "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"


def test_a_rewrite_of_a_broken_skip_record(tmp_path):
    s = Store(tmp_path)
    p = tmp_path / PLAT / "e@gpu.skipped.json"
    p.parent.mkdir(parents=True)
    p.mkdir()  # unreadable as a file: written anew (here the rename onto a folder fails loudly)
    with pytest.raises(OSError):
        s.write_skip(PLAT, "e@gpu", "why")


# -- more exact messages of the path policy -------------------------------------------------

def test_path_messages_exactly(repo, tmp_path):
    root = repo.root
    with pytest.raises(PathError) as e:
        contained(tmp_path / "elsewhere", root, "script")
    assert str(e.value) == (f"script {tmp_path / 'elsewhere'} leaves {root}: it resolves to {(tmp_path / 'elsewhere').resolve()}; "
                            f"only files inside {root} are allowed")
    with pytest.raises(PathError, match=r"^script 'c:/x\.py' is absolute"):
        relative_shape("c:/x.py", "script")
    with pytest.raises(PathError, match=r"^script 'snippets/\.\./a\.py' has"):
        repo.script("snippets/../a.py")
    with pytest.raises(PathError, match=r"^snippet path '/etc/passwd' is absolute"):
        repo.shown("/etc/passwd")
    with pytest.raises(PathError) as e:
        repo.crate("none")
    assert str(e.value) == f"crate crates/none not found (no {root / 'crates/none/Cargo.toml'})"
    with pytest.raises(KeyError_, match=r"^platform key '\.\./x' is not"):
        repo.run_dir("../x")
    (root / "snippets/out.py").symlink_to(tmp_path / "o.py")
    (tmp_path / "o.py").write_text("")
    with pytest.raises(PathError, match=rf"^script {root / 'snippets/out.py'} leaves {root / 'snippets'} \(through a symlink\)"):
        repo.script("snippets/out.py")
    with pytest.raises(PathError, match=rf"^snippet {root / 'snippets/out.py'} leaves"):
        repo.shown("snippets/out.py")
    (root / "crates/evil").symlink_to(tmp_path)
    with pytest.raises(PathError, match=rf"^crate {root / 'crates/evil'} leaves"):
        repo.crate("evil")
    (root / "docs/_fragments").mkdir(parents=True)
    (root / "docs/_fragments" / PLAT).symlink_to(tmp_path)
    store = Store(root / "docs/_fragments")
    frag = store.read(PLAT, "e@cpu")
    assert frag.corrupt == (f"{root / 'docs/_fragments' / PLAT}: fragment folder {root / 'docs/_fragments' / PLAT} leaves "
                            f"{root / 'docs/_fragments'} (through a symlink): it resolves to {tmp_path}; only files inside "
                            f"{root / 'docs/_fragments'} are allowed")
    assert store.corrupt(PLAT, "e@cpu") == frag.corrupt and store.skip_reason(PLAT, "e@cpu") is None
    with pytest.raises(PathError, match="fragment folder .* leaves"):
        store.write(PLAT, "e@cpu", "x", {"inputs_hash": "h"})
    import shutil

    shutil.rmtree(root / "snippets")
    (root / "snippets").symlink_to(tmp_path)
    with pytest.raises(PathError, match=rf"^the snippets/ folder {root / 'snippets'} leaves {root} \(through a symlink\)"):
        repo.script("snippets/o.py")


def test_records_messages_exactly():
    p = parse_records(b'{"name": "\xff"}\n{"name": "a", "value": NaN}\nnot json\n{"name": "b", "value": 2, "x": 1}\n{"name": "c", "value": 3}\n')
    assert p.errors == [
        "line 1: not UTF-8 (byte 0xff at column 11)",
        "line 2: NaN is not a finite number",
        "line 3: Expecting value: line 1 column 1 (char 0)",
        "line 4: unknown field(s) ['x']; a record has name, value, unit, tags",
    ]
    assert [r["name"] for r in p.records] == ["c"]  # lines after bad ones still count
    assert record_problem({"name": "a", "value": [1, 2]}) == "record 'a': value [1, 2] is a list, not a number, string or bool"
    assert record_problem({"name": "a", "value": list(range(30))}) == "record 'a': value [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1 is a list, not a number, string or bool"
    assert record_problem({"name": "a", "value": 1, "tags": "k"}) == "record 'a': tags must be an object of scalars, not str"


# -- check.read_settled ----------------------------------------------------------------------

def test_read_settled_waits_for_a_torn_fragment_then_gives_up(tmp_path, monkeypatch):
    import capture.commands.check as checkmod

    s = Store(tmp_path)
    s.write(PLAT, "e@cpu", "x\n", {"inputs_hash": "h"})
    assert checkmod.read_settled(s, PLAT, "e@cpu").text == "x\n"
    assert checkmod.read_settled(s, PLAT, "none@cpu") is None
    cut_between_renames(tmp_path / PLAT, "e@cpu", "x\n", "mid\n", os.getpid())
    sleeps = []
    monkeypatch.setattr(checkmod.time, "sleep", lambda t: sleeps.append(t))
    monkeypatch.setattr(checkmod, "TORN_RETRIES", 3)
    assert checkmod.read_settled(s, PLAT, "e@cpu").torn and sleeps == [0.1, 0.1, 0.1]
    sleeps.clear()

    def settle(t):
        sleeps.append(t)
        (tmp_path / PLAT / "e@cpu.txt").write_text("x\n")

    monkeypatch.setattr(checkmod.time, "sleep", settle)
    frag = checkmod.read_settled(s, PLAT, "e@cpu")
    assert not frag.torn and frag.text == "x\n" and sleeps == [0.1]
    (tmp_path / PLAT / "e@cpu.json").write_text("[]")
    sleeps.clear()
    assert checkmod.read_settled(s, PLAT, "e@cpu").corrupt and sleeps == []  # corrupt does not settle: no wait


def test_compare_when_the_fresh_run_left_nothing(tmp_path):
    m = mf.load(write_manifest(tmp_path, '[[experiment]]\nid = "a"\nscript = "snippets/a.py"\n[[experiment]]\nid = "b"\nscript = "snippets/a.py"\n'))
    old, new = Store(tmp_path / "old"), Store(tmp_path / "new")
    for k in ("a@cpu", "b@cpu"):
        old.write(PLAT, k, "x\n", {"inputs_hash": "h"})
    (tmp_path / "new" / PLAT).mkdir(parents=True)
    (tmp_path / "new" / PLAT / "b@cpu.json").write_text("{")
    problems = compare(m, old, new, PLAT, [Outcome("a@cpu", "ok"), Outcome("b@cpu", "ok")])
    assert problems[0] == "a@cpu: the fresh run left no readable fragment (none)"
    assert problems[1].startswith(f"b@cpu: the fresh run left no readable fragment ({tmp_path / 'new' / PLAT / 'b@cpu.json'}: invalid JSON")
    assert len(problems) == 2


def test_compare_goes_on_after_a_job_with_no_committed_fragment(tmp_path):
    m = mf.load(write_manifest(tmp_path, '[[experiment]]\nid = "a"\nscript = "snippets/a.py"\n[[experiment]]\nid = "b"\nscript = "snippets/a.py"\n'))
    old, new = Store(tmp_path / "old"), Store(tmp_path / "new")
    for k in ("a@cpu", "b@cpu"):
        new.write(PLAT, k, "x\n", {"inputs_hash": "h"})
    old.write(PLAT, "b@cpu", "y\n", {"inputs_hash": "h"})  # a is new; b's output changed
    problems = compare(m, old, new, PLAT, [Outcome("a@cpu", "ok"), Outcome("b@cpu", "ok")])
    assert [p.split(":")[0] for p in problems] == ["a@cpu", "b@cpu"]
    assert "no committed fragment" in problems[0] and "output no longer matches" in problems[1]


def test_manifest_defaults_of_every_optional_key(tmp_path):
    a = mf.load(write_manifest(tmp_path, '[[experiment]]\nid = "a"\nscript = "snippets/a.py"\n')).experiments[0]
    assert (a.title, a.platforms, a.source_hash, a.bin, a.crate, a.script, a.framework) == ("", (), "code", None, None, "snippets/a.py", "none")
    assert a.expect == {"cpu": mf.Expect(0, False)}
    c = mf.load(write_manifest(tmp_path, '[[experiment]]\nid = "c"\ncrate = "k"\n')).experiments[0]
    assert (c.crate, c.script, c.binary, c.roles) == ("k", None, "k", ("cpu",))


@pytest.mark.parametrize("value, shown", [
    ("1.5", "float 1.5"), ("[1]", "array [1]"), ("{a = 1}", "table {'a': 1}"), ("true", "boolean True"),
    ("1979-05-27", "date datetime.date(1979, 5, 27)"),
])
def test_messages_name_the_toml_type(tmp_path, value, shown):
    with pytest.raises(mf.ManifestError) as e:
        mf.load(write_manifest(tmp_path, f'[[experiment]]\nid = "a"\nscript = "snippets/a.py"\ntitle = {value}\n'))
    assert str(e.value) == f"docs/experiments.toml:2: experiment a: title must be a string, not {shown}"


@pytest.mark.parametrize("value, shown", [('"s"', "string 's'"), ('"' + "x" * 50 + '"', "string '" + "x" * 36 + "...")])
def test_long_values_are_shortened(tmp_path, value, shown):
    with pytest.raises(mf.ManifestError) as e:
        mf.load(write_manifest(tmp_path, f'[[experiment]]\nid = "a"\nscript = "snippets/a.py"\ntimeout = {value}\n'))
    assert str(e.value) == f"docs/experiments.toml:2: experiment a: timeout must be a number of seconds, not {shown}"


def test_every_bad_entry_is_reported_not_only_the_first(tmp_path):
    with pytest.raises(mf.ManifestError) as e:
        mf.load(write_manifest(tmp_path, 'experiment = [3, {id = "b", script = "snippets/b.py", bin = "a/b"}]\n'))
    assert str(e.value).splitlines() == [
        "docs/experiments.toml:0: experiment ?: an [[experiment]] entry must be a table, not integer 3",
        "docs/experiments.toml:0: experiment b: bin 'a/b' must be a name (letters, digits, '_' or '-'), e.g. design-bench",
        "docs/experiments.toml:0: experiment b: bin names a binary of a crate; it needs crate",
    ]


def test_default_expect_names_the_key(tmp_path):
    with pytest.raises(mf.ManifestError) as e:
        mf.load(write_manifest(tmp_path, '[defaults]\nexpect = "exit x"\n\n[[experiment]]\nid = "a"\nscript = "snippets/a.py"\n'))
    assert str(e.value) == "docs/experiments.toml:1: expect must be 'exit N', 'exit any' or 'timeout', not 'exit x'"


def test_missing_text_file_is_torn_not_corrupt(tmp_path):
    layout = _store_with_victim(tmp_path)
    (layout.fragments / PLAT / "victim@cpu.txt").unlink()
    frag = Store(layout.fragments).read(PLAT, "victim@cpu")
    assert (frag.platform, frag.key, frag.text, frag.torn, frag.corrupt) == (PLAT, "victim@cpu", "", True, None)
    assert frag.meta["experiment"] == "victim"


def test_corrupt_fragments_keep_their_platform_and_key(tmp_path):
    layout = _store_with_victim(tmp_path)
    js = layout.fragments / PLAT / "victim@cpu.json"
    js.unlink()
    js.mkdir()
    for frag in (Store(layout.fragments).read(PLAT, "victim@cpu"),):
        assert (frag.platform, frag.key, frag.text, frag.meta) == (PLAT, "victim@cpu", "", {})
    js.rmdir()
    root = tmp_path / "store"
    (root).mkdir()
    (root / PLAT).symlink_to(tmp_path)
    frag = Store(root).read(PLAT, "victim@cpu")
    assert (frag.platform, frag.key, frag.torn) == (PLAT, "victim@cpu", True) and frag.corrupt


def test_run_dir_is_new_per_call_under_its_kind(tmp_path):
    layout = Layout(tmp_path)
    a = layout.run_dir(PLAT)
    b = layout.run_dir(PLAT, kind="check")
    assert a.is_dir() and b.is_dir()
    assert a.parent == tmp_path / ".capture" / "runs" / PLAT and b.parent == tmp_path / ".capture" / "check" / PLAT
    pid, token = a.name.split("-")
    assert pid == str(os.getpid()) and len(token) == 8 and int(token, 16) >= 0


def test_skip_record_rewrite_after_it_went_bad(tmp_path):
    s = Store(tmp_path)
    s.write_skip(PLAT, "e@gpu", "why")
    p = tmp_path / PLAT / "e@gpu.skipped.json"
    p.write_text("{")
    s.write_skip(PLAT, "e@gpu", "why")
    assert s.skip_reason(PLAT, "e@gpu") == "why"


def test_compare_goes_on_after_a_failed_job(tmp_path):
    m = mf.load(write_manifest(tmp_path, '[[experiment]]\nid = "a"\nscript = "snippets/a.py"\n[[experiment]]\nid = "b"\nscript = "snippets/a.py"\n'))
    old, new = Store(tmp_path / "old"), Store(tmp_path / "new")
    problems = compare(m, old, new, PLAT, [Outcome("a@cpu", "failed", "x"), Outcome("b@cpu", "ok")])
    assert problems == ["a@cpu: the fresh run failed: x",
                        "b@cpu: no committed fragment for linux-x86_64-cpu; run `nox -s regenerate -- --only b --device cpu` and commit it"]


@pytest.mark.parametrize("body, message", [
    ("timeout = 0.5\n", None),
    ("max_output = 1\n", None),
    ("max_output = 0\n", "max_output must be positive, not 0"),
    ("processes = 3\n", None),
    ("processes = 0\n", "processes must be an integer from 1 to 10, not integer 0"),
    ('processes = "3"\n', "processes must be an integer from 1 to 10, not string '3'"),
    ("processes = true\n", "processes must be an integer from 1 to 10, not boolean True"),
    ('caches = "cold"\n', None),
    ('caches = "hot"\n', "caches must be one of cold, warm, not string 'hot'"),
    ('needs = ["cargo"]\n', None),
    ('needs = ["carg"]\n', "needs: unknown 'carg' (did you mean 'cargo'?); known: cargo"),
    ('needs = "cargo"\n', "needs must be an array of strings, not string 'cargo'"),
    ("timeout = 0\n", "timeout must be a positive number of seconds, not 0"),
    ("env = { A = true }\n", "env.A must be a string (write true in quotes), not boolean True"),
    ('args = ["{dev}"]\n', "args: unknown placeholder {dev} in '{dev}' (did you mean 'device'?); known: {device}, {binary}"),
    ('args = ["{binary}"]\n', "args use {binary}; name the crate whose binary it is with runs"),
    ('runs = "exec-gpu"\nargs = ["{binary}"]\n', None),
    ('args = { tpu = [] }\n', "args: unknown role(s) ['tpu']; a per-role table has keys cpu, gpu"),
    ('platforms = ["bsd"]\n', "platforms: unknown operating system 'bsd'; known: macos, linux"),
    ('features = ["accelerate"]\n', "features are cargo features of a crate; they need crate"),
    ("roles = 1\n", "roles must be an array of strings, not integer 1"),
    ('framework = 3\n', "framework must be one of torch, burn, candle, none, not integer 3"),
    ('framework = "tourch"\n', "framework must be one of torch, burn, candle, none, not string 'tourch' (did you mean 'torch'?)"),
    ("id = 3\n", "id must be a string of lowercase letters, digits, '.', '_' or '-' (starting with a letter or digit), not integer 3"),
])
def test_manifest_values_at_their_limits(tmp_path, body, message):
    text = '[[experiment]]\nscript = "snippets/a.py"\n' + ("" if body.startswith("id =") else 'id = "a"\n') + body
    if message is None:
        mf.load(write_manifest(tmp_path, text))
        return
    with pytest.raises(mf.ManifestError) as e:
        mf.load(write_manifest(tmp_path, text))
    assert str(e.value).split(": ", 2)[2] == message or str(e.value).endswith(": " + message), str(e.value)


@pytest.mark.parametrize("body, message", [
    ('features = ["accelerate"]\n', None),
    ('features = ["b", "a"]\n', None),
    ('features = ["design-bench/accelerate"]\n', "features: 'design-bench/accelerate' is not a cargo feature name of the "
     "experiment's crate (letters, digits, '_', '-', '+'; write `accelerate`, not `crate/accelerate`)"),
    ('features = ["a", "a"]\n', "features: a feature is listed twice in ['a', 'a']"),
    ('features = "accelerate"\n', "features must be an array of strings, not string 'accelerate'"),
])
def test_manifest_features_of_a_crate(tmp_path, body, message):
    text = '[[experiment]]\nid = "a"\ncrate = "c"\n' + body
    if message is None:
        exp = mf.load(write_manifest(tmp_path, text)).experiments[0]
        assert exp.features == tuple(sorted(exp.features)) and exp.features
        return
    with pytest.raises(mf.ManifestError) as e:
        mf.load(write_manifest(tmp_path, text))
    assert str(e.value).endswith(": " + message), str(e.value)


def test_a_manifest_without_experiments_loads_empty(tmp_path):
    assert mf.load(write_manifest(tmp_path, "[defaults]\ntimeout = 5\n")).experiments == ()


def test_max_output_true_is_not_one_byte(tmp_path):
    with pytest.raises(mf.ManifestError, match=r"max_output must be a number of bytes or a string like '512 KiB', not boolean True"):
        mf.load(write_manifest(tmp_path, '[[experiment]]\nid = "a"\nscript = "snippets/a.py"\nmax_output = true\n'))
