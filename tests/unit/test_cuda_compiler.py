"""Which compiler made burn's CUDA kernels: read from cargo's feature resolution at build time,
carried through build-info.json into every fragment, shown in the output caption."""

import json
import shutil
import urllib.request
from pathlib import Path

import pytest

from capture.toolchains import build, cudacompiler
from capture.storage.paths import Layout
from capture.sphinxext import output
from capture.sphinxext.common import compiler_words

REPO = Path(__file__).resolve().parents[2]
REGISTRY = "https://index.crates.io/config.json"  # what cargo asks first for a crate it lacks
CUDA = ["design-bench/cuda", "design-burn/cuda", "design-burn/vulkan", "exec-gpu/cuda", "exec-gpu/vulkan"]


def test_cubecl_cudas_cpp_feature_selects_nvrtc():
    assert cudacompiler.from_features(["default", "std"]) == "llvm"
    assert cudacompiler.from_features(["cpp", "default", "std"]) == "cpp"


def registry_unreachable() -> str | None:
    """Why crates.io cannot be reached from here, or None when it can."""
    try:
        urllib.request.urlopen(REGISTRY, timeout=15).close()
    except OSError as e:
        return f"{REGISTRY}: {e}"
    return None


@pytest.mark.skipif(shutil.which("cargo") is None, reason="asks cargo tree")
def test_the_books_cuda_build_uses_cubecls_default_llvm_compiler():
    # Not offline as in a build (which has just downloaded its crates): a fresh cargo home has never seen
    # the GPU-only crates, so cargo fetches the ones this resolution needs (once, into CARGO_HOME).
    try:
        record = build.compiler_record(Layout(REPO), CUDA, offline=False)
    except build.BuildError as e:
        if why := registry_unreachable():
            pytest.skip(f"the GPU build's crates are not in this cargo home and the registry is unreachable ({why}): {e}")
        raise
    assert record == {"cubecl_cuda_compiler": "llvm"}
    assert cudacompiler.of_build(REPO / "crates", ["exec-gpu/vulkan"], offline=False) is None  # no cubecl-cuda in that build
    assert build.compiler_record(Layout(REPO), ["exec-gpu/vulkan", "design-bench/cuda"]) == {}  # not even asked


def test_a_build_asks_cargo_offline_and_a_check_lets_it_fetch(monkeypatch):
    seen = []

    class Tree:
        returncode, stderr, stdout = 0, "", "cubecl-cuda v0.11.3 default,std\n"
    monkeypatch.setattr(cudacompiler.subprocess, "run", lambda cmd, **kw: seen.append(cmd) or Tree())
    build.compiler_record(Layout(REPO), CUDA)
    build.compiler_record(Layout(REPO), CUDA, offline=False)
    assert "--offline" in seen[0] and "--offline" not in seen[1]


def test_an_unreadable_feature_resolution_fails_the_build_not_the_record(monkeypatch):
    def broken(*a, **k):
        raise cudacompiler.CompilerUnknown("cargo metadata failed")
    monkeypatch.setattr(cudacompiler, "of_build", broken)
    with pytest.raises(build.BuildError, match="which CUDA compiler burn's kernels use"):
        build.compiler_record(Layout(REPO), CUDA)


def test_prebuilt_binaries_carry_the_compiler_into_each_fragments_record(tmp_path):
    info = {"features": CUDA, "rustc": "rustc 1.95.0", "built_on": "linux-x86_64-cpu", "built_at": "2026-12-02T00:00:00+00:00",
            "gpu_devices": {"burn": "cuda", "candle": "cuda"}, "gpu_variants": {"burn": ["vulkan"]},
            "cubecl_cuda_compiler": "llvm"}
    (tmp_path / build.BUILD_INFO).write_text(json.dumps(info))
    bins = build.load_prebuilt(tmp_path)
    assert bins.record()["cubecl_cuda_compiler"] == "llvm" and bins.record()["prebuilt"] is True
    assert bins.gpu_variants == {"burn": ["vulkan"]}
    del info["cubecl_cuda_compiler"]  # a bundle from before the record: nothing claimed
    (tmp_path / build.BUILD_INFO).write_text(json.dumps(info))
    assert "cubecl_cuda_compiler" not in build.load_prebuilt(tmp_path).record()


def meta(framework="burn", device="cuda", compiler="llvm"):
    rust = {"features": CUDA, "prebuilt": True, **({"cubecl_cuda_compiler": compiler} if compiler else {})}
    return {"framework": framework, "device": device, "role": "gpu", "started": "2026-12-02T01:02:03+00:00",
            "versions": {"rust_build": rust, "burn": "0.22.1"}}


@pytest.mark.parametrize("m, words", [
    (meta(), "CubeCL 内核编译：LLVM → PTX"),
    (meta(compiler="cpp"), "CubeCL 内核编译：CUDA C++ → NVRTC"),
    (meta(device="vulkan"), ""),  # the variant: SPIR-V, not this compiler
    (meta(framework="candle"), ""),
    (meta(compiler=None), ""),
])
def test_the_caption_says_which_compiler_made_burns_cuda_kernels(m, words):
    assert compiler_words(m) == words


def test_the_outputs_details_name_the_features_the_build_turned_on(monkeypatch):
    class Ident:
        display_name, os_pretty = "NVIDIA H200", "Ubuntu 24.04"

        def regenerate_steps(self, exps, roles):
            return [("here", "nox -s regenerate")]

    class FakeBook:
        def identity(self, platform):
            return Ident()

        def experiment(self, key):
            return type("Exp", (), {"crate": "exec-gpu", "build_crate": "exec-gpu"})()

    class Key:
        exp, role = "chain8", "gpu"

    class State:
        fragment = type("Frag", (), {"meta": meta()})()
        key, platform, state, changed = Key(), "linux-x86_64-nvidia-h200", "fresh", []

    monkeypatch.setattr(output, "fragment_href", lambda *a: "x.txt")
    text = output.more(FakeBook(), State(), None).astext()
    assert "构建时给这个 crate 打开的特性：cuda、vulkan" in text and "burn 0.22.1" in text and "2026-12-02" in text
    assert "设备 cuda（CubeCL 内核编译：LLVM → PTX）" in text  # the caption keeps it in the device's tooltip


def test_cargos_resolved_features_are_read_not_the_ones_we_passed(monkeypatch):
    class Tree:
        returncode, stderr = 0, ""
        stdout = "cubecl-cuda v0.11.3 cpp,default,std\n"
    seen = []
    monkeypatch.setattr(cudacompiler.subprocess, "run", lambda cmd, **kw: seen.append(cmd) or Tree())
    assert cudacompiler.of_build(REPO / "crates", ["exec-gpu/cuda"]) == "cpp"
    assert seen[0][:2] == ["cargo", "tree"] and "cubecl-cuda" in seen[0] and seen[0][-1] == "exec-gpu/cuda"
    Tree.stdout = "warning: nothing to print.\n"
    assert cudacompiler.of_build(REPO / "crates", []) is None


def test_gpu_builds_are_one_per_framework_and_the_cpu_build_one_for_the_workspace():
    layout = Layout(REPO)
    assert build.member_frameworks(layout) == {"bookrec": "other", "design-bench": "candle", "design-burn": "burn",
                                               "exec-gpu": "burn"}
    assert [s.cmd for s in build.cargo_steps(layout, [])] == [["cargo", "build", "--release", "--locked", "--workspace"]]
    steps = build.cargo_steps(layout, CUDA)
    assert [(s.packages, s.features) for s in steps] == [
        (("design-burn", "exec-gpu"), ("design-burn/cuda", "design-burn/vulkan", "exec-gpu/cuda", "exec-gpu/vulkan")),
        (("design-bench",), ("design-bench/cuda",)),
        (("bookrec",), ()),
    ]
    # burn's cuda and candle's cuda never meet in one cargo invocation (their cudarc features clash)
    assert all(not ({"design-bench/cuda", "exec-gpu/cuda"} <= set(s.features)) for s in steps)
    assert steps[1].cmd == ["cargo", "build", "--release", "--locked", "-p", "design-bench", "--features", "design-bench/cuda"]
