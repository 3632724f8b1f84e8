"""Pure functions of the core: normaliser, regions, manifest errors, query language, formatting."""

import pytest

from capture.evidence import fmt
from capture.plan import manifest, regions
from capture.running import normalize
from capture.evidence.query import Evaluator, MissingData, QueryError, Range, Value, parse_refs


@pytest.mark.parametrize(
    "text, expected",
    [
        ("returned after 5.943ms, after sync 913.458µs", "returned after <dur>, after sync <dur>"),
        ("first 4242.674 ms  later min 1.817 ms", "first <dur>  later min <dur>"),
        ("round 0: 125.5 ns/op", "round 0: <dur>/op"),
        ("wall 1.2s total", "wall <dur> total"),
        ("median 3.272ms (656 GFLOP/s)", "median <dur> (<rate>)"),
        ("thread 'main' (8626761) panicked at src/main.rs:3:5", "thread 'main' (<tid>) panicked at src/main.rs:3:5"),
        ("buffer at 0x7f3a2c001000 freed", "buffer at <addr> freed"),
        ("cache in /tmp/torchinductor_root/ab/cd.py", "cache in <tmp>"),
        ("index 5 is out of bounds for dimension 0 with size 3", "index 5 is out of bounds for dimension 0 with size 3"),
        ("Shape { dims: [2, 3] } 256 GiB", "Shape { dims: [2, 3] } 256 GiB"),
    ],
)
def test_skeleton_masks_run_to_run_noise_only(text, expected):
    assert normalize.skeleton(text) == expected + "\n"


def test_skeleton_extra_masks():
    assert normalize.skeleton("loss after 221 steps 0.008543", [r"steps [0-9.]+"]) == "loss after 221 <masked>\n"


SRC = """\
fn main() {
    // ANCHOR: outer
    let a = 1;
    // ANCHOR: inner
    let b = 2;
    // ANCHOR_END: inner
    // ANCHOR_END: outer
}
"""


def test_region_extraction_drops_nested_markers_and_dedents():
    r = regions.extract(SRC, "outer")
    assert r.text == "let a = 1;\nlet b = 2;" and (r.first_line, r.last_line) == (3, 5)
    assert regions.extract(SRC, "inner").text == "let b = 2;"
    assert "ANCHOR" not in regions.extract(SRC, None).text


@pytest.mark.parametrize(
    "src, name, msg",
    [
        (SRC, "nope", "no region 'nope' (regions in this file: outer, inner)"),
        ("// ANCHOR: x\nlet a = 1;\n", "x", "opened at line 1 is never closed"),
        ("// ANCHOR: x\n// ANCHOR_END: x\n", "x", "region 'x' is empty"),
    ],
)
def test_region_errors_say_what_is_wrong(src, name, msg):
    with pytest.raises(regions.RegionError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        regions.extract(src, name)


def test_line_selection_with_visible_elision():
    text = "\n".join(f"l{i}" for i in range(1, 8))
    assert regions.select_lines(text, "1-2, 5") == "l1\nl2\n...\nl5\n..."
    assert regions.select_lines(text, "-2-") == "...\nl6\nl7"
    with pytest.raises(regions.RegionError, match="outside the 7 lines"):
        regions.select_lines(text, "3-9")


def test_manifest_errors_name_file_and_line(tmp_path):
    p = tmp_path / "experiments.toml"
    p.write_text('[[experiment]]\nid = "ok"\nscript = "a.py"\n\n[[experiment]]\nid = "bad"\nscript = "b.py"\nroles = ["tpu"]\n')
    with pytest.raises(manifest.ManifestError, match=r"experiments.toml:6: experiment bad: roles must be"):
        manifest.load(p)
    p.write_text('[[experiment]]\nid = "x"\ncrate = "c"\nexpect = { cpu = "exit 101" }\nroles = ["cpu", "gpu"]\n')
    with pytest.raises(manifest.ManifestError, match=r":2: experiment x: expect: no value for role\(s\) \['gpu'\]"):
        manifest.load(p)


def test_manifest_per_role_values(tmp_path):
    p = tmp_path / "experiments.toml"
    p.write_text('[[experiment]]\nid = "x"\ncrate = "c"\nroles = ["cpu", "gpu"]\n'
                 'args = { cpu = ["a", "{device}", "4096"], gpu = ["a", "{device}", "8192"] }\n'
                 'expect = { cpu = "exit 101", gpu = "exit 0" }\n')
    e = manifest.load(p).get("x")
    assert e.args["gpu"][-1] == "8192" and e.expect["cpu"].exit == 101 and e.expect["gpu"].met_by(0, False)
    assert manifest.Expect.parse("timeout").met_by(None, True) and not manifest.Expect.parse("exit 0").met_by(None, True)


def _ev(records):
    def lookup(ref):
        recs = [r for r in records if r["name"] == ref.name and all(r["tags"].get(k) == v for k, v in ref.tags)]
        if not recs:
            raise MissingData(ref.text, "none")
        return recs

    return Evaluator(lookup)


RECS = [{"name": "t", "value": v, "unit": "s", "tags": {"run": str(i)}} for i, v in enumerate([3e-3, 1e-3, 2e-3])]


def test_query_aggregates_arithmetic_and_claims():
    ev = _ev(RECS + [{"name": "u", "value": 1e-6, "unit": "s", "tags": {}}])
    assert ev.eval("median(e@cpu:t)").v == 2e-3
    assert ev.eval("e@cpu:t{run=1}").v == 1e-3
    assert ev.eval("median(e@cpu:t) / e@cpu:u").v == pytest.approx(2000)
    assert ev.eval("max(e@cpu:t) > 0.1 * min(e@cpu:t)").v is True
    assert ev.eval("max(e@cpu:t) > 2 * min(e@cpu:t)").v is None  # 3 ms against 2 ms: within the noise margin
    r = ev.eval("range(e@cpu:t)")
    assert isinstance(r, Range) and (r.lo, r.hi) == (1e-3, 3e-3)
    with pytest.raises(QueryError, match="selects 3 records; aggregate it"):
        ev.eval("e@cpu:t + 0")
    with pytest.raises(MissingData):
        ev.eval("median(e@cpu:nothing)")
    with pytest.raises(QueryError, match="unsupported expression"):
        ev.eval("__import__('os')")


def test_refs_parse_tags():
    _, refs = parse_refs("median(burn-ret@gpu:ret.synced{run=0,size=8192}) < 1")
    assert refs[0].key == "burn-ret@gpu" and refs[0].name == "ret.synced" and dict(refs[0].tags) == {"run": "0", "size": "8192"}


@pytest.mark.parametrize(
    "value, style, expected",
    [
        (Value(4.1e-4, "s"), "", "410 µs"),
        (Value(0.0033, "s"), "", "3.3 ms"),
        (Value(1.94, "s"), "", "1.94 s"),
        (Value(125.4e-9, "s"), "", "125 ns"),
        (Range(3.0e-3, 3.5e-3, "s"), "", "3–3.5 ms"),
        (Value(2.14, ""), "ratio", "2.1 倍"),
        (Value(274877906944, "B"), "", "256 GiB"),
        (Value(True, ""), "", "是"),
    ],
)
def test_formatting_switches_units(value, style, expected):
    assert fmt.fmt_value(value, style=style, digits=2 if style else 3) == expected.replace(" ", fmt.NBSP)


def test_cuda_build_env_points_candle_kernels_at_the_kit(monkeypatch, tmp_path):
    from capture.toolchains import cudakit

    monkeypatch.delenv("CUDAFORGE_THREADS", raising=False)
    env = cudakit.build_env(tmp_path)
    assert env["CUDA_HOME"] == str(tmp_path) and env["PATH"].startswith(str(tmp_path / "bin"))
    assert env["CUDA_COMPUTE_CAP"] == "90" and env["BOOK_CANDLE_CUDA"] == "1"
    assert int(env["CUDAFORGE_THREADS"]) >= 1
    monkeypatch.setenv("CUDAFORGE_THREADS", "3")
    assert cudakit.build_env(tmp_path)["CUDAFORGE_THREADS"] == "3"
    monkeypatch.setenv("BOOK_CUDA_HOME", str(tmp_path / "kit"))
    assert cudakit.default_home() == tmp_path / "kit"


def test_machine_setup_failures_come_with_a_hint():
    from capture.running.regenerate import failure_hints

    cudarc = 'panicked at cudarc-0.19.10/src/lib.rs:200:5:\nUnable to dynamically load the "cublas" shared library'
    assert any("LD_LIBRARY_PATH" in h for h in failure_hints(cudarc))
    assert any("VK_DRIVER_FILES" in h for h in failure_hints("Err(AdapterUnavailable)"))
    assert failure_hints("thread 'main' panicked at src/main.rs:3:5: boom") == []
