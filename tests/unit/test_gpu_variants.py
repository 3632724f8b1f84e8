"""burn on NVIDIA: cuda is the GPU role, vulkan a variant built beside it that experiments name with
`gpu_device`; what gets built, what runs where, what a re-run command asks for."""

from pathlib import Path

import pytest

from capture.machines import identity
from capture.plan import inputs, manifest
from capture.storage.paths import Layout
from capture.machines.platform import Platform
from capture.machines.roles import cargo_features, nvidia_build, resolve

REPO = Path(__file__).resolve().parents[2]
NVIDIA = Platform(key="linux-x86_64-nvidia-test", os="linux", arch="x86_64", gpu="nvidia", gpu_name="Test GPU")
APPLE = Platform(key="macos-arm64-apple-m9", os="macos", arch="arm64", gpu="apple", gpu_name="Apple M9")
CRATES = {"design-bench": "candle", "design-burn": "burn", "exec-gpu": "burn"}


def test_nvidia_builds_burn_for_cuda_with_vulkan_beside_it(monkeypatch):
    monkeypatch.delenv("BOOK_BURN_GPU", raising=False)
    plan = nvidia_build(CRATES, REPO / "crates", candle_cuda=True)
    assert plan.features == ["design-bench/cuda", "design-burn/cuda", "design-burn/vulkan", "exec-gpu/cuda", "exec-gpu/vulkan"]
    assert plan.gpu_devices == {"burn": "cuda", "candle": "cuda"} and plan.gpu_variants == {"burn": ["vulkan"]}
    monkeypatch.setenv("BOOK_CANDLE_CUDA", "0")
    assert cargo_features(NVIDIA, CRATES, REPO / "crates") == plan.features[1:]  # regenerate's build: no nvcc, no candle cuda


def test_book_burn_gpu_vulkan_builds_vulkan_only(monkeypatch):
    monkeypatch.setenv("BOOK_BURN_GPU", "vulkan")
    plan = nvidia_build(CRATES, REPO / "crates", candle_cuda=False)
    assert plan.features == ["design-burn/vulkan", "exec-gpu/vulkan"]
    assert plan.gpu_devices == {"burn": "vulkan"} and plan.gpu_variants == {}


def test_a_variant_counts_only_where_every_crate_of_the_framework_declares_it(tmp_path, monkeypatch):
    monkeypatch.delenv("BOOK_BURN_GPU", raising=False)
    for crate, feats in (("a", 'cuda = []\nvulkan = []\n'), ("b", 'cuda = []\n')):
        (tmp_path / crate).mkdir()
        (tmp_path / crate / "Cargo.toml").write_text(f"[features]\n{feats}")
    plan = nvidia_build({"a": "burn", "b": "burn"}, tmp_path, candle_cuda=False)
    assert plan.features == ["a/cuda", "a/vulkan", "b/cuda"] and plan.gpu_variants == {}


@pytest.mark.parametrize("platform, prebuilt_gpu, variants, device, why", [
    (NVIDIA, None, None, "vulkan", ""),
    (NVIDIA, {"burn": "cuda"}, {"burn": ["vulkan"]}, "vulkan", ""),
    (NVIDIA, {"burn": "vulkan"}, {}, "vulkan", ""),  # a BOOK_BURN_GPU=vulkan bundle runs it as its role
    (NVIDIA, {"burn": "cuda"}, {}, None, "the prebuilt burn binaries were built without vulkan"),
    (APPLE, None, None, None, "builds no vulkan variant of burn"),
])
def test_a_variant_runs_where_it_was_built_and_says_why_not_elsewhere(platform, prebuilt_gpu, variants, device, why):
    res = resolve(platform, "burn", "gpu", prebuilt_gpu, "vulkan", variants)
    assert res.device == device and why in res.reason
    assert resolve(platform, "burn", "cpu", prebuilt_gpu, "vulkan", variants).device == "flex"
    assert resolve(NVIDIA, "burn", "gpu", prebuilt_gpu).device == (prebuilt_gpu or {"burn": "cuda"})["burn"]


def _manifest(tmp_path, body: str):
    p = tmp_path / "experiments.toml"
    p.write_text('[[experiment]]\nid = "v"\ncrate = "c"\n' + body)
    return manifest.load(p)


def test_the_manifest_takes_a_variant_device_for_the_gpu_role_only(tmp_path):
    e = _manifest(tmp_path, 'framework = "burn"\nroles = ["gpu"]\ngpu_device = "vulkan"\n').get("v")
    assert e.gpu_device == "vulkan"
    for body, msg in [
        ('framework = "burn"\nroles = ["cpu"]\ngpu_device = "vulkan"\n', 'roles must include "gpu"'),
        ('framework = "candle"\nroles = ["gpu"]\ngpu_device = "vulkan"\n', "candle has no GPU variants"),
        ('framework = "burn"\nroles = ["gpu"]\ngpu_device = "vulcan"\n', "did you mean 'vulkan'"),
    ]:
        with pytest.raises(manifest.ManifestError, match=rf"experiments.toml:2: experiment v: .*{msg}"):
            _manifest(tmp_path, body)


def test_the_variant_is_an_input_of_the_gpu_role_only():
    m = manifest.load(REPO / "docs/experiments.toml")
    layout = Layout(REPO)
    variant, role_exp = m.get("burn-matmul-vulkan"), m.get("burn-matmul")
    assert variant.gpu_device == "vulkan" and variant.args == {"gpu": ("matmul", "{device}")}
    rec = inputs.inputs(variant, "gpu", layout)
    assert rec["gpu_device"] == "vulkan" and "gpu_device" not in inputs.inputs(role_exp, "gpu", layout)
    without = {k: v for k, v in rec.items() if k != "gpu_device"}
    assert inputs.digest(without) != inputs.digest(rec)


def test_the_manifest_has_vulkan_variants_of_the_burn_gpu_experiments():
    m = manifest.load(REPO / "docs/experiments.toml")
    variants = {e.id: e for e in m.experiments if e.gpu_device}
    assert set(variants) == {"burn-matmul-vulkan", "burn-chain8-vulkan"}
    for e in variants.values():
        base = m.get(e.id.removesuffix("-vulkan"))
        assert e.framework == "burn" and e.roles == ("gpu",) and e.crate == base.crate
        assert e.args["gpu"] == base.args["gpu"] and e.processes == base.processes and e.caches == base.caches


@pytest.mark.parametrize("features, env, args", [
    (["design-bench/cuda", "design-burn/cuda", "design-burn/vulkan", "exec-gpu/cuda", "exec-gpu/vulkan"], {}, ["--candle-cuda"]),
    (["design-burn/cuda", "exec-gpu/cuda"], {}, []),
    (["design-bench/cuda", "design-burn/vulkan", "exec-gpu/vulkan"], {"BOOK_BURN_GPU": "vulkan"}, ["--candle-cuda"]),
])
def test_the_bundle_recipe_rebuilds_what_was_built(features, env, args):
    assert identity.bundle_recipe(features) == {"env": env, "args": args}
    ident = identity.Identity(key="k", display_name="NVIDIA H200 · Linux", route="bundle", bundle=identity.bundle_recipe(features))
    build = ident.regenerate_command(["burn-ret"]).split("  (")[0]
    assert build == " ".join(x for x in [*(f"{k}={v}" for k, v in env.items()), "python -m capture bundle", *args, "--out .device"])


def test_a_fragment_captured_on_another_device_than_its_role_now_maps_to_is_rerun():
    from capture.running.regenerate import Job, needs_run
    from capture.storage.store import Fragment

    exp = manifest.load(REPO / "docs/experiments.toml").get("burn-matmul")

    def job(old_device, device="cuda"):
        old = Fragment("linux-x86_64-nvidia-h200", "burn-matmul@gpu", "", {"inputs_hash": "h", "device": old_device})
        return Job(exp, "gpu", device, hash="h", old=old)
    assert needs_run(job("vulkan"), force=False)  # the H200's burn fragments from before cuda was buildable
    assert not needs_run(job("cuda"), force=False)
    assert not needs_run(job(None), force=False)  # a record without a device says nothing against it
