"""A throwaway book for engine tests: a manifest, two tiny Python snippets, a tiny dependency-free crate."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

from capture.plan.manifest import load
from capture.storage.paths import Layout
from capture.machines.platform import Platform
from capture.running.regenerate import Options, regenerate
from capture.storage.store import Store

CPU = Platform(key="linux-x86_64-cpu", os="linux", arch="x86_64")
GPU = Platform(key="linux-x86_64-nvidia-test", os="linux", arch="x86_64", gpu="nvidia", gpu_name="Test GPU")

HELPER = '''\
def greet(device):
    return f"hello from {device}"
'''

HELLO = '''\
import sys, time
from helper import greet
# ANCHOR: main
t = time.perf_counter()
print(greet(sys.argv[1]))
# ANCHOR_END: main
import bookrec
bookrec.record("hello.elapsed", time.perf_counter() - t, "s", device=sys.argv[1])
print(f"took {bookrec.fmt_duration(time.perf_counter() - t)}")
'''

SLEEPER = '''\
import subprocess, sys, time
mode = sys.argv[1]
if mode == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    open(sys.argv[2], "w").write(str(child.pid))
    print("child started", flush=True)
    time.sleep(600)
elif mode == "slow":
    print("working", flush=True)
    time.sleep(float(sys.argv[2]))
    print("done")
elif mode == "crash":
    raise RuntimeError("boom")
'''

CRATE_MAIN = '''\
fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    match mode.as_str() {
        "panic" => panic!("expected panic"),
        "abort" => std::process::abort(),
        _ => println!("tiny ok {mode}"),
    }
}
'''

MANIFEST = '''\
[defaults]
timeout = 60

[[experiment]]
id = "hello"
framework = "torch"
script = "snippets/hello.py"
args = ["{device}"]
roles = ["cpu", "gpu"]

[[experiment]]
id = "sleeper"
script = "snippets/sleeper.py"
args = ["slow", "0"]

[[experiment]]
id = "tiny"
framework = "burn"
crate = "tiny"
args = ["{device}"]

[[experiment]]
id = "tiny-panic"
framework = "burn"
crate = "tiny"
args = ["panic"]
expect = "exit 101"
'''


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


def make_book(root: Path, manifest: str = MANIFEST) -> Layout:
    repo = Path(__file__).resolve().parents[2]
    write(root / "docs/experiments.toml", manifest)
    write(root / "snippets/helper.py", HELPER)
    write(root / "snippets/hello.py", HELLO)
    write(root / "snippets/sleeper.py", SLEEPER)
    shutil.copy(repo / "snippets/bookrec.py", root / "snippets/bookrec.py")
    write(root / "crates/Cargo.toml", '[workspace]\nresolver = "2"\nmembers = ["tiny"]\n')
    write(root / "crates/tiny/Cargo.toml", '[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n'
          '\n[features]\ncuda = []\nvulkan = []\n')
    write(root / "crates/tiny/src/main.rs", CRATE_MAIN)
    subprocess.run(["cargo", "generate-lockfile", "--offline"], cwd=root / "crates", check=True, capture_output=True)
    return Layout(root)


def run(layout: Layout, platform: Platform = CPU, **kw):
    """Regenerate in the throwaway book; returns {key: outcome}."""
    import io

    out = io.StringIO()
    store = Store(layout.fragments)
    outcomes = regenerate(layout, load(layout.manifest), platform, store, Options(**kw), out=out)
    return {o.key: o for o in outcomes}, out.getvalue()


def cargo_env(tmp_root: Path) -> None:
    os.environ.setdefault("CARGO_TARGET_DIR", str(tmp_root / "cargo-target"))
