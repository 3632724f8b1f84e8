"""The pure parts of the core that faults go through: path policy, records, store, manifest details, compare.

In-process and fast (no snippet runs), so that the mutation run (`nox -s mutate`) can afford them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from capture import manifest as mf
from capture.check import compare
from capture.keys import KeyError_
from capture.paths import Layout, PathError, contained, relative_shape
from capture.records import matches, parse_records, read_file, read_records, record_problem, select
from capture.regenerate import Outcome
from capture.store import SCHEMA, Store, StoreLocked, meta_problem, sha256_text

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
    assert repo.platform_dir(PLAT) == repo.fragments / PLAT


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
    ("platform_dir", "../x", "not a valid platform key"),
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


def test_torn_is_text_not_vouched_for(tmp_path):
    s = Store(tmp_path)
    s.write(PLAT, "e@cpu", "x\n", {"inputs_hash": "h"})
    (tmp_path / PLAT / "e@cpu.txt").write_text("y\n")
    f = s.read(PLAT, "e@cpu")
    assert f.torn and f.corrupt is None and f.text == "y\n"
    (tmp_path / PLAT / "e@cpu.txt").unlink()
    assert s.read(PLAT, "e@cpu").torn


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
    (tmp_path / "old" / PLAT / "e@cpu.txt").write_text("torn\n")
    outcomes = [Outcome(f"{i}@cpu", "ok") for i in "abcde"] + [Outcome("f@cpu", "failed", "boom"), Outcome("g@cpu", "skipped")]
    outcomes.append(Outcome("g@cpu", "ok"))  # never committed
    import capture.check as checkmod

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
