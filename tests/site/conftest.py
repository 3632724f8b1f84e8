"""Fixtures for the site tests: one strict build per session, a local HTTP server, Chromium.

The build is the real one (`sphinx-build -W -n`, conf.py at the top, sources in docs/)
into a temporary folder; BOOK_SITE_DIR=docs/_build/html reuses a build made by
`nox -s docs` instead. Browser tests drive the system's Chromium through Playwright and
never download a browser; without Chromium they are skipped, except under CI=true, where
a missing browser is a failure so that they always run there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from site_helpers import DOCS, ROOT

GET_CHROMIUM = (
    "install Chromium and the CJK fonts (Debian/Ubuntu: apt-get install chromium fonts-noto-cjk), "
    "or point BOOK_CHROMIUM at a Chrome/Chromium binary"
)
# From docs/dev/site.md: what headless Chromium needs here (root, no GPU, no network).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def unavailable(message: str):
    """Skip, or fail under CI=true: in CI the site tests must run."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (CI=true: the site tests must run)")
    pytest.skip(message)


# The browser tests read the site the way a reader gets it from GitHub Pages: under a path of its own,
# with the 404 page for any missing address (serve below); the build is told that path (conf.py).
SITE_PATH = "/eager-book/"
SITE_URL = f"https://book.example{SITE_PATH}"


def strict_build(out: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "sphinx", "-W", "-n", "--keep-going", "-b", "html"]
    cmd += ["-c", str(ROOT), "-d", str(out.parent / "doctrees"), str(DOCS), str(out)]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "BOOK_SITE_URL": SITE_URL})


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """The built HTML site (a strict build made once per session)."""
    reuse = os.environ.get("BOOK_SITE_DIR")
    if reuse:
        return Path(reuse).resolve()
    try:
        import sphinx  # noqa: F401
    except ImportError:
        unavailable("Sphinx is not installed: install the `docs` extra and the `test` group (uv sync --extra docs --group test)")
    out = tmp_path_factory.mktemp("site") / "html"
    proc = strict_build(out)
    if proc.returncode != 0:
        pytest.fail(f"strict build failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}")
    return out


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


class PagesHandler(QuietHandler):
    """The folder served under `prefix` (like a GitHub Pages project site): a missing address under it gets
    the folder's 404.html with status 404; anything outside the prefix is a plain 404."""

    prefix = "/"

    def translate_path(self, path: str) -> str:
        if not path.startswith(self.prefix):
            return str(Path(self.directory) / ".outside-the-site" / "none")  # never exists
        return super().translate_path("/" + path[len(self.prefix):])

    def send_head(self):
        target = Path(self.translate_path(self.path.split("?", 1)[0].split("#", 1)[0]))
        page404 = Path(self.directory) / "404.html"
        if self.path.startswith(self.prefix) and not target.exists() and page404.is_file():
            body = page404.read_bytes()
            self.send_response(404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return __import__("io").BytesIO(body)
        return super().send_head()


class serve:
    """with serve(folder[, prefix]) as base_url: the folder over HTTP on 127.0.0.1 (a free port), under
    `prefix` (e.g. "/eager-book/"), with its 404.html for missing addresses."""

    def __init__(self, folder: Path, prefix: str = "/"):
        handler = type("Handler", (PagesHandler,), {"prefix": prefix})
        self.prefix = prefix
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(folder)))

    def __enter__(self) -> str:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{self.prefix}"

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="session")
def server(site):
    """Base URL of the site served over HTTP on 127.0.0.1 (a free port), under SITE_PATH as GitHub Pages
    serves a project: every browser test reads the site under a path of its own."""
    with serve(site, SITE_PATH) as base:
        yield base


FALLBACK_CHART = """\
```{mermaid}
flowchart LR
  a["调用 a.exp()"] --> b{"立即返回？"}
  b -->|是| c["算完才返回"]
```
"""


@pytest.fixture(scope="session")
def fallback_site(tmp_path_factory):
    """A small site built with book_charts = "browser" (as without Chromium): (folder, HTTP base URL).
    far.html has its chart below a long page, so mermaid must not load until the reader scrolls there."""
    import textwrap

    src = tmp_path_factory.mktemp("fallback") / "src"
    src.mkdir()
    (src / "conf.py").write_text(textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        extensions = ["myst_parser", "capture.sphinxext.site.mermaid", "capture.sphinxext.site.theme"]
        html_theme = "sphinx_book_theme"
        html_context = {{"default_mode": "auto"}}
        book_mermaid_npm_dir = {str(DOCS / "_mermaid")!r}
        book_charts = "browser"
    """), encoding="utf-8")
    (src / "index.md").write_text("# 图\n\n" + FALLBACK_CHART + "\n```{toctree}\nfar\n```\n", encoding="utf-8")
    (src / "far.md").write_text("# 远处的图\n\n" + "一段很长的文字。\n\n" * 400 + FALLBACK_CHART, encoding="utf-8")
    out = src.parent / "html"
    cmd = [sys.executable, "-m", "sphinx", "-W", "-n", "-q", "-b", "html", str(src), str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"fallback build failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    with serve(out) as base:
        yield out, base


def find_chromium() -> str | None:
    """The browser the build draws charts with (BOOK_CHROMIUM, chromium, Chrome): one rule for both."""
    from capture.sphinxext.site.render import find_browser

    return find_browser()


@pytest.fixture(scope="session")
def browser():
    exe = find_chromium()
    if exe is None:
        unavailable(f"no Chromium found: {GET_CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("Playwright for Python is missing: install the `test` group (uv sync --group test)")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class PageProbe:
    """A fresh browser page that records what went wrong: console errors, script errors,
    failed or 4xx/5xx requests, and any request that tried to leave the machine."""

    LOCAL_SCHEMES = {"file", "data", "blob", "about"}

    def __init__(self, browser, width: int = 1280, mode: str = "light"):
        self.context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=mode)
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.problems.append(f"script error: {exc}"))
        self.page.on("requestfailed", self._failed)
        self.page.on("response", self._response)
        self.context.route("**/*", self._route)

    def _console(self, msg) -> None:
        if msg.type == "error":
            self.problems.append(f"console error: {msg.text}")

    def _failed(self, req) -> None:
        # ERR_ABORTED: the next navigation cancelled a request still in flight (the favicon)
        if "ERR_ABORTED" not in (req.failure or ""):
            self.problems.append(f"request failed: {req.url} {req.failure}")

    def _response(self, resp) -> None:
        if resp.status >= 400:
            self.problems.append(f"HTTP {resp.status}: {resp.url}")

    def _route(self, route) -> None:
        url = urlsplit(route.request.url)
        if url.scheme in self.LOCAL_SCHEMES or url.hostname == "127.0.0.1":
            route.continue_()
        else:
            self.problems.append(f"external request blocked: {route.request.url}")
            route.abort()

    def goto(self, url: str) -> None:
        self.page.goto(url, wait_until="load")

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def probe(browser):
    probes: list[PageProbe] = []

    def make(width: int = 1280, mode: str = "light") -> PageProbe:
        probes.append(PageProbe(browser, width, mode))
        return probes[-1]

    yield make
    for p in probes:
        p.close()
