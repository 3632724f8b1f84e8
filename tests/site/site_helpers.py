"""Helpers shared by the site tests (a plain module: test files import it by name)."""

from __future__ import annotations

import html
import re
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def html_pages(site: Path) -> list[Path]:
    """Every page of the site (not the copied sources or static files)."""
    skip = {"_static", "_sources", "_images", "_downloads"}
    return sorted(p for p in site.rglob("*.html") if not skip & set(p.relative_to(site).parts))


MERMAID_PRE = re.compile(r'<pre [^>]*class="mermaid[^"]*"[^>]*>(.*?)</pre>', re.S)
BUILT_CHART = re.compile(r'<div class="book-chart[ "][^>]*>(.*?)</div><p class="book-chart-tools', re.S)
SVG = re.compile(r"<svg\b.*?</svg>", re.S)


def mermaid_sources(page: Path) -> list[str]:
    """The mermaid source of each chart left to the browser on a built page, in page order."""
    return [html.unescape(m) for m in MERMAID_PRE.findall(page.read_text(encoding="utf-8"))]


def built_charts(page: Path) -> list[list[str]]:
    """Each chart drawn at build time on a page, in page order: its SVGs (light, dark)."""
    return [SVG.findall(m) for m in BUILT_CHART.findall(page.read_text(encoding="utf-8"))]


def svg_text(svg: str) -> str:
    """The text an SVG shows (its <style> left out)."""
    body = re.sub(r"<style\b.*?</style>", "", svg, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


def chart_sources(site: Path) -> dict[str, list[str]]:
    """page (e.g. "eager.html") -> the mermaid source of each chart it has, in page order, from the
    build's environment (capture/sphinxext/site/mermaid.py keeps them there)."""
    import pickle

    for doctrees in (site.parent / "doctrees", site / ".doctrees"):
        env_file = doctrees / "environment.pickle"
        if env_file.is_file():
            with open(env_file, "rb") as fh:
                env = pickle.load(fh)
            return {f"{doc}.html": [code for code, _line in charts] for doc, charts in env.book_charts.items()}
    raise FileNotFoundError(f"no environment.pickle next to {site}: build with -d <site>/../doctrees")


class ParsedPage(HTMLParser):
    """The ids a page defines and the URLs it refers to, as (tag, attribute, url)."""

    URL_ATTRS = {"href", "src", "data", "poster", "action"}

    def __init__(self, path: Path):
        super().__init__(convert_charrefs=True)
        self.path = path
        self.ids: set[str] = set()
        self.urls: list[tuple[str, str, str]] = []
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name") and (name == "id" or tag == "a"):
                self.ids.add(value)
            elif name in self.URL_ATTRS:
                self.urls.append((tag, name, value))
            elif name == "srcset":
                self.urls += [(tag, name, part.split()[0]) for part in value.split(",") if part.strip()]


EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.I)  # http://, https://, //host


def is_external(url: str) -> bool:
    return bool(EXTERNAL.match(url.strip()))


def build(src: Path, out: Path, extensions: list[str], conf: str = "", pages: dict[str, str] | None = None, *,
          builder: str = "html"):
    """Write a throwaway project (conf.py + pages) and build it strictly; return (returncode, log)."""
    src.mkdir(parents=True, exist_ok=True)
    head = f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nextensions = {['myst_parser', *extensions]!r}\n"
    (src / "conf.py").write_text(head + textwrap.dedent(conf), encoding="utf-8")
    for name, text in (pages or {}).items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(textwrap.dedent(text), encoding="utf-8")
    cmd = [sys.executable, "-m", "sphinx", "-W", "-n", "--keep-going", "-b", builder, str(src), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr
