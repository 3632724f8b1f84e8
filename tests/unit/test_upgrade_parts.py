"""The parts of `python -m capture upgrade` that need no build: arguments, pin edits, compiler errors, the page's code."""

from __future__ import annotations

import pytest

from capture.commands import cli
from capture.commands import upgrade as cmd
from capture.running import upgrade as up


def test_bumps_are_pairs_or_joined():
    assert up.parse_bumps(["candle-core", "0.11.1", "candle-nn@0.11.1", "torch==2.16.0"]) == [
        up.Bump("candle-core", "0.11.1"), up.Bump("candle-nn", "0.11.1"), up.Bump("torch", "2.16.0")]
    assert up.upgrade_name([up.Bump("burn", "0.23.0-pre.1")]) == "burn-0.23.0-pre.1"
    for bad, why in ((["candle-core"], "name a version"), ([], "name a package"), (["a", "1", "a", "2"], "twice"),
                     (["../x", "1"], "not a package name"), (["x", "1;rm"], "not a version")):
        with pytest.raises(up.UpgradeError, match=why):
            up.parse_bumps(bad)


def test_exact_pins_change_and_nothing_else():
    toml = ('[workspace.dependencies]\nburn = { version = "=0.22.1", features = ["flex"] }\n'
            'candle-core = { version = "=0.11.0" }\ncandle-nn = { version = "=0.11.0" }\nbookrec = { path = "bookrec" }\n')
    text, n = up._exact_pin(toml, "candle-core", None, "0.11.1", "=")
    assert n == 1 and 'candle-core = { version = "=0.11.1" }' in text and 'candle-nn = { version = "=0.11.0" }' in text
    text, n = up._exact_pin(toml, "burn", None, "0.23.0-pre.1", "=")
    assert n == 1 and 'burn = { version = "=0.23.0-pre.1", features = ["flex"] }' in text
    text, n = up._exact_pin('tinydep = "=0.1.0"\n', "tinydep", None, "0.2.0", "=")
    assert (text, n) == ('tinydep = "=0.2.0"\n', 1)
    project = 'run = ["torch==2.15.0", "numpy==2.3.5"]\n'
    text, n = up._exact_pin(project, "torch", None, "2.16.0", "==")
    assert (text, n) == ('run = ["torch==2.16.0", "numpy==2.3.5"]\n', 1)
    assert up._exact_pin('candle-core = "0.11"\n', "candle-core", None, "0.11.1", "=")[1] == 0  # not an exact pin


CARGO = """\
   Compiling design-burn v0.1.0 (/work/x/crates/design-burn)
error[E0432]: unresolved import `burn::backend::Flex`
 --> design-burn/src/main.rs:12:5
  |
12 | use burn::backend::Flex;
  |     ^^^^^^^^^^^^^^^^^^^ no `Flex` in `backend`

error[E0599]: no method named `dispatch` found for struct `Device` in the current scope
  --> design-burn/src/dispatch.rs:40:17
   |
error: could not compile `design-burn` (bin "design-burn") due to 2 previous errors
error[E0308]: mismatched types
   --> /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/burn-cubecl-0.23.0-pre.1/src/ops.rs:7:9
error: could not compile `burn-cubecl` (lib) due to 1 previous error
warning: build failed, waiting for other jobs to finish...
"""


def test_compiler_errors_keep_their_place_and_package():
    errors, failed = up.parse_cargo_errors(CARGO)
    assert failed == ["design-burn", "burn-cubecl"]
    assert [(e.package, e.file, e.line, e.code) for e in errors] == [
        ("design-burn", "crates/design-burn/src/main.rs", 12, "E0432"),
        ("design-burn", "crates/design-burn/src/dispatch.rs", 40, "E0599"),
        ("burn-cubecl", "<registry>/burn-cubecl-0.23.0-pre.1/src/ops.rs", 7, "E0308"),
    ]
    assert errors[0].message == "unresolved import `burn::backend::Flex`"


def test_inline_code_holds_backticks_and_pipes():
    assert cmd.code("a `b` c") == "``a `b` c``"
    assert cmd.code("```{output} x@cpu") == "```` ```{output} x@cpu ````"
    assert cmd.tcode("a | b") == "`a \\| b`" and cmd.code("a | b") == "`a | b`"
    assert cmd.code("") == "—" and cmd.code("two\nlines") == "`two lines`"


def test_the_command_line_knows_upgrade():
    p = cli.argparse.ArgumentParser()
    cli.upgrade_arguments(p)
    args = p.parse_args(["candle-core", "0.11.1", "--no-bundle", "--check-gpu", "--only", "candle-errors"])
    assert args.spec == ["candle-core", "0.11.1"] and args.no_bundle and args.check_gpu and args.only == ["candle-errors"]
    args = p.parse_args(["--import", "candle-core-0.11.1", "fragments.tar.gz", "--note", "why"])
    assert args.import_ == ["candle-core-0.11.1", "fragments.tar.gz"] and args.note == "why"


def test_a_report_without_a_worktree_says_why_it_cannot_be_adopted():
    report = {"name": "x-1", "bumps": [{"package": "x", "version": "1", "old": "0", "kind": "cargo"}], "base": "abc",
              "worktree": ".capture/upgrade/x-1/new", "pin_error": "cargo update -p x --precise 1 failed:\nno such version",
              "blockers": ["the pins could not be changed"], "adoptable": False}
    page = cmd.render_page(report)
    assert page.startswith("# 升级：x 0 → 1") and "不采纳" in page and "no such version" in page
    assert "the pins could not be changed" in cmd.summary(report)


def test_pre_releases_are_reported_never_adopted():
    assert cmd.prerelease("0.23.0-pre.1") and cmd.prerelease("2.16.0rc1") and cmd.prerelease("1.0.0a2")
    assert not cmd.prerelease("0.11.1") and not cmd.prerelease("2.15.0+cu130")
    report = {"bumps": [{"package": "burn", "version": "0.23.0-pre.1"}], "build": {"ok": True}, "comparisons": [],
              "targets": {}}
    assert cmd.blockers(report) == ["burn 0.23.0-pre.1 is a pre-release: the book reports on it and does not adopt it"]


def test_experiments_on_a_framework_the_upgrade_left_alone_are_its_controls():
    class Exp:
        def __init__(self, framework):
            self.framework = framework

    class Manifest:
        def get(self, exp):
            return Exp({"candle-x": "candle", "burn-y": "burn"}[exp])

    result = {"fragments": {"candle-x@cpu": {}, "burn-y@cpu": {}},
              "figures": [{"key": "candle-x@cpu", "beyond": True}, {"key": "burn-y@cpu", "beyond": True}],
              "outputs": [{"key": "burn-y@cpu"}],
              "verdicts": [{"expr": "median(burn-y@cpu:t) < 1"}, {"expr": "candle-x@cpu:t < burn-y@cpu:t"}],
              "numbers": [{"role": "num", "text": "median(burn-y@cpu:t) | ratio"}, {"role": "meta", "text": "candle-x@cpu:device"}]}
    assert cmd.framework_of("candle-core") == "candle" and cmd.framework_of("cubecl") == "burn"
    assert cmd.framework_of("torch") == "torch" and cmd.framework_of("tinydep") == ""
    cmd.mark_controls(result, Manifest(), {"candle"})
    assert [f["control"] for f in result["figures"]] == [False, True] and result["outputs"][0]["control"]
    assert [v["control"] for v in result["verdicts"]] == [True, False]
    assert [n["control"] for n in result["numbers"]] == [True, False]
    assert result["controls"] == ["burn-y@cpu"]
