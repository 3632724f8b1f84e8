"""Platforms as data: keys, identity files, the normalised inputs hash, restamping, states and claim scopes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from capture.machines import identity
from capture.plan import inputs, sourcehash
from capture.evidence.book import NOTE, OK, WARN, Book
from capture.evidence.claims import WhereError, check_known, device_matches, judge, parse_where, platform_matches
from capture.storage.keys import FragmentKey, KeyError_, check_platform_key
from capture.plan.manifest import load
from capture.storage.paths import Layout
from capture.commands.restamp import restamp
from capture.storage.store import Store

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("key", ["linux-x86_64-cpu", "macos-arm64-apple-m4-max", "linux-x86_64-nvidia-rtx-4090"])
def test_detected_keys_are_valid(key):
    assert check_platform_key(key) == key


@pytest.mark.parametrize("key", ["../x", "a/b", "", "A", "x.y", "a--b", "-a", "a-", "x" * 81, "linux x"])
def test_keys_that_could_leave_the_store_are_refused(key):
    with pytest.raises(KeyError_, match="not a valid platform key"):
        check_platform_key(key)


@pytest.mark.parametrize("text", ["x@tpu", "x", "X@cpu", "a b@cpu", "@cpu"])
def test_fragment_keys_are_checked(text):
    with pytest.raises(KeyError_):
        FragmentKey.parse(text)
    assert str(FragmentKey.parse("burn-ret@gpu")) == "burn-ret@gpu"


# -- normalised sources ------------------------------------------------------------------------
RUST = '''\
//! Crate docs.
/// A doc comment.
fn main() {
    // ANCHOR: main
    let s = "a // not a comment /* nor this */";
    let r = r#"raw " // str"#;
    let c = '"'; let l: &'static str = "x";
    /* block /* nested */ still comment */
    println!("{s} {r} {c} {l}");
    // ANCHOR_END: main
}
'''


def h(name: str, text: str, mode: str = "code") -> str:
    return sourcehash.normalised(name, text.encode(), mode)


@pytest.mark.parametrize("edit", [
    lambda t: t.replace("//! Crate docs.", "//! Other crate docs, longer."),
    lambda t: t.replace("// ANCHOR: main", "// ANCHOR: main  注释改了"),
    lambda t: t.replace("/* block /* nested */ still comment */", "/* x */"),
    lambda t: t.replace("    let s", "\tlet   s"),
    lambda t: t + "\n\n// trailing comment\n",
])
def test_rust_comment_and_spacing_edits_keep_the_code_hash(edit):
    assert h("main.rs", edit(RUST)) == h("main.rs", RUST)


@pytest.mark.parametrize("edit", [
    lambda t: t.replace("not a comment", "not  a comment"),  # inside a string
    lambda t: t.replace("raw \" // str", "raw \" //  str"),  # inside a raw string
    lambda t: t.replace("'\"'", "'x'"),
    lambda t: t.replace("println!", "eprintln!"),
    lambda t: t.replace("let c", "let mut c"),
])
def test_rust_code_edits_change_the_code_hash(edit):
    assert h("main.rs", edit(RUST)) != h("main.rs", RUST)


def test_lines_mode_keeps_line_positions_exact_mode_keeps_bytes():
    moved = RUST.replace("fn main() {", "// a new line\nfn main() {")
    assert h("main.rs", moved) == h("main.rs", RUST)
    assert h("main.rs", moved, "lines") != h("main.rs", RUST, "lines")
    reworded = RUST.replace("// ANCHOR: main", "// ANCHOR: main reworded")
    assert h("main.rs", reworded, "lines") == h("main.rs", RUST, "lines")
    assert h("main.rs", reworded, "exact") != h("main.rs", RUST, "exact")


PY = '''\
"""Docstring."""
import sys  # why


def f(x):
    # comment
    return x + 1  # trailing
'''


def test_python_comments_do_not_count_but_code_and_docstrings_do():
    assert h("a.py", PY.replace("# comment", "# 另一个注释") + "\n# end\n") == h("a.py", PY)
    assert h("a.py", PY.replace("x + 1", "x + 2")) != h("a.py", PY)
    assert h("a.py", PY.replace("Docstring.", "Doc.")) != h("a.py", PY)


def test_toml_is_compared_as_data():
    a = '[package]\nname = "x"  # c\nversion = "0.1.0"\n'
    b = '# header\n[package]\nversion = "0.1.0"\nname = "x"\n'
    assert h("Cargo.toml", a) == h("Cargo.toml", b)
    assert h("Cargo.toml", a.replace("0.1.0", "0.2.0")) != h("Cargo.toml", a)


def test_unparseable_sources_are_hashed_exactly():
    assert h("bad.rs", 'let s = "unterminated') == 'let s = "unterminated'
    assert h("bad.py", "def (:\n") == "def (:\n"


# -- the repository's own experiments -----------------------------------------------------------
@pytest.fixture
def repo_copy(tmp_path):
    """The book's sources and fragments, copied into a git checkout of their own."""
    dst = tmp_path / "repo"
    for part in ("docs/experiments.toml", "snippets", "crates", "uv.lock", "conf.py"):
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, dst / part, ignore=shutil.ignore_patterns("target", "__pycache__"))
        elif src.is_file():
            (dst / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dst / part)
    shutil.copytree(REPO / "docs/_fragments", dst / "docs/_fragments")
    subprocess.run(["git", "init", "-q"], cwd=dst, check=True)
    subprocess.run(["git", "add", "-A"], cwd=dst, check=True)
    inputs._tree_files.cache_clear()
    yield dst
    inputs._tree_files.cache_clear()


def states(root: Path) -> dict[tuple[str, str, str], str]:
    """(platform, experiment, role) -> fresh / stale / foreign / ... for every fragment the book expects."""
    inputs._tree_files.cache_clear()
    book = Book(root)
    return {(plat, exp.id, role): book.state(plat, FragmentKey(exp.id, role)).state
            for plat in book.platforms() for exp in book.manifest.experiments for role in exp.roles}


def stale_count(root: Path) -> int:
    return sum(1 for s in states(root).values() if s == "stale")


def test_comment_edits_make_nothing_stale_code_edits_exactly_the_dependents(repo_copy):
    manifest = load(repo_copy / "docs/experiments.toml")
    layout = Layout(repo_copy)
    gpu = repo_copy / "snippets/exec_gpu.py"
    users = {e.id for e in manifest.experiments if e.script and gpu in inputs.source_files(e, layout)}
    assert any(manifest.get(e).script != "snippets/exec_gpu.py" for e in users)  # snippets/inductor_kernel.py imports it
    # the users' fragments as if just captured from these sources (whatever state the checkout holds them in)
    store = Store(repo_copy / "docs/_fragments")
    for plat in store.platforms():
        for exp_id in users:
            for role in manifest.get(exp_id).roles:
                js = store.root / plat / f"{exp_id}@{role}.json"
                if js.is_file():
                    meta = json.loads(js.read_text())
                    meta["inputs"] = inputs.inputs(manifest.get(exp_id), role, layout)
                    meta["inputs_hash"] = inputs.digest(meta["inputs"])
                    js.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    before = states(repo_copy)
    lib = repo_copy / "crates/bookrec/src/lib.rs"
    lib.write_text("//! A reworded crate comment.\n\n" + lib.read_text().replace("///", "/// (edited)", 3))
    gpu.write_text(gpu.read_text().replace("# ANCHOR: ret", "# 说明改了\n# ANCHOR: ret") + "\n# trailing note\n")
    (repo_copy / "crates/exec-gpu/src/.DS_Store").write_bytes(b"\x00\x01Finder")
    (repo_copy / "snippets/exec_gpu.py~").write_text("backup")
    assert states(repo_copy) == before
    # a real change in one Python snippet: exactly the experiments that run or import it, on every platform
    gpu.write_text(gpu.read_text().replace("def ", "def  ", 1).replace("time.perf_counter()", "time.perf_counter( )", 1) + "\nX = 1\n")
    after = states(repo_copy)
    changed = {k for k in before if before[k] != after[k]}
    expected = {k for k in before if k[1] in users and before[k] == "fresh"}
    assert expected and changed == expected and all(after[k] == "stale" for k in changed)


def test_restamp_carries_fresh_fragments_over_and_leaves_stale_ones(repo_copy):
    store = Store(repo_copy / "docs/_fragments")
    plat = "linux-x86_64-cpu"
    lay = Layout(repo_copy)
    exp = load(lay.manifest).get("torch-ret")
    js = store.root / plat / "torch-ret@cpu.json"
    meta = json.loads(js.read_text())
    meta["inputs"] = inputs.inputs(exp, "cpu", lay)  # as if just captured from these sources
    meta["inputs_hash"] = inputs.digest(meta["inputs"])
    js.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    want = states(repo_copy)  # torch-ret@cpu as the book sees a fragment just captured (fresh, or foreign here)
    # pretend it was written under scheme 1: the raw-bytes digest of the same sources
    meta["inputs"] = inputs.inputs(exp, "cpu", lay, scheme=1)
    meta["inputs_hash"] = inputs.digest(meta["inputs"])
    js.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    other = store.root / plat / "burn-ret@cpu.json"
    m2 = json.loads(other.read_text())
    m2["inputs"] = {"hash_version": 1, "files": {}}
    m2["inputs_hash"] = "deadbeefdeadbeef"
    other.write_text(json.dumps(m2, indent=1, ensure_ascii=False) + "\n")
    text_before = (store.root / plat / "torch-ret@cpu.txt").read_text()
    res = restamp(lay, load(lay.manifest), store)
    assert res.restamped == 1 and f"{plat}/burn-ret@cpu.json (stale before the scheme changed)" in res.stale
    got = states(repo_copy)
    assert got[(plat, "burn-ret", "cpu")] == "stale"  # stale before the scheme changed: still stale
    assert {k: v for k, v in got.items() if k != (plat, "burn-ret", "cpu")} == \
        {k: v for k, v in want.items() if k != (plat, "burn-ret", "cpu")}
    assert (store.root / plat / "torch-ret@cpu.txt").read_text() == text_before
    assert store.read(plat, "torch-ret@cpu").torn is False


# -- identity ----------------------------------------------------------------------------------
def test_identity_round_trips_and_names_machines_without_code_changes(tmp_path):
    from capture.machines.platform import Platform

    for chip, gpu in [("Apple M3 Pro", "apple"), ("Apple M4 Max", "apple"), ("NVIDIA RTX 6000 Ada", "nvidia")]:
        p = Platform(key=f"x-{chip.lower().replace(' ', '-')}", os="macos" if gpu == "apple" else "linux", arch="arm64",
                     gpu=gpu, gpu_name=chip)
        ident = identity.of_machine(p, {"cores": 12})
        assert chip in ident.display_name and ident.has_gpu
        assert identity.write(tmp_path, ident) and not identity.write(tmp_path, ident)  # unchanged: not rewritten
        assert identity.read(tmp_path, p.key) == ident
    cpu = identity.of_machine(Platform(key="linux-x86_64-cpu", os="linux", arch="x86_64"), {"cores": 2})
    assert not cpu.has_gpu and cpu.display_name == "Linux x86_64 纯 CPU（2 核）"
    assert cpu.roles == {"cpu": {"torch": "cpu", "burn": "flex", "candle": "cpu"}}


def test_identity_says_how_to_regenerate_on_that_machine():
    ident = identity.Identity(key="k", display_name="NVIDIA H200 · Linux", route="bundle",
                              bundle=identity.bundle_recipe(["design-bench/cuda", "exec-gpu/vulkan"]))
    cmd = ident.regenerate_command(["burn-ret"], ["gpu"])
    assert cmd.startswith("BOOK_BURN_GPU=vulkan python -m capture bundle --candle-cuda --out .device")
    assert cmd.endswith("bash .device/run.sh --only burn-ret --device gpu")
    assert identity.Identity(key="k", display_name="x").regenerate_command(["a"]) == "nox -s regenerate -- --only a"


def test_committed_platforms_have_identity_files():
    for d in (REPO / "docs/_fragments").iterdir():
        if d.is_dir() and not d.name.startswith("."):
            ident = identity.read(REPO / "docs/_fragments", d.name)
            assert ident is not None and ident.key == d.name and ident.display_name


# -- claim scopes --------------------------------------------------------------------------------
MAC = identity.Identity(key="macos-arm64-apple-m2-max", display_name="Apple M2 Max · macOS", os="macos",
                        gpu="Apple M2 Max", gpu_vendor="apple",
                        roles={"cpu": {"torch": "cpu", "burn": "flex"}, "gpu": {"torch": "mps", "burn": "metal"}})
H200 = identity.Identity(key="linux-x86_64-nvidia-h200", display_name="NVIDIA H200 · Linux", os="linux",
                         gpu="NVIDIA H200", gpu_vendor="nvidia",
                         roles={"cpu": {"torch": "cpu", "burn": "flex"}, "gpu": {"torch": "cuda", "burn": "vulkan"}})


@pytest.mark.parametrize("tokens, ident, device, expected", [
    (("cuda",), H200, "cuda", True),
    (("cuda",), H200, "vulkan", False),
    (("cuda",), MAC, "mps", False),
    (("gpu",), MAC, "metal", True),
    (("gpu",), MAC, "cpu", False),
    (("cpu",), MAC, "flex", True),
    (("apple",), MAC, "cpu", True),
    (("linux",), H200, "cuda", True),
    (("macos-arm64-apple-m2-max",), MAC, "mps", True),
    (("all",), H200, "vulkan", True),
])
def test_where_words_match_devices(tokens, ident, device, expected):
    assert device_matches(tokens, ident, device) is expected


def test_platform_filters_match_any_device_of_the_machine():
    assert platform_matches(("vulkan",), H200) and not platform_matches(("vulkan",), MAC)
    assert platform_matches(("mps",), MAC) and platform_matches(("cpu",), MAC)


def test_where_rejects_unknown_words_and_unknown_platforms(tmp_path):
    with pytest.raises(WhereError):
        parse_where("cuda, Metal")
    book = Book(REPO)
    with pytest.raises(WhereError, match="'cudaa' is not a place"):
        check_known(parse_where("cudaa"), book)
    check_known(parse_where("cuda, linux-x86_64-nvidia-h200"), book)


def test_book_states_warn_only_for_what_this_machine_can_fix():
    here = identity.Identity(key="linux-x86_64-cpu", display_name="cpu box", roles={"cpu": {"torch": "cpu"}})
    book = Book(REPO, local=here)
    st = book.state("linux-x86_64-cpu", FragmentKey("torch-ret", "gpu"))
    assert st.state == "not-applicable" and st.severity == NOTE
    assert book.state("linux-x86_64-nvidia-h200", FragmentKey("torch-ret", "gpu")).severity in (OK, NOTE)  # never WARN here
    assert book.platforms()[-1] == "linux-x86_64-cpu"  # GPU machines before CPU-only boxes
    assert book.absent_everywhere(FragmentKey("torch-ret", "cpu")) is None


def test_claims_on_the_real_pages_hold_where_expected():
    book = Book(REPO)
    verdicts = judge(book, "min(torch-ret@gpu:ret.returned) < 0.25 * min(torch-ret@gpu:ret.synced)", ("gpu",))
    assert [v.platform for v in verdicts] == ["linux-x86_64-nvidia-h200"] and verdicts[0].holds and verdicts[0].expected
    v = judge(book, "torch-oob@gpu:oob.sticky", ("mps",))[0]
    assert v.holds is True and v.expected is False and v.severity == OK  # true on CUDA, but not what it claims
    assert WARN == "warn"


# -- a machine that has not captured yet (status --platform) ------------------------------------
def test_a_planned_mac_reads_its_roles_from_its_key():
    mac = identity.planned("macos-arm64-apple-m2-max")
    assert (mac.os, mac.gpu_vendor, mac.gpu, mac.display_name) == ("macos", "apple", "Apple M2 Max", "Apple M2 Max · macOS")
    assert mac.roles["gpu"] == {"torch": "mps", "burn": "metal", "candle": "metal", "none": "gpu"}
    box = identity.planned("linux-x86_64-nvidia-rtx-4090")
    assert box.gpu == "NVIDIA RTX 4090" and box.roles["gpu"]["burn"] == "cuda"
    assert "gpu" not in identity.planned("linux-aarch64-cpu").roles
    with pytest.raises(KeyError_):
        identity.planned("Mac")


def test_status_for_the_mac_lists_its_own_experiments_as_waiting_for_it():
    book = Book(REPO)
    mac = "macos-arm64-apple-m2-max"
    book.expect(mac)
    only_mac = [e for e in book.manifest.experiments if e.platforms == ("macos",)]
    assert only_mac  # the drafts' Metal-only points
    for exp in only_mac:
        for role in exp.roles:
            st = book.state(mac, FragmentKey(exp.id, role))
            assert st.state == "missing" and st.fix == f"nox -s regenerate -- --only {exp.id} --device {role}"
    linux_only = next(e for e in book.manifest.experiments if e.platforms == ("linux",))
    assert book.state(mac, FragmentKey(linux_only.id, linux_only.roles[0])).state == "not-applicable"
    vulkan = next(e for e in book.manifest.experiments if e.gpu_device == "vulkan")
    st = book.state(mac, FragmentKey(vulkan.id, "gpu"))
    assert st.state == "not-applicable" and "not built for vulkan" in st.detail
    # the command itself, as the author types it
    r = subprocess.run([sys.executable, "-m", "capture", "status", "--platform", mac], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"{mac} (Apple M2 Max · macOS):") and not any(ln.startswith("linux-") for ln in lines)
    for exp in only_mac:
        assert any(exp.id in ln and "only macos machines run it" in ln for ln in lines)
    assert any(ln.strip().startswith("to regenerate: nox -s regenerate -- --only ") for ln in lines)
    bad = subprocess.run([sys.executable, "-m", "capture", "status", "--platform", "Mac"], cwd=REPO, capture_output=True, text=True)
    assert bad.returncode == 2 and "not a valid platform key" in bad.stderr and "Traceback" not in bad.stderr
