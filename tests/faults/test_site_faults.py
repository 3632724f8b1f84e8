"""Bad input on a page, one row per directive: a located, typed warning (page:line, [capture.snippet]...),
never an exception; the build goes on, the fragment store is untouched, and `_code/` holds exactly the
files the page shows. One real strict Sphinx build of a throwaway book serves every row.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from capture.storage.paths import Layout
from tests.faults.faultbook import PLAT, REPO, snapshot, write

CONF = f'''
import sys
sys.path.insert(0, {str(REPO)!r})
extensions = ["myst_parser", "sphinx_design", "sphinxcontrib.mermaid", "capture.sphinxext", "capture.sphinxext.site.volumes"]
myst_enable_extensions = ["colon_fence"]
book_root = {{root!r}}
book_platforms = ["{PLAT}"]
book_volumes = {{{{"burn": {{{{"title": "burn 卷", "url": "", "inventory": "none.inv"}}}}}}}}
show_warning_types = True
nitpicky = True
{{extra}}
'''

# (id, directive, expected warning text, its [type.subtype])
ROWS = [
    ("dotdot", "```{snippet} snippets/../../../../etc/passwd\n```", "snippet path 'snippets/../../../../etc/passwd' has '..'", "capture.snippet"),
    ("absolute", "```{snippet} /etc/passwd\n```", "snippet path '/etc/passwd' is absolute", "capture.snippet"),
    ("outside-roots", "```{snippet} docs/index.md\n```", "only files under snippets/ or crates/ can be shown", "capture.snippet"),
    ("symlink-out", "```{snippet} snippets/link.py\n```", "(through a symlink)", "capture.snippet"),
    ("symlink-in-repo", "```{snippet} snippets/conf-link.py\n```", "only files inside", "capture.snippet"),
    ("root-escape-crates", "```{snippet} crates/../snippets/say.py\n```", "has '..'", "capture.snippet"),
    ("emphasize-letters", "```{snippet} snippets/say.py#say\n:emphasize-lines: a,b\n```", ":emphasize-lines: 'a' is not a line number or a range", "capture.snippet"),
    ("emphasize-outside", "```{snippet} snippets/say.py#say\n:emphasize-lines: 9\n```", ":emphasize-lines: '9' is outside the 3 lines shown", "capture.snippet"),
    ("emphasize-reversed", "```{snippet} snippets/say.py#say\n:emphasize-lines: 3-1\n```", ":emphasize-lines: '3-1' is outside", "capture.snippet"),
    ("emphasize-empty", "```{snippet} snippets/say.py#say\n:emphasize-lines:\n```", ":emphasize-lines: '' is not a line number", "capture.snippet"),
    ("region-missing", "```{snippet} snippets/say.py#nope\n```", "no region 'nope' (regions in this file: say)", "capture.snippet"),
    ("region-unclosed", "```{snippet} snippets/open.py#x\n```", "region 'x' opened at line 1 is never closed", "capture.snippet"),
    ("file-missing", "```{snippet} snippets/missing.py\n```", "snippet file snippets/missing.py not found", "capture.snippet"),
    ("not-utf8", "```{snippet} snippets/binary.py\n```", "not UTF-8 (byte offset 6)", "capture.snippet"),
    ("vol-syntax", "见 {vol}`nope`。", "{vol} expects `volume:label` with volume one of burn; got 'nope'", "vol.syntax"),
    ("output-corrupt", "```{output} victim@cpu\n```", f"{PLAT}/victim@cpu.json: invalid JSON", "capture.corrupt"),
]
GOOD = "```{snippet} snippets/say.py#say\n:emphasize-lines: 1, 3\n```"


def page() -> tuple[str, dict[str, int]]:
    lines, where = ["# 坏输入", "", "(bad-top)=", "## 节", ""], {}
    for rid, directive, _, _ in ROWS:
        where[rid] = len(lines) + 1
        lines += directive.splitlines() + [""]
    where["good"] = len(lines) + 1
    lines += GOOD.splitlines() + [""]
    return "\n".join(lines), where


def build(root, out, extra=""):
    write(root / "conf.py", CONF.format(root=str(root), extra=extra))
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-n", "--keep-going", "-q", "-b", "html", "-c", str(root),
                        str(root / "docs"), str(out)], capture_output=True, text=True, timeout=300)
    return r.returncode, r.stderr


@pytest.fixture(scope="module")
def site(fault_template, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("site-faults")
    root = tmp / "book"
    shutil.copytree(fault_template.root, root, symlinks=True)
    layout = Layout(root)
    write(tmp / "outside.py", "secret = 1\n")
    (root / "snippets/link.py").symlink_to(tmp / "outside.py")
    write(root / "docs/conf-target.py", "x = 1\n")
    (root / "snippets/conf-link.py").symlink_to(root / "docs/conf-target.py")
    write(root / "snippets/open.py", "# ANCHOR: x\nx = 1\n")
    write(root / "snippets/binary.py", b"x = 1\n\xff\n")
    frag = layout.fragments / PLAT / "victim@cpu.json"
    frag.write_bytes(frag.read_bytes()[:40])
    text, where = page()
    write(root / "docs/index.md", text)
    before = snapshot(layout)
    code, err = build(root, tmp / "html")
    suppressed = build(root, tmp / "html-suppressed", 'suppress_warnings = ["capture.snippet", "vol.syntax"]')
    return {"code": code, "err": err, "out": tmp / "html", "where": where, "before": before, "layout": layout,
            "suppressed": suppressed}


@pytest.mark.parametrize("rid, directive, message, wtype", ROWS, ids=[r[0] for r in ROWS])
def test_bad_directive_is_a_located_typed_warning(site, rid, directive, message, wtype):
    line = site["where"][rid]
    hits = [l for l in site["err"].splitlines() if f"index.md:{line}: WARNING:" in l]
    assert hits, f"no warning at index.md:{line}:\n{site['err']}"
    assert any(message in l and l.rstrip().endswith(f"[{wtype}]") for l in hits), hits


def test_build_goes_on_and_touches_nothing(site):
    assert site["code"] != 0  # -W: the warnings fail the build...
    assert "Traceback" not in site["err"] and "Exception occurred" not in site["err"], site["err"]
    html = (site["out"] / "index.html").read_text()  # ...but every page was written
    assert "secret = 1" not in html and "root:" not in html
    assert f"index.md:{site['where']['good']}:" not in site["err"]  # the good snippet is fine
    assert snapshot(site["layout"]) == site["before"]


def test_code_folder_holds_exactly_the_files_pages_show(site):
    code = site["out"] / "_code"
    assert sorted(p.relative_to(code).as_posix() for p in code.rglob("*") if p.is_file()) == ["snippets/say.py.txt"]


def test_warning_types_can_be_suppressed(site):
    code, err = site["suppressed"]
    assert "[capture.snippet]" not in err and "[vol.syntax]" not in err
    assert "[capture.corrupt]" in err  # other types still reported


OWN = ("snippet", "provenance", "coderule", "site/anchors", "site/volumes", "site/zh_text", "site/rust_api", "site/mermaid")


@pytest.mark.parametrize("module", OWN)
def test_every_warning_is_typed_and_located(module):
    """Every logger.warning in these modules names a type, a subtype (so it can be suppressed) and a location."""
    import ast

    tree = ast.parse((REPO / "capture/sphinxext" / f"{module}.py").read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "warning"]
    for call in calls:
        assert {"type", "subtype", "location"} <= {k.arg for k in call.keywords}, f"{module}.py:{call.lineno}"
    assert "reporter.warning" not in (REPO / "capture/sphinxext" / f"{module}.py").read_text()
