"""`python -m capture upgrade` on a throwaway book: a version bump of a tiny dependency from a local registry.

The book's crates take `tinydep` from a directory registry inside the book (crates/.cargo/config.toml replaces
crates.io with vendor/, so cargo works offline). tinydep 0.1.0 is pinned; 0.2.0 changes one output (the message
the `deps` experiment prints and records), one claim and one figure (its work takes 100 ms instead of 2 ms);
0.3.0 removes the function the experiment calls, so it no longer builds. `tiny` does not use tinydep: only its
lock changes (a control). No burn, no candle, no torch.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from capture.commands import upgrade as cmd
from capture.machines import identity as identitymod
from capture.running import upgrade as up
from capture.storage.paths import Layout
from capture.storage.store import Store
from tests.engine.book import CPU, make_book, run, write

MANIFEST = '''\
[defaults]
timeout = 60

[[experiment]]
id = "tiny"
framework = "burn"
crate = "tiny"
args = ["{device}"]

[[experiment]]
id = "deps"
framework = "candle"
crate = "withdep"
args = ["{device}"]

[[experiment]]
id = "sleeper"
script = "snippets/sleeper.py"
args = ["slow", "0"]
'''

DEPS_MAIN = '''\
use std::io::Write;

fn main() {
    let device = std::env::args().nth(1).unwrap_or_default();
    let said = tinydep::message();
    println!("tinydep says {said} on {device}");
    let mut recs = std::env::var("BOOK_RECORDS").ok().map(|p| std::fs::File::create(p).unwrap());
    if let Some(f) = recs.as_mut() {
        writeln!(f, "{{\\"name\\": \\"dep.message\\", \\"value\\": \\"{said}\\"}}").unwrap();
    }
    for round in 0..5 {
        let t = std::time::Instant::now();
        tinydep::work();
        let s = t.elapsed().as_secs_f64();
        if let Some(f) = recs.as_mut() {
            writeln!(f, "{{\\"name\\": \\"dep.work\\", \\"value\\": {s}, \\"unit\\": \\"s\\", \\"tags\\": {{\\"round\\": \\"{round}\\"}}}}").unwrap();
        }
    }
    println!("done");
}
'''

TINYDEP = {  # version -> src/lib.rs
    "0.1.0": 'pub fn message() -> &\'static str { "one" }\n'
             'pub fn work() { std::thread::sleep(std::time::Duration::from_millis(2)); }\n',
    "0.2.0": 'pub fn message() -> &\'static str { "two" }\n'
             'pub fn work() { std::thread::sleep(std::time::Duration::from_millis(100)); }\n',
    "0.3.0": 'pub fn greeting() -> &\'static str { "three" }\n'
             'pub fn work() { std::thread::sleep(std::time::Duration::from_millis(2)); }\n',
}

PAGE = '''\
# The book

:::{claim} median(deps@cpu:dep.work) < 0.03
:where: cuda
The work is quick.
:::

:::{per-platform} all
Each round takes {num}`median(deps@cpu:dep.work)`.
:::

```{output} deps@cpu
```

:::{claim} deps@cpu:dep.message == "one" or deps@cpu:dep.message == "two"
:where: WHERE
The dependency says one or two.
:::
'''


def vendor(root: Path) -> None:
    for version, lib in TINYDEP.items():
        d = root / "vendor" / f"tinydep-{version}"
        files = {"Cargo.toml": f'[package]\nname = "tinydep"\nversion = "{version}"\nedition = "2021"\n', "src/lib.rs": lib}
        for rel, text in files.items():
            write(d / rel, text)
        checksum = {"files": {rel: hashlib.sha256(text.encode()).hexdigest() for rel, text in files.items()},
                    "package": hashlib.sha256(version.encode()).hexdigest()}
        (d / ".cargo-checksum.json").write_text(json.dumps(checksum), encoding="utf-8")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def upgrade_book(root: Path, claim_where: str = "all") -> Layout:
    """The throwaway book with tinydep 0.1.0 pinned, its fragments captured on this host and committed."""
    layout = make_book(root, MANIFEST)
    vendor(root)
    write(root / "crates/.cargo/config.toml", '[source.crates-io]\nreplace-with = "vendored"\n\n'
          '[source.vendored]\ndirectory = "../vendor"\n')
    write(root / "crates/Cargo.toml", '[workspace]\nresolver = "2"\nmembers = ["tiny", "withdep"]\n\n'
          '[workspace.dependencies]\ntinydep = { version = "=0.1.0" }\n')
    write(root / "crates/withdep/Cargo.toml", '[package]\nname = "withdep"\nversion = "0.1.0"\nedition = "2021"\n\n'
          '[dependencies]\ntinydep.workspace = true\n\n[features]\ncuda = []\nvulkan = []\n')
    write(root / "crates/withdep/src/main.rs", DEPS_MAIN)
    subprocess.run(["cargo", "generate-lockfile", "--offline"], cwd=root / "crates", check=True, capture_output=True)
    write(root / "docs/index.md", PAGE.replace("WHERE", claim_where))
    write(root / ".gitignore", "/.capture/\n/docs/_fragments/.lock\n")
    outcomes, log = run(layout)
    assert {k: o.status for k, o in outcomes.items()} == {"tiny@cpu": "ok", "deps@cpu": "ok", "sleeper@cpu": "ok"}, log
    git(root, "init", "-q")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "book")
    return layout


def upgrade(layout: Layout, version: str, platform=CPU):
    out = io.StringIO()
    report = cmd.start(layout, [up.Bump("tinydep", version)], platform, bundle=False, out=out)
    return report, out.getvalue()


def committed(layout: Layout) -> str:
    return git(layout.root, "status", "--porcelain", "--untracked-files=no")


@pytest.mark.slow  # builds a tiny crate three times
def test_bump_on_the_platforms_own_machine_reports_output_claim_figure_then_adopts(tmp_path, cargo_target, monkeypatch):
    monkeypatch.setenv("CARGO_TARGET_DIR", str(cargo_target))
    layout = upgrade_book(tmp_path / "book", claim_where="all")
    report, log = upgrade(layout, "0.2.0")

    assert report["host"]["own"] is True, log
    assert report["bumps"] == [{"package": "tinydep", "version": "0.2.0", "old": "0.1.0", "kind": "cargo"}]
    assert report["locks"]["cargo"]["tinydep"] == [["0.1.0"], ["0.2.0"]]
    assert set(report["targets"]) == {"tiny@cpu", "deps@cpu"}  # both read Cargo.lock
    assert "crates/Cargo.lock" in report["targets"]["deps@cpu"]
    (c,) = report["comparisons"]
    assert c["platform"] == "linux-x86_64-cpu" and c["book"]
    # one output changed shape: the printed text and the recorded message
    (o,) = c["outputs"]
    assert o["key"] == "deps@cpu"
    assert {"record": "dep.message", "old": "'one'", "new": "'two'"} in o["records"]
    assert any(line.startswith("-tinydep says one") for line in o["diff"])
    assert any(line.startswith("+tinydep says two") for line in o["diff"])
    assert any(p[0] == "index.md" for p in o["pages"])
    # one claim changed value (scoped to cuda: the page shows it for what it is, it blocks nothing here)
    (v,) = c["verdicts"]
    assert v["old"] == "yes" and v["new"] == "no" and v["page"] == "index.md" and v["sentence"] == "The work is quick."
    # one figure moved beyond its drift; the control's did not move like that
    beyond = [f for f in c["figures"] if f["beyond"]]
    assert [f["figure"] for f in beyond] == ["deps@cpu dep.work"]
    assert beyond[0]["ratio"] > 5 and beyond[0]["history"] and beyond[0]["history"][0]["version"] == "0.1.0"
    # the number the sentence shows changed
    (n,) = c["numbers"]
    assert n["text"] == "median(deps@cpu:dep.work)" and n["old"].endswith("ms") and n["new"].endswith("ms")
    assert report["adoptable"], report["blockers"]
    assert committed(layout) == ""  # nothing of the book changed

    page = (layout.root / "docs/dev/upgrades/tinydep-0.2.0.md").read_text(encoding="utf-8")
    assert page.startswith("# 升级：tinydep 0.1.0 → 0.2.0") and "可以采纳" in page and "| `dep.work` |" in page and "`deps@cpu`" in page
    assert "upgrade tinydep 0.1.0 -> 0.2.0" in log and "adoptable: python -m capture upgrade --adopt tinydep-0.2.0" in log

    assert cmd.main(["--adopt", "tinydep-0.2.0"], layout) == 0
    changed = committed(layout)
    assert "crates/Cargo.lock" in changed and "crates/Cargo.toml" in changed and "deps@cpu.json" in changed
    frag = Store(layout.fragments).read("linux-x86_64-cpu", "deps@cpu")
    assert "tinydep says two" in frag.text
    from capture.evidence.book import Book

    book = Book(layout.root)
    assert book.state("linux-x86_64-cpu", book.refs("deps@cpu:dep.message")[0]).state == "fresh"


@pytest.mark.slow  # builds a tiny crate twice per side
def test_bump_on_another_host_runs_both_pins_here_and_is_not_adopted(tmp_path, cargo_target, monkeypatch):
    monkeypatch.setenv("CARGO_TARGET_DIR", str(cargo_target))
    layout = upgrade_book(tmp_path / "book")
    ident = identitymod.read(layout.fragments, "linux-x86_64-cpu")
    other = replace(ident, fingerprint={**ident.fingerprint, "cpu": "Another CPU 9000"})
    identitymod.write(layout.fragments, other)
    git(layout.root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "the platform is another machine")

    report, log = upgrade(layout, "0.2.0")
    host = report["host"]
    assert host["own"] is False and host["scratch"] and host["scratch"] != "linux-x86_64-cpu"
    (c,) = report["comparisons"]
    assert c["platform"] == host["scratch"] and not c["book"]
    assert c["drift_platform"] == "linux-x86_64-cpu"  # the figures are judged by the drift of the platform it stands in for
    assert [v["new"] for v in c["verdicts"]] == ["no"] and [f["figure"] for f in c["figures"] if f["beyond"]] == ["deps@cpu dep.work"]
    assert [o["key"] for o in c["outputs"]] == ["deps@cpu"]
    assert not report["adoptable"]
    assert any("not the machine" in b or "not captured again" in b for b in report["blockers"])
    assert sorted(report["pending"]["linux-x86_64-cpu"]["keys"]) == ["deps@cpu", "tiny@cpu"]
    assert "nox -s upgrade -- tinydep 0.2.0" in report["pending"]["linux-x86_64-cpu"]["command"]
    assert "is not the machine of linux-x86_64-cpu" in log
    page = (layout.root / "docs/dev/upgrades/tinydep-0.2.0.md").read_text(encoding="utf-8")
    assert "**不是**书里任何平台的机器" in page and "不采纳" in page
    # the book's own store got nothing, and the worktrees hold this host's two runs
    assert Store(layout.fragments).platforms() == ["linux-x86_64-cpu"]
    folder = up.folder(layout, "tinydep-0.2.0")
    assert Store(Layout(folder.base).fragments).read(host["scratch"], "deps@cpu").text.startswith("tinydep says one")
    assert Store(Layout(folder.new).fragments).read(host["scratch"], "deps@cpu").text.startswith("tinydep says two")
    assert cmd.main(["--adopt", "tinydep-0.2.0"], layout) == 1
    assert committed(layout) == ""
    # the same command again goes on: same key, nothing captured again, the same report
    again, log = upgrade(layout, "0.2.0")
    assert again["host"]["scratch"] == host["scratch"] and "[  1/" not in log
    assert [v["where"] for v in again["comparisons"][0]["verdicts"]] == [v["where"] for v in c["verdicts"]]
    assert cmd.main(["--report", "tinydep-0.2.0", "--note", "the platform's machine was not reached"], layout) == 0
    page = (layout.root / "docs/dev/upgrades/tinydep-0.2.0.md").read_text(encoding="utf-8")
    assert "作者的说明：" in page and "the platform's machine was not reached" in page


@pytest.mark.slow  # builds a tiny crate
def test_bump_that_breaks_the_build_names_the_error_in_our_crate_and_captures_the_rest(tmp_path, cargo_target, monkeypatch):
    monkeypatch.setenv("CARGO_TARGET_DIR", str(cargo_target))
    layout = upgrade_book(tmp_path / "book")
    report, log = upgrade(layout, "0.3.0")
    b = report["build"]
    assert b["ok"] is False and b["failed"] == ["withdep"] and b["dropped"] == ["withdep"], log
    line = next(i for i, text in enumerate(DEPS_MAIN.splitlines(), 1) if "tinydep::message()" in text)
    err = next(e for e in b["errors"] if e["file"] == "crates/withdep/src/main.rs")
    assert err["line"] == line and err["package"] == "withdep" and "message" in err["message"]
    assert not report["adoptable"] and any("no longer build" in x for x in report["blockers"])
    (c,) = report["comparisons"]
    assert list(c["fragments"]) == ["tiny@cpu"]  # what still builds was captured and compared
    assert "crates/withdep/src/main.rs:%d" % line in log
    page = (layout.root / "docs/dev/upgrades/tinydep-0.3.0.md").read_text(encoding="utf-8")
    assert f"crates/withdep/src/main.rs:{line}" in page and "编译不过" in page
    # the book's crates are as they were
    assert "withdep" in (layout.root / "crates/Cargo.toml").read_text(encoding="utf-8")
    assert committed(layout) == ""


def test_a_version_that_does_not_exist_is_reported_not_raised(tmp_path, cargo_target, monkeypatch):
    monkeypatch.setenv("CARGO_TARGET_DIR", str(cargo_target))
    layout = upgrade_book(tmp_path / "book")
    report, log = upgrade(layout, "9.9.9")
    assert report["pin_error"] and "cargo update" in report["pin_error"] and not report["adoptable"]
    assert "the pins could not be changed" in log
    assert committed(layout) == ""


@pytest.mark.slow  # builds a tiny crate twice per side
def test_fragments_from_the_platforms_machine_are_imported_then_the_upgrade_is_adopted(tmp_path, cargo_target, monkeypatch):
    """The bundle route's second half: the platform's machine captured the touched experiments with the new pins
    (here: this host's runs, stamped as that machine's); --import takes only those, and then --adopt goes through."""
    import tarfile

    monkeypatch.setenv("CARGO_TARGET_DIR", str(cargo_target))
    layout = upgrade_book(tmp_path / "book")
    ident = identitymod.read(layout.fragments, "linux-x86_64-cpu")
    theirs_host = {**ident.fingerprint, "cpu": "Another CPU 9000"}
    identitymod.write(layout.fragments, replace(ident, fingerprint=theirs_host))
    for key in Store(layout.fragments).keys("linux-x86_64-cpu"):  # the committed fragments are that machine's too
        frag = Store(layout.fragments).read("linux-x86_64-cpu", key)
        Store(layout.fragments).write("linux-x86_64-cpu", key, frag.text, {**frag.meta, "host": theirs_host})
    git(layout.root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "the platform is another machine")
    report, _ = upgrade(layout, "0.2.0")
    assert not report["adoptable"] and "linux-x86_64-cpu" in report["pending"]

    folder = up.folder(layout, "tinydep-0.2.0")
    scratch = report["host"]["scratch"]
    there = tmp_path / "there"  # what run.sh packs on that machine: docs/_fragments with the platform's folder
    ours = Store(Layout(folder.new).fragments)
    for key in ours.keys(scratch):
        frag = ours.read(scratch, key)
        Store(there).write("linux-x86_64-cpu", key, frag.text, {**frag.meta, "host": theirs_host, "platform": "linux-x86_64-cpu"})
    stranger = ours.read(scratch, "tiny@cpu")  # one from yet another machine: left out
    Store(there).write("linux-x86_64-cpu", "tiny@cpu", stranger.text,
                       {**stranger.meta, "host": {**theirs_host, "cpu": "Stranger"}, "platform": "linux-x86_64-cpu"})
    identitymod.write(there, replace(ident, fingerprint=theirs_host))
    # the archive carries the whole store of the checkout it ran in: a fragment the pins do not touch is the book's
    # own (here one of an experiment the upgrade was not about, fresh with both pins), never taken as the upgrade's
    book_own = Store(layout.fragments).read("linux-x86_64-cpu", "sleeper@cpu")
    Store(there).write("linux-x86_64-cpu", "sleeper@cpu", book_own.text, {**book_own.meta, "started": "2099-01-01T00:00:00+00:00"})
    with tarfile.open(tmp_path / "fragments.tar.gz", "w:gz") as t:
        t.add(there, arcname=".")

    assert cmd.main(["--import", "tinydep-0.2.0", str(tmp_path / "fragments.tar.gz")], layout) == 0
    report = json.loads(folder.report_file.read_text(encoding="utf-8"))
    assert report["pending"]["linux-x86_64-cpu"]["keys"] == ["tiny@cpu"]  # the stranger's was not taken
    assert Store(Layout(folder.new).fragments).read("linux-x86_64-cpu", "sleeper@cpu").meta["started"] != "2099-01-01T00:00:00+00:00"
    imported = [c for c in report["comparisons"] if c["platform"] == "linux-x86_64-cpu"]
    assert imported and "imported" in imported[0]["how"] and [v["new"] for v in imported[0]["verdicts"]] == ["no"]
    assert cmd.main(["--adopt", "tinydep-0.2.0"], layout) == 1

    Store(there).write("linux-x86_64-cpu", "tiny@cpu", stranger.text,
                       {**stranger.meta, "host": theirs_host, "platform": "linux-x86_64-cpu"})
    assert cmd.main(["--import", "tinydep-0.2.0", str(there)], layout) == 0
    assert cmd.main(["--adopt", "tinydep-0.2.0"], layout) == 0
    assert "tinydep says two" in Store(layout.fragments).read("linux-x86_64-cpu", "deps@cpu").text
    assert scratch not in Store(layout.fragments).platforms()  # this host's own runs never enter the book


def test_the_gpu_run_script_is_valid_bash():
    text = up.GPU_RUN_SH.format(name="x-1", platform="linux-x86_64-nvidia-h200", commit="abc", rel=".capture/upgrade/x-1/gpu",
                                only="a b", pins="crates/Cargo.lock")
    assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
    assert 'args=(--only a b --force)' in text and "fragments.tar.gz" in text


@pytest.mark.slow  # checks a tiny crate
def test_the_gpu_feature_sets_are_type_checked_with_the_new_pins(tmp_path, cargo_target, monkeypatch):
    """Code behind a GPU feature (cfg(feature = "cuda")) is not in the CPU build: --check-gpu finds what breaks there."""
    monkeypatch.setenv("CARGO_TARGET_DIR", str(cargo_target))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no CUDA kit: candle's CUDA path is not checked
    layout = upgrade_book(tmp_path / "book")
    main = layout.root / "crates/tiny/src/main.rs"
    main.write_text(main.read_text() + '\n#[cfg(feature = "cuda")]\npub fn on_gpu() -> &\'static str { tinydep::message() }\n')
    write(layout.root / "crates/tiny/Cargo.toml", '[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n\n'
          '[dependencies]\ntinydep.workspace = true\n\n[features]\ncuda = []\nvulkan = []\n')
    subprocess.run(["cargo", "update", "--workspace", "--offline"], cwd=layout.root / "crates", check=True, capture_output=True)
    git(layout.root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "tiny has a CUDA path")
    out = io.StringIO()
    report = cmd.start(layout, [up.Bump("tinydep", "0.3.0")], CPU, bundle=False, out=out, check_gpu=True)
    g = report["gpu_check"]
    assert g["ok"] is False and "tiny" in g["failed"], out.getvalue()
    assert any(e["file"] == "crates/tiny/src/main.rs" and "message" in e["message"] for e in g["errors"])
    assert "GPU feature sets (cargo check): do not compile" in out.getvalue()
    assert any("GPU feature sets do not compile" in b for b in report["blockers"])
