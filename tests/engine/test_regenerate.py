"""The capture engine end to end on a throwaway book (real processes, a real tiny cargo build)."""

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from capture.evidence.book import Book
from capture.evidence.status import collect
from capture.storage.store import Store
from tests.engine.book import CPU, GPU, make_book, run


@pytest.mark.slow  # builds Rust and/or imports torch
def test_first_run_captures_then_cache_hit(book):
    first, _ = run(book)
    assert first["hello@cpu"].status == "ok"
    frag = Store(book.fragments).read("linux-x86_64-cpu", "hello@cpu")
    assert frag.text.startswith("hello from cpu\n")
    assert frag.meta["exit_status"] == 0 and frag.meta["device"] == "cpu"
    assert [r["name"] for r in frag.records] == ["hello.elapsed"]
    assert frag.meta["machine"]["cores"] == os.cpu_count()
    assert "load_before" in frag.meta and "wall_s" in frag.meta
    second, _ = run(book)
    assert {k: o.status for k, o in second.items()} == {
        "hello@cpu": "fresh", "hello@gpu": "skipped", "sleeper@cpu": "fresh", "tiny@cpu": "fresh", "tiny-panic@cpu": "fresh",
    }


@pytest.mark.slow  # builds Rust and/or imports torch
def test_change_to_snippet_or_shared_helper_reruns_only_dependents(book):
    run(book)
    (book.root / "snippets/helper.py").write_text('def greet(d):\n    return f"hi {d}"\n')
    outcomes, _ = run(book)
    assert outcomes["hello@cpu"].status == "ok"  # imports helper -> rerun
    assert outcomes["sleeper@cpu"].status == "fresh"  # does not
    assert outcomes["tiny@cpu"].status == "fresh"
    assert Store(book.fragments).read("linux-x86_64-cpu", "hello@cpu").text.startswith("hi cpu")


@pytest.mark.slow  # builds Rust and/or imports torch
def test_crate_change_reruns_rust_experiments(book):
    run(book)
    main = book.root / "crates/tiny/src/main.rs"
    main.write_text(main.read_text().replace("tiny ok", "tiny changed"))
    outcomes, _ = run(book)
    assert outcomes["tiny@cpu"].status == "ok" and outcomes["tiny-panic@cpu"].status == "ok"
    assert outcomes["hello@cpu"].status == "fresh"
    assert "tiny changed" in Store(book.fragments).read("linux-x86_64-cpu", "tiny@cpu").text


@pytest.mark.slow  # builds Rust and/or imports torch
def test_status_reports_stale_with_the_changed_file(book):
    run(book)
    (book.root / "snippets/helper.py").write_text("def greet(d):\n    return 'x'\n")
    entries = {e.key: e for e in collect(Book(book.root), ["linux-x86_64-cpu"])}
    assert entries["hello@cpu"].state == "stale"
    assert "snippets/helper.py" in entries["hello@cpu"].detail
    assert entries["sleeper@cpu"].state == "fresh"
    assert entries["hello@gpu"].state == "n/a"


@pytest.mark.slow  # builds Rust and/or imports torch
def test_force_only_and_device_select_work(book):
    run(book)
    outcomes, _ = run(book, force=True, only=["sleeper"])
    assert list(outcomes) == ["sleeper@cpu"] and outcomes["sleeper@cpu"].status == "ok"
    outcomes, _ = run(book, roles=["gpu"], only=["hello"])
    assert list(outcomes) == ["hello@gpu"]


@pytest.mark.slow  # builds Rust and/or imports torch
def test_platform_without_gpu_skips_gpu_roles(book):
    outcomes, log = run(book, only=["hello"])
    assert outcomes["hello@gpu"].status == "skipped"
    assert "no GPU on linux-x86_64-cpu" in outcomes["hello@gpu"].message
    assert not (book.fragments / "linux-x86_64-cpu" / "hello@gpu.json").exists()


@pytest.mark.slow  # builds Rust and/or imports torch
def test_gpu_platform_maps_role_to_framework_device(book, monkeypatch):
    # torch is made to see no accelerator (on a Mac it sees mps), so the gpu role is skipped with that
    # reason; the Rust and 'none' roles map to the platform's names.
    import capture.running.regenerate as regen
    from capture.machines.roles import resolve

    probe = regen.probe_python
    monkeypatch.setattr(regen, "probe_python", lambda py, torch=True: {**probe(py, torch), "accelerator": None})

    assert resolve(GPU, "torch", "gpu").device == "cuda"
    assert resolve(GPU, "burn", "gpu").device == "cuda"
    assert resolve(GPU, "burn", "cpu").device == "flex"
    assert resolve(CPU, "candle", "gpu").device is None
    outcomes, _ = run(book, platform=GPU, only=["hello"], roles=["gpu"])
    assert outcomes["hello@gpu"].status == "skipped" and "no accelerator" in outcomes["hello@gpu"].message


@pytest.mark.slow  # builds Rust and/or imports torch
def test_expected_panic_is_success_unexpected_crash_is_failure(book):
    outcomes, _ = run(book)
    assert outcomes["tiny-panic@cpu"].status == "ok"
    frag = Store(book.fragments).read("linux-x86_64-cpu", "tiny-panic@cpu")
    assert frag.meta["exit_status"] == 101 and "expected panic" in frag.text
    # now the same program crashes unexpectedly (abort instead of the expected panic)
    m = book.manifest.read_text().replace('args = ["panic"]', 'args = ["abort"]')
    book.manifest.write_text(m)
    outcomes, log = run(book)
    assert outcomes["tiny-panic@cpu"].status == "failed"
    assert "expected exit 101, got exit" in outcomes["tiny-panic@cpu"].message
    store = Store(book.fragments)
    assert store.read("linux-x86_64-cpu", "tiny-panic@cpu").meta["exit_status"] == 101  # last good kept
    assert store.read("linux-x86_64-cpu", "tiny-panic@cpu", failed=True) is not None
    entries = {e.key: e for e in collect(Book(book.root), ["linux-x86_64-cpu"])}
    assert entries["tiny-panic@cpu"].state == "failed"


def test_timeout_kills_the_whole_process_group(book, tmp_path):
    pidfile = tmp_path / "child.pid"
    m = book.manifest.read_text() + f'''
[[experiment]]
id = "hang"
script = "snippets/sleeper.py"
args = ["hang", "{pidfile}"]
timeout = 2
expect = "timeout"
'''
    book.manifest.write_text(m)
    t = time.monotonic()
    outcomes, _ = run(book, only=["hang"])
    assert time.monotonic() - t < 30
    assert outcomes["hang@cpu"].status == "ok"
    frag = Store(book.fragments).read("linux-x86_64-cpu", "hang@cpu")
    assert frag.text.endswith("killed after 2 s\n") and frag.meta["timed_out"] is True
    child = int(pidfile.read_text())
    assert _wait_for(lambda: _gone(child), timeout=5), f"child {child} outlived the timeout kill"


def _gone(pid: int) -> bool:
    """No such process, or only its zombie: `ps` answers the same on Linux and macOS (no /proc there)."""
    r = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True)
    return r.returncode != 0 or r.stdout.strip().startswith("Z")


def test_unexpected_timeout_is_a_failure_and_keeps_old_fragment(book):
    run(book, only=["sleeper"])
    m = book.manifest.read_text().replace('args = ["slow", "0"]', 'args = ["slow", "30"]\ntimeout = 1')
    book.manifest.write_text(m)
    outcomes, _ = run(book, only=["sleeper"])
    assert outcomes["sleeper@cpu"].status == "failed" and "got timeout" in outcomes["sleeper@cpu"].message
    store = Store(book.fragments)
    assert store.read("linux-x86_64-cpu", "sleeper@cpu").text == "working\ndone\n"
    assert "killed after 1 s" in store.read("linux-x86_64-cpu", "sleeper@cpu", failed=True).text


def _spawn_regenerate(book, *extra):
    code = (
        "import sys; sys.path.insert(0, %r); from capture.commands.cli import main; raise SystemExit(main(sys.argv[1:]))"
        % str(Path(__file__).resolve().parents[2])
    )
    env = {**os.environ, "BOOK_PLATFORM": "linux-x86_64-cpu", "BOOK_NO_GPU": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", code, "--root", str(book.root), "regenerate", "--no-review", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True,
    )


def _running_log(book, key):
    """True once a run's log (in some process's own scratch folder) says the snippet is working."""
    logs = list(book.scratch.glob(f"runs/linux-x86_64-cpu/*/{key}.log"))
    return any("working" in p.read_text() for p in logs)


def _wait_for(path_pred, timeout=30):
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        if path_pred():
            return True
        time.sleep(0.05)
    return False


def test_kill_9_mid_run_leaves_the_old_fragment_intact(book):
    run(book, only=["sleeper"])
    store = Store(book.fragments)
    before = store.read("linux-x86_64-cpu", "sleeper@cpu")
    m = book.manifest.read_text().replace('args = ["slow", "0"]', 'args = ["slow", "20"]')
    book.manifest.write_text(m)
    proc = _spawn_regenerate(book, "--only", "sleeper")
    assert _wait_for(lambda: _running_log(book, "sleeper@cpu"))
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    after = store.read("linux-x86_64-cpu", "sleeper@cpu")
    assert after.text == before.text and after.meta == before.meta and not after.torn
    assert not list((book.fragments / "linux-x86_64-cpu").glob(".*.tmp"))


def test_torn_write_is_detected_and_repaired(book):
    run(book, only=["sleeper"])
    store = Store(book.fragments)
    folder = book.fragments / "linux-x86_64-cpu"
    good = (folder / "sleeper@cpu.txt").read_text()
    # what a kill between the two renames leaves: the new text, the old JSON, and the old text kept (capture/storage/atomic.py)
    (folder / ".sleeper@cpu.txt.999999999.abcdef.old.tmp").write_text(good)
    (folder / "sleeper@cpu.txt").write_text("half of a new output\n")
    assert store.read("linux-x86_64-cpu", "sleeper@cpu").torn
    entries = {e.key: e for e in collect(Book(book.root), ["linux-x86_64-cpu"])}
    assert entries["sleeper@cpu"].state == "torn"
    outcomes, _ = run(book, only=["sleeper"])  # the old pair goes back first: fresh again
    assert outcomes["sleeper@cpu"].status == "fresh" and store.read("linux-x86_64-cpu", "sleeper@cpu").text == good
    assert not list(folder.glob(".*.tmp"))


def test_an_edited_fragment_is_corrupt_and_captured_again(book):
    run(book, only=["sleeper"])
    store = Store(book.fragments)
    (book.fragments / "linux-x86_64-cpu/sleeper@cpu.txt").write_text("edited by hand\n")
    assert "edited after the capture" in store.read("linux-x86_64-cpu", "sleeper@cpu").corrupt
    entries = {e.key: e for e in collect(Book(book.root), ["linux-x86_64-cpu"])}
    assert entries["sleeper@cpu"].state == "corrupt"
    outcomes, _ = run(book, only=["sleeper"])
    assert outcomes["sleeper@cpu"].status == "ok" and not store.read("linux-x86_64-cpu", "sleeper@cpu").torn


def test_concurrent_regenerate_is_refused(book):
    m = book.manifest.read_text().replace('args = ["slow", "0"]', 'args = ["slow", "20"]')
    book.manifest.write_text(m)
    first = _spawn_regenerate(book, "--only", "sleeper")
    try:
        assert _wait_for(lambda: _running_log(book, "sleeper@cpu"))
        second = _spawn_regenerate(book, "--only", "sleeper", "--force")
        out, _ = second.communicate(timeout=60)
        assert second.returncode == 3
        assert "another regenerate is running" in out and f"pid {first.pid}" in out
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()


@pytest.mark.slow  # builds Rust and/or imports torch
def test_other_platforms_fragments_are_never_touched(book):
    other = book.fragments / "macos-arm64-apple-m2-max"
    other.mkdir(parents=True)
    (other / "hello@gpu.txt").write_text("from the mac\n")
    (other / "hello@gpu.json").write_text(json.dumps({"inputs_hash": "x"}))
    run(book, force=True)
    assert (other / "hello@gpu.txt").read_text() == "from the mac\n"
    assert sorted(p.name for p in other.iterdir()) == ["hello@gpu.json", "hello@gpu.txt"]


@pytest.mark.slow  # builds Rust and/or imports torch
def test_build_failure_names_the_log_and_keeps_fragments(book):
    run(book, only=["tiny"])
    (book.root / "crates/tiny/src/main.rs").write_text("fn main() { this is not rust }")
    outcomes, _ = run(book, only=["tiny"])
    o = outcomes["tiny@cpu"]
    assert o.status == "failed" and "cargo build failed" in o.message and "cargo-build.log" in o.message
    assert "tiny ok" in Store(book.fragments).read("linux-x86_64-cpu", "tiny@cpu").text


PREBUILT_MANIFEST = '''\
[defaults]
timeout = 60

[[experiment]]
id = "tiny"
framework = "burn"
crate = "tiny"
args = ["{device}"]
roles = ["cpu", "gpu"]
'''


@pytest.fixture
def prebuilt_book(tmp_path, cargo_target, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # build_prebuilt's own target dir
    monkeypatch.setenv("CARGO_TARGET_DIR", str(cargo_target))  # restored after build_prebuilt overrides it
    monkeypatch.setenv("BOOK_BURN_GPU", "cuda")
    monkeypatch.delenv("BOOK_PLATFORM", raising=False)
    return make_book(tmp_path / "book", PREBUILT_MANIFEST)


def path_without_cargo() -> str:
    return os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "cargo").exists())


@pytest.mark.slow  # builds Rust and/or imports torch
def test_prebuilt_binaries_run_where_there_is_no_cargo(prebuilt_book, tmp_path, monkeypatch):
    from capture.toolchains.prebuilt import build_prebuilt, verify
    from capture.machines.roles import resolve

    layout = prebuilt_book
    info = build_prebuilt(layout, "cuda", tmp_path / "bin", echo=lambda *a: None)
    assert info["features"] == ["tiny/cuda", "tiny/vulkan"] and info["gpu_devices"] == {"burn": "cuda"}
    assert info["gpu_variants"] == {"burn": ["vulkan"]}
    assert (tmp_path / "bin/tiny").is_file() and info["sources_digest"]

    # the GPU machine: no cargo anywhere on PATH
    monkeypatch.setenv("PATH", path_without_cargo())
    verify(layout, tmp_path / "bin")
    outcomes, _ = run(layout, platform=GPU, prebuilt=tmp_path / "bin")
    assert outcomes["tiny@gpu"].status == "ok" and outcomes["tiny@cpu"].status == "ok"
    frag = Store(layout.fragments).read(GPU.key, "tiny@gpu")
    assert frag.text.strip() == "tiny ok cuda"
    build = frag.meta["versions"]["rust_build"]
    assert build["prebuilt"] is True and build["features"] == ["tiny/cuda", "tiny/vulkan"] and build["built_on"]

    # a framework the binaries were not built with a GPU backend for is skipped, with the reason
    assert "have no GPU backend" in resolve(GPU, "candle", "gpu", info["gpu_devices"]).reason

    # binaries from other sources are refused before anything runs
    (layout.root / "crates/tiny/src/main.rs").write_text('fn main() { println!("changed"); }\n')
    with pytest.raises(SystemExit, match="built from other Rust sources"):
        verify(layout, tmp_path / "bin")


@pytest.mark.slow  # builds Rust and/or imports torch
@pytest.mark.skipif(platform.system() != "Linux" or platform.machine() != "x86_64",
                    reason="bundles are built on Linux x86_64 only (test_foreign_binaries checks the refusal)")
def test_bundle_carries_everything_a_machine_without_cargo_needs(prebuilt_book, tmp_path):
    from capture.toolchains.bundle import ARCHIVE, make_bundle

    layout = prebuilt_book
    info = make_bundle(layout, layout.root / ".device", vulkan_loader=False, echo=lambda *a: None)
    bundle = layout.root / ".device"
    assert sorted(p.name for p in bundle.iterdir()) == sorted([ARCHIVE, "build-info.json", "run.sh"])
    assert info["archive_bytes"] == (bundle / ARCHIVE).stat().st_size > 0

    # there: only the bundle and the checkout; no cargo on PATH, no target dir
    shutil.rmtree(tmp_path / "cache")
    env = {**os.environ, "PATH": path_without_cargo(), "PYTHON": sys.executable, "BOOK_PLATFORM": "linux-x86_64-cpu",
           "BOOK_NO_GPU": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(["bash", ".device/run.sh", "--no-review"], cwd=layout.root, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    frag = Store(layout.fragments).read("linux-x86_64-cpu", "tiny@cpu")
    assert frag.text.strip() == "tiny ok flex" and frag.meta["versions"]["rust_build"]["prebuilt"] is True


COUNTER = '''\
import os, sys
import bookrec
# each process appends one line to a file named by the args, so the test can count the processes
path = sys.argv[1]
with open(path, "a") as f:
    f.write("x\\n")
k = sum(1 for _ in open(path))
print(f"run {k}")
bookrec.record("counter.k", k)
if sys.argv[2] == "fail-second" and k == 2:
    sys.exit(3)
'''


def _processes_book(tmp_path: Path, mode: str, processes: int = 3):
    from tests.engine.book import write

    layout = make_book(tmp_path / "pbook", manifest=f'''
[[experiment]]
id = "counter"
script = "snippets/counter.py"
args = ["{tmp_path / 'count.txt'}", "{mode}"]
processes = {processes}
''')
    write(layout.root / "snippets/counter.py", COUNTER)
    return layout


def test_processes_run_separately_and_tag_their_records(tmp_path):
    layout = _processes_book(tmp_path, "ok")
    outcomes, _ = run(layout)
    assert outcomes["counter@cpu"].status == "ok"
    frag = Store(layout.fragments).read("linux-x86_64-cpu", "counter@cpu")
    assert frag.text == "[process 1/3]\nrun 1\n[process 2/3]\nrun 2\n[process 3/3]\nrun 3\n"
    assert [(r["value"], r["tags"]["process"]) for r in frag.records] == [(1, "1"), (2, "2"), (3, "3")]
    assert frag.meta["processes"] == 3
    # the number of processes is an input: changing it makes the fragment stale
    layout2 = _processes_book(tmp_path, "ok", processes=2)
    assert layout2.root == layout.root
    assert run(layout2)[0]["counter@cpu"].status == "ok"
    assert Store(layout.fragments).read("linux-x86_64-cpu", "counter@cpu").text.count("[process") == 2


def test_a_failing_process_stops_the_capture_and_keeps_the_old_fragment(tmp_path):
    layout = _processes_book(tmp_path, "fail-second")
    outcomes, _ = run(layout)
    assert outcomes["counter@cpu"].status == "failed"
    assert "expected exit 0, got exit 3" in outcomes["counter@cpu"].message
    assert (tmp_path / "count.txt").read_text().count("x") == 2  # the third never started
    store = Store(layout.fragments)
    assert store.read("linux-x86_64-cpu", "counter@cpu") is None
    failed = (layout.fragments / "linux-x86_64-cpu" / "counter@cpu.failed.txt").read_text()
    assert "[process 2/3]\nrun 2" in failed


def test_one_process_keeps_the_plain_output_and_untagged_records(tmp_path):
    layout = _processes_book(tmp_path, "ok", processes=1)
    run(layout)
    frag = Store(layout.fragments).read("linux-x86_64-cpu", "counter@cpu")
    assert frag.text == "run 1\n" and "process" not in frag.records[0]["tags"] and "processes" not in frag.meta


CACHER = '''\
import os
# what a framework's disk cache would see: was something compiled before this process?
d = os.environ["XDG_CACHE_HOME"]
marker = os.path.join(d, "kernel.bin")
print("found" if os.path.exists(marker) else "empty", os.environ.get("CUDA_CACHE_DISABLE", "-"),
      os.path.dirname(os.environ["CUDA_CACHE_PATH"]) == os.path.dirname(d))
open(marker, "w").write("compiled")
'''


def _caches_book(tmp_path: Path, rule: str):
    from tests.engine.book import write

    layout = make_book(tmp_path / "cbook", manifest=f'''
[[experiment]]
id = "cacher"
script = "snippets/cacher.py"
processes = 2
caches = "{rule}"
env = {{ CUDA_CACHE_DISABLE = "1" }}
''')
    write(layout.root / "snippets/cacher.py", CACHER)
    return layout


@pytest.mark.parametrize("rule, seen", [("cold", "empty"), ("warm", "found")])
def test_cache_rule_is_the_same_for_every_process(tmp_path, rule, seen):
    layout = _caches_book(tmp_path, rule)
    outcomes, _ = run(layout)
    assert outcomes["cacher@cpu"].status == "ok", outcomes["cacher@cpu"].message
    frag = Store(layout.fragments).read("linux-x86_64-cpu", "cacher@cpu")
    assert frag.text == f"[process 1/2]\n{seen} - True\n[process 2/2]\n{seen} - True\n"
    assert frag.meta["caches"] == rule and frag.meta["inputs"]["caches"] == rule
    assert not list((layout.root / ".capture").rglob("*.caches"))  # nothing left behind


@pytest.mark.parametrize("cargo_on_path, status", [(True, "ok"), (False, "skipped")])
def test_an_experiment_that_needs_cargo_is_skipped_where_there_is_none(tmp_path, monkeypatch, cargo_on_path, status):
    from tests.engine.book import write

    layout = make_book(tmp_path / "nbook", manifest='''
[[experiment]]
id = "reader"
script = "snippets/reader.py"
needs = ["cargo"]
''')
    write(layout.root / "snippets/reader.py", 'print("read the crate source")\n')
    import capture.running.regenerate as regen

    real = regen.shutil.which
    if cargo_on_path and real("cargo") is None:
        pytest.skip("no cargo on this machine")
    if not cargo_on_path:
        monkeypatch.setattr(regen.shutil, "which", lambda name, *a, **k: None if name == "cargo" else real(name, *a, **k))
    outcomes, _ = run(layout)
    assert outcomes["reader@cpu"].status == status, outcomes["reader@cpu"].message
    if status == "skipped":
        assert "needs cargo" in outcomes["reader@cpu"].message
        assert Store(layout.fragments).read("linux-x86_64-cpu", "reader@cpu") is None


FEATURE_MAIN = """\
fn main() {
    println!("extra {}", if cfg!(feature = "extra") { "on" } else { "off" });
}
"""


@pytest.mark.slow  # builds Rust
def test_an_experiment_with_features_of_its_own_gets_a_build_of_its_own(tmp_path, monkeypatch):
    """Manifest `features`: the binary is built apart, with them; every other experiment keeps the shared build."""
    from capture.toolchains import build as buildmod
    from tests.engine.book import write

    monkeypatch.setenv("CARGO_TARGET_DIR", str(tmp_path / "target"))
    layout = make_book(tmp_path / "fbook", manifest='''
[[experiment]]
id = "plain"
framework = "candle"
crate = "feat"

[[experiment]]
id = "extra"
framework = "candle"
crate = "feat"
features = ["extra"]
''')
    write(layout.root / "crates/Cargo.toml", '[workspace]\nresolver = "2"\nmembers = ["tiny", "feat"]\n')
    write(layout.root / "crates/feat/Cargo.toml", '[package]\nname = "feat"\nversion = "0.1.0"\nedition = "2021"\n'
          '\n[features]\nextra = []\n')
    write(layout.root / "crates/feat/src/main.rs", FEATURE_MAIN)
    subprocess.run(["cargo", "generate-lockfile", "--offline"], cwd=layout.crates, check=True, capture_output=True)
    outcomes, _ = run(layout)
    assert outcomes["plain@cpu"].status == "ok" and outcomes["extra@cpu"].status == "ok", outcomes
    store = Store(layout.fragments)
    plain, extra = store.read("linux-x86_64-cpu", "plain@cpu"), store.read("linux-x86_64-cpu", "extra@cpu")
    assert plain.text == "extra off\n" and extra.text == "extra on\n"
    assert extra.meta["versions"]["rust_build"]["features"] == ["feat/extra"]
    assert plain.meta["versions"]["rust_build"]["features"] == []
    assert extra.meta["inputs"]["features"] == ["extra"] and "features" not in plain.meta["inputs"]
    assert (buildmod.feature_target(layout, "feat", ("extra",)) / "release" / "feat").is_file()
    # the shared build's binary is still the one without the feature
    again, _ = run(layout, only=["plain"], force=True)
    assert again["plain@cpu"].status == "ok" and store.read("linux-x86_64-cpu", "plain@cpu").text == "extra off\n"


def test_an_experiment_with_features_is_skipped_without_cargo(tmp_path, monkeypatch):
    layout = make_book(tmp_path / "nbook", manifest='''
[[experiment]]
id = "extra"
framework = "candle"
crate = "tiny"
features = ["cuda"]
''')
    import capture.running.regenerate as regen

    real = regen.shutil.which
    monkeypatch.setattr(regen.shutil, "which", lambda name, *a, **k: None if name == "cargo" else real(name, *a, **k))
    outcomes, _ = run(layout)
    assert outcomes["extra@cpu"].status == "skipped"
    assert "needs cargo: its binary is built with features cuda" in outcomes["extra@cpu"].message


@pytest.mark.slow  # builds Rust
def test_a_python_experiment_runs_an_experiment_binary(book):
    """Manifest `runs`: {binary} is the crate's built binary; the crate's sources are the script's inputs too."""
    from tests.engine.book import write

    (book.root / "docs/experiments.toml").write_text(
        (book.root / "docs/experiments.toml").read_text() + '''
[[experiment]]
id = "inspect"
framework = "burn"
script = "snippets/inspect.py"
runs = "tiny"
args = ["{binary}", "{device}"]
''')
    write(book.root / "snippets/inspect.py", '''\
import subprocess, sys
out = subprocess.run([sys.argv[1], sys.argv[2]], capture_output=True, text=True, check=True).stdout
print("the binary said: " + out.strip())
''')
    outcomes, _ = run(book)
    assert outcomes["inspect@cpu"].status == "ok", outcomes["inspect@cpu"].message
    frag = Store(book.fragments).read("linux-x86_64-cpu", "inspect@cpu")
    assert frag.text == "the binary said: tiny ok flex\n"
    assert "crates/tiny/src/main.rs" in frag.meta["inputs"]["files"] and "snippets/inspect.py" in frag.meta["inputs"]["files"]
    assert frag.meta["command"][-2:] == ["tiny", "flex"] and frag.meta["versions"]["rust_build"]["features"] == []
    main = book.root / "crates/tiny/src/main.rs"
    main.write_text(main.read_text().replace("tiny ok", "tiny changed"))
    again, _ = run(book, only=["inspect"])
    assert again["inspect@cpu"].status == "ok"  # the crate changed: the script's fragment is stale and reruns
    assert Store(book.fragments).read("linux-x86_64-cpu", "inspect@cpu").text == "the binary said: tiny changed flex\n"
