"""Mermaid charts drawn to SVG at build time, in headless Chromium, with the pinned mermaid. Stdlib only.

One browser run draws every chart a build lacks: a throwaway page loads mermaid's classic build
(docs/_mermaid, capture/toolchains/assets.py) from file://, draws each (source, theme) job and writes the
results into the page, which `chromium --headless --dump-dom` prints. Each drawing is cached by
what makes it (this module's version, mermaid's version, the theme and settings, the source), in
the user's cache (~/.cache/eager-book/charts/), so a rebuild draws only charts that changed and
clones, CI and the tests share the work.

Nothing here imports Sphinx: capture/sphinxext/site/mermaid.py decides when to call it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from capture.system import regular
from capture.storage.paths import cache_home

VERSION = "1"  # bump when the drawing settings or this page change: every cached drawing is redrawn
FONTS = ('system-ui, -apple-system, "Segoe UI", "PingFang SC", "Hiragino Sans GB", "Noto Sans CJK SC", '
         '"Source Han Sans SC", "Microsoft YaHei", sans-serif')
THEMES = {
    "light": {"theme": "default"},
    # mermaid's dark edge labels (#ccc on #585858, 4.4:1) fall short of WCAG AA: a darker label box
    "dark": {"theme": "dark", "themeVariables": {"edgeLabelBackground": "#333333"}},
}
SETTINGS = {
    "startOnLoad": False,
    "fontFamily": FONTS,
    # labels as SVG text, not HTML in <foreignObject>: the drawing keeps its layout with the
    # reader's fonts, and no HTML box can clip a label measured with the build machine's fonts
    "flowchart": {"htmlLabels": False},
    "securityLevel": "strict",
}
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
MAC_CHROME = Path("/Applications/Google Chrome.app/Contents/MacOS/Google Chrome")
TIMEOUT_S = 180


class RenderError(RuntimeError):
    """The browser could not be run, or its page did not report back."""


@dataclass(frozen=True)
class Drawing:
    svg: str  # the <svg> element, its root id = the job's id
    width: float  # natural size (the viewBox), px
    height: float
    min_font_px: float  # the smallest text in it, at natural size

    def min_width(self, readable_px: float) -> float:
        """The width below which its smallest text would be under `readable_px`."""
        return self.width * min(1.0, readable_px / self.min_font_px) if self.min_font_px else self.width


def find_browser() -> str | None:
    """BOOK_CHROMIUM, else Chromium / Chrome on PATH, else Chrome on a Mac; None without one."""
    env = os.environ.get("BOOK_CHROMIUM")
    if env:
        return env if Path(env).exists() or shutil.which(env) else None
    for name in BROWSERS:
        if path := shutil.which(name):
            return path
    return str(MAC_CHROME) if MAC_CHROME.exists() else None


def cache_dir() -> Path:
    return Path(os.environ.get("BOOK_CHART_CACHE") or cache_home() / "charts")


def job_key(code: str, theme: str, mermaid_version: str) -> str:
    made_of = json.dumps([VERSION, mermaid_version, SETTINGS, THEMES[theme], code], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(made_of.encode()).hexdigest()[:20]


def cached(key: str, folder: Path | None = None) -> Drawing | None:
    path = (folder or cache_dir()) / f"{key}.json"
    try:
        return Drawing(**json.loads(regular.read_text(path)))
    except (OSError, ValueError, TypeError):
        return None  # absent or unreadable: drawn again


def store(key: str, drawing: Drawing, folder: Path | None = None) -> None:
    folder = folder or cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{key}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(asdict(drawing), ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, folder / f"{key}.json")


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><script src="{script}"></script></head>
<body><div id="stage"></div><pre id="out">pending</pre>
<script>
(async () => {{
  const jobs = {jobs};
  const settings = {settings};
  const themes = {themes};
  const stage = document.getElementById("stage");
  const results = {{}};
  for (const job of jobs) {{
    try {{
      mermaid.initialize(Object.assign({{}}, settings, themes[job.theme]));
      const drawn = await mermaid.render(job.id, job.code);
      stage.innerHTML = drawn.svg;
      const svg = stage.querySelector("svg");
      const sizes = Array.from(svg.querySelectorAll("text, foreignObject *"))
        .filter((t) => (t.textContent || "").trim())
        .map((t) => parseFloat(getComputedStyle(t).fontSize)).filter((x) => x > 0);
      const box = svg.viewBox.baseVal;
      results[job.id] = {{svg: drawn.svg, width: box.width, height: box.height,
                         min_font_px: sizes.length ? Math.min(...sizes) : 0}};
    }} catch (err) {{
      results[job.id] = {{error: String((err && err.message) || err)}};
    }}
    stage.innerHTML = "";
  }}
  const bytes = new TextEncoder().encode(JSON.stringify(results));
  let bin = "";
  for (let i = 0; i < bytes.length; i += 8192) bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 8192));
  document.getElementById("out").textContent = "BOOK-CHARTS:" + btoa(bin) + ":END";
}})();
</script></body></html>
"""
RESULT = re.compile(r"BOOK-CHARTS:([A-Za-z0-9+/=]*):END")


def render(jobs: list[dict], mermaid_js: Path, browser: str, timeout: float = TIMEOUT_S) -> dict[str, Drawing | str]:
    """Draw each job {id, theme, code}: id -> Drawing, or id -> mermaid's error message."""
    if not jobs:
        return {}
    with tempfile.TemporaryDirectory(prefix="book-charts-") as tmp:
        page = Path(tmp, "draw.html")
        page.write_text(PAGE.format(
            script=Path(mermaid_js).resolve().as_uri(),
            jobs=json.dumps(jobs, ensure_ascii=False).replace("</", "<\\/"),
            settings=json.dumps(SETTINGS), themes=json.dumps(THEMES),
        ), encoding="utf-8")
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={Path(tmp, 'profile')}", f"--virtual-time-budget={int(timeout * 1000)}",
               "--dump-dom", page.as_uri()]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise RenderError(f"{browser} could not draw the charts: {e}") from None
    found = RESULT.search(proc.stdout)
    if not found:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RenderError(f"{browser} exited {proc.returncode} without the drawings: {' / '.join(tail) or 'no output'}")
    results = json.loads(base64.b64decode(found.group(1)).decode("utf-8"))
    out: dict[str, Drawing | str] = {}
    for job in jobs:
        r = results.get(job["id"]) or {"error": "not drawn"}
        out[job["id"]] = r["error"] if "error" in r else Drawing(r["svg"], r["width"], r["height"], r["min_font_px"])
    return out
