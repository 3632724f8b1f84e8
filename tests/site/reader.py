"""What a reader gets from a built page, measured in a real browser (Playwright + system Chromium).

Used by the browser tests (tests/site/test_reader.py) and, as a script, to print the figures of a
build (before/after comparisons, the issue's budgets):

    python tests/site/reader.py docs/_build/html [--pages eager.html design.html] [--json] [--drafts DIR]

Every measure is one small function over a Playwright page, so a test can call it and say what
failed. The JavaScript is kept here, next to the Python that reads its answer.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AXE_NPM_DIR = Path(__file__).resolve().parent / "axe"
AXE_DIST = Path("node_modules", "axe-core", "axe.min.js")
WIDTHS = (390, 1280)
READER_PAGES = ("index.html", "eager.html", "design.html", "appendix/ran-where.html", "appendix/glossary.html", "404.html")
MIN_CHART_TEXT_PX = 11.0
# Each chapter's draft (the author's, in ../shared/seeds/ beside the repository: CI puts a copy of shared/ there):
# the text a reader sees at 1280 px is compared with the draft's non-space characters (issue 28: at most 1.8x).
DRAFTS = {"eager.html": "000_*", "design.html": "004_*"}
# What the browser shows; a chart's text smaller than MIN_CHART_TEXT_PX at these widths is unreadable on a phone.

# -- page weight and speed ---------------------------------------------------------------------

WEIGHT_JS = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource');
  const files = res.map((r) => ({url: r.name, bytes: r.transferSize}));
  return {dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd,
          bytes: nav.transferSize + res.reduce((s, r) => s + r.transferSize, 0), files};
}"""


def weight(browser, url: str, runs: int = 3) -> dict:
    """Bytes transferred by a cold load (no cache) and DOMContentLoaded in ms: min and median of `runs`."""
    loads = []
    for _ in range(runs):
        ctx = browser.new_context(viewport={"width": 1280, "height": 900})
        page = ctx.new_page()
        page.goto(url, wait_until="load")
        page.wait_for_timeout(300)  # late requests (deferred scripts' own loads) are counted too
        loads.append(page.evaluate(WEIGHT_JS))
        ctx.close()
    dcl = [x["dcl"] for x in loads]
    biggest = sorted(loads[-1]["files"], key=lambda f: -f["bytes"])[:5]
    return {"bytes": max(x["bytes"] for x in loads), "dcl_min_ms": min(dcl), "dcl_median_ms": statistics.median(dcl),
            "biggest": biggest}


# -- layout: everything visible, then measured -----------------------------------------------------

SHOW_ALL_JS = """() => {
  document.querySelectorAll('details').forEach((d) => { d.open = true; });
  const s = document.createElement('style');
  s.textContent = '.sd-tab-content { display: block !important; }';
  document.head.appendChild(s);
  window.dispatchEvent(new Event('resize'));
}"""

CHART_TEXT_JS = """() => {
  // Rendered size of every piece of chart text: its font size times the SVG's scale on screen.
  const out = [];
  document.querySelectorAll('.bd-article svg').forEach((svg, i) => {
    if (!svg.closest('.mermaid, .book-chart')) return;
    if (svg.getClientRects().length === 0) return;
    svg.querySelectorAll('text, foreignObject').forEach((el) => {
      const txt = (el.textContent || '').trim();
      if (!txt) return;
      const ctm = el.getScreenCTM();
      if (!ctm) return;
      const scale = Math.hypot(ctm.a, ctm.b);
      let sizeEl = el;
      if (el.tagName.toLowerCase() === 'foreignobject') {
        sizeEl = Array.from(el.querySelectorAll('*')).find((e) => (e.textContent || '').trim()) || el;
      }
      const px = parseFloat(getComputedStyle(sizeEl).fontSize) * scale;
      out.push({chart: i, text: txt.slice(0, 40), px});
    });
  });
  return out;
}"""

OVERFLOW_JS = """() => {
  // Blocks of the article wider than their box. Scrolling is fine when the reader is told: the
  // block carries data-book-overflow="true" and is described (aria-describedby) by a visible hint.
  const found = [];
  const root = document.querySelector('.bd-article') || document.body;
  root.querySelectorAll('*').forEach((el) => {
    if (el.scrollWidth <= el.clientWidth + 1 || el.clientWidth === 0) return;
    const ox = getComputedStyle(el).overflowX;
    if (ox === 'visible' || ox === 'clip') return;  // a child that overflows is reported where it scrolls
    if (ox === 'hidden') { found.push({what: describe(el), why: 'cut off (overflow hidden)'}); return; }
    const host = el.closest('[data-book-overflow]');
    const hint = host && document.getElementById(host.getAttribute('aria-describedby') || '');
    const hinted = host && host.getAttribute('data-book-overflow') === 'true' && hint &&
      hint.classList.contains('book-overflow-hint') && hint.getClientRects().length > 0 && hint.textContent.trim();
    if (!hinted) found.push({what: describe(el), why: `scrolls ${el.scrollWidth}px in ${el.clientWidth}px without a hint`});
  });
  const page = document.documentElement;
  if (page.scrollWidth > window.innerWidth + 1)
    found.push({what: 'page', why: `page is ${page.scrollWidth}px wide in a ${window.innerWidth}px window`});
  function describe(el) {
    const cls = typeof el.className === 'string' ? el.className.split(' ').slice(0, 3).join('.') : '';
    const text = (el.textContent || '').trim().slice(0, 40);
    return `${el.tagName.toLowerCase()}${cls ? '.' + cls : ''} «${text}»`;
  }
  return found;
}"""

STICKY_JS = """() => {
  // Tables that scroll keep their first column in view.
  const bad = [];
  let checked = 0;
  document.querySelectorAll('.bd-article [data-book-overflow="true"] table').forEach((t) => {
    checked += 1;
    const box = t.closest('[data-book-overflow]');
    const scroller = box.scrollWidth > box.clientWidth ? box : t.parentElement;
    const cell = t.querySelector('tbody tr > :first-child');
    if (!cell) return;
    const before = cell.getBoundingClientRect().left;
    scroller.scrollLeft = scroller.scrollWidth;
    const after = cell.getBoundingClientRect().left;
    scroller.scrollLeft = 0;
    if (Math.abs(after - before) > 1)
      bad.push(`${(t.textContent || '').trim().slice(0, 40)}: first column moved ${Math.round(before - after)}px`);
  });
  return {checked, bad};
}"""

SPLIT_JS = """() => {
  // A number and its unit on two lines: «15.5 / ms». Checked in the article's text.
  const unit = /(\\d)([\\s\\u00a0\\u202f]?)(ns|µs|us|ms|s|B|KiB|MiB|GiB|倍|%)(?![A-Za-z])/g;
  const split = [];
  let checked = 0;
  const root = document.querySelector('.bd-article') || document.body;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement.closest('pre, code, svg, script, style, .mermaid')) continue;
    if (n.parentElement.getClientRects().length === 0) continue;
    let m;
    while ((m = unit.exec(n.data))) {
      const r = document.createRange();
      r.setStart(n, m.index);
      r.setEnd(n, m.index + m[0].length);
      const tops = new Set(Array.from(r.getClientRects()).filter((q) => q.width > 0).map((q) => Math.round(q.bottom)));
      checked += 1;
      if (tops.size > 1) split.push(n.data.slice(Math.max(0, m.index - 10), m.index + m[0].length + 2));
    }
  }
  return {checked, split};
}"""


CODE_WORDS_JS = """() => {
  // Inline code split inside a word («chai/n8»): a run of letters and digits of a code token on two lines,
  // though it would fit on one. Splits between the parts of a long token (after . / _ :, CamelCase) are fine.
  const split = [];
  let checked = 0;
  document.querySelectorAll('.bd-article code.literal span.pre').forEach((span) => {
    if (!span.checkVisibility()) return;
    const line = (span.closest('td, th, p, li, dd, div') || span.parentElement).clientWidth;
    span.childNodes.forEach((n) => {
      if (n.nodeType !== Node.TEXT_NODE) return;
      for (const m of n.data.matchAll(/[A-Za-z0-9]{2,}/g)) {
        const r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        const rects = Array.from(r.getClientRects()).filter((q) => q.width > 0);
        const width = rects.reduce((w, q) => w + q.width, 0);
        checked += 1;
        if (new Set(rects.map((q) => Math.round(q.top))).size > 1 && width < line)
          split.push(`${span.textContent} (${m[0]})`);
      }
    });
  });
  return {checked, split};
}"""

SCROLL_HINTS_JS = """() => {
  // Every table or chart wider than its box: a visible hint right above it; a table's hint names the columns
  // that start out of sight on the right.
  const bad = [];
  let wide = 0;
  document.querySelectorAll('.bd-article .pst-scrollable-table-container, .bd-article .book-chart-scroll').forEach((el) => {
    if (!el.checkVisibility() || el.scrollWidth <= el.clientWidth + 1) return;
    wide += 1;
    const hint = document.getElementById(el.getAttribute('aria-describedby') || '');
    const name = ((el.querySelector('caption') || {}).textContent || el.className).trim().slice(0, 40);
    if (!hint || !hint.checkVisibility() || !hint.textContent.trim()) { bad.push(`${name}: no visible hint`); return; }
    if (hint.getBoundingClientRect().bottom > el.getBoundingClientRect().top + 1) bad.push(`${name}: the hint is not above it`);
    const table = el.querySelector('table');
    if (!table) return;
    const head = table.querySelector('thead tr') || table.querySelector('tr');
    const right = el.getBoundingClientRect().right;
    const hidden = Array.from(head.children).filter((c) => c.getBoundingClientRect().right > right + 1)
      .map((c) => c.textContent.trim()).filter((t) => t);
    const missing = hidden.slice(0, 4).filter((t) => !hint.textContent.includes(t));
    if (missing.length) bad.push(`${name}: hint «${hint.textContent}» does not name ${missing.join(', ')}`);
  });
  return {wide, bad};
}"""

POINTED_JS = """() => {
  // A sentence that points at the table or chart below (下表, 下图) while that table or chart is not visible
  // (folded in a closed <details>): the reader cannot see what the text shows them.
  const words = [[/下表|下面的表|下面这张表|下列表/, 'table'], [/下图|下面的图|下面这张图/, '.book-chart, .mermaid']];
  const bad = [];
  let checked = 0;
  const all = Array.from(document.querySelectorAll('.bd-article table, .bd-article .book-chart, .bd-article .mermaid'));
  document.querySelectorAll('.bd-article p').forEach((p) => {
    if (!p.checkVisibility() || p.closest('table, .book-chart')) return;
    for (const [re, sel] of words) {
      if (!re.test(p.textContent)) continue;
      const next = all.find((el) => el.matches(sel) && (p.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING));
      if (!next) continue;
      checked += 1;
      const folded = next.closest('details:not([open])');
      const tabs = next.closest('.sd-tab-set');
      const seen = next.checkVisibility() || (!folded && tabs && tabs.checkVisibility());
      if (!seen) bad.push(`«${p.textContent.trim().slice(0, 40)}» points at a folded ${sel.split(',')[0]}`);
    }
  });
  return {checked, bad};
}"""


def phone(browser, url: str, width: int = 390) -> dict:
    """As loaded at this width: inline code split inside a word, pointed-at tables and charts that are folded; then,
    every tab and <details> shown, the hints of wide tables and charts."""
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    page = ctx.new_page()
    page.goto(url, wait_until="load")
    charts_ready(page)
    page.wait_for_timeout(200)
    out = {"code": page.evaluate(CODE_WORDS_JS), "pointed": page.evaluate(POINTED_JS)}
    page.evaluate(SHOW_ALL_JS)
    page.wait_for_timeout(300)
    out["hints"] = page.evaluate(SCROLL_HINTS_JS)
    ctx.close()
    return out


def layout(browser, url: str, width: int, dark: bool = False) -> dict:
    """Smallest chart text, unhinted overflow, scrolling tables' first column, number/unit splits at this width."""
    ctx = browser.new_context(viewport={"width": width, "height": 900}, color_scheme="dark" if dark else "light")
    page = ctx.new_page()
    page.goto(url, wait_until="load")
    charts_ready(page)
    page.evaluate(SHOW_ALL_JS)
    charts_ready(page)
    page.wait_for_timeout(200)
    texts = page.evaluate(CHART_TEXT_JS)
    out = {
        "chart_text_min_px": min((t["px"] for t in texts), default=None),
        "chart_text_small": [t for t in texts if t["px"] < MIN_CHART_TEXT_PX][:10],
        "charts_measured": len({t["chart"] for t in texts}),
        "overflow": page.evaluate(OVERFLOW_JS),
        "sticky": page.evaluate(STICKY_JS),
        "split": page.evaluate(SPLIT_JS),
    }
    ctx.close()
    return out


def charts_ready(page, timeout_ms: int = 20_000) -> None:
    """Wait until every chart of the page is an SVG (built-in SVG, or drawn by the fallback script)."""
    try:
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('pre.mermaid')).every("
            "  (el) => el.getClientRects().length === 0 || el.querySelector('svg'))",
            timeout=timeout_ms,
        )
    except Exception:  # noqa: BLE001 - playwright's TimeoutError; the measures say what is missing
        pass


# -- reading: page height, tabs, Latin words, hidden columns, search (issue 22) -------------------

HEIGHT_JS = "() => document.documentElement.scrollHeight"

TABS_JS = """() => {
  // How deep tab sets nest in the article (1: one row of tabs; 2: tabs inside a tab).
  let depth = 0, sets = 0, nested = 0;
  document.querySelectorAll('.bd-article .sd-tab-set').forEach((t) => {
    sets += 1;
    let d = 1;
    for (let p = t.parentElement; p; p = p.parentElement) if (p.classList.contains('sd-tab-set')) d += 1;
    depth = Math.max(depth, d);
    if (d > 1) nested += 1;
  });
  return {depth, sets, nested};
}"""

HIDDEN_COLUMNS_JS = """() => {
  // Columns of a table that start out of sight (right of its box): the reader must scroll to find them.
  const hidden = [];
  let tables = 0;
  document.querySelectorAll('.bd-article table').forEach((t) => {
    if (t.getClientRects().length === 0) return;
    tables += 1;
    const box = t.closest('.pst-scrollable-table-container, [data-book-overflow]') || t.parentElement;
    const right = box.getBoundingClientRect().right;
    const head = t.querySelector('thead tr') || t.querySelector('tr');
    const name = ((t.querySelector('caption') || {}).textContent || t.textContent || '').trim().slice(0, 40);
    Array.from(head ? head.children : []).forEach((c) => {
      if (c.getBoundingClientRect().right > right + 1) hidden.push(`${name}: ${c.textContent.trim()}`);
    });
  });
  return {tables, hidden};
}"""

READER_TEXT_JS = """() => {
  // What a reader reads: the article, the footer, the page title, the book's table of contents
  // (not the generated API entries), and every tooltip and image text there; code and drawings left out.
  const skip = 'pre, code, kbd, samp, svg, script, style, .mermaid, .highlight, [lang]:not(html)';
  const scopes = Array.from(document.querySelectorAll('.bd-article, .bd-footer-article, footer.bd-footer, .bd-footer-content, .bd-sidebar-primary .bd-links'));
  const apiEntry = (el) => el.closest('li') && el.closest('li').querySelector(':scope > a[href*="api/"]');
  const out = [['title', document.title]];
  for (const root of scopes) {
    const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = w.nextNode(); n; n = w.nextNode()) {
      const el = n.parentElement;
      if (el.closest(skip) || apiEntry(el) || !n.data.trim()) continue;
      out.push(['text', n.data]);
    }
    root.querySelectorAll('[title], [alt], [placeholder], [data-tooltip]').forEach((el) => {
      if (el.closest('svg, script, style') || apiEntry(el)) return;
      for (const a of ['title', 'alt', 'placeholder', 'data-tooltip']) if (el.getAttribute(a)) out.push([a, el.getAttribute(a)]);
    });
  }
  return out;
}"""

LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_.+/'][A-Za-z0-9]+)*")


def allowed_latin() -> tuple[set[str], list[re.Pattern]]:
    """What a reader page may write in Latin script (docs/terms.toml): the names of [latin], the English of
    every term (the glossary's second column: 延迟执行 may be glossed as lazy execution), and the patterns."""
    data = tomllib.loads((ROOT / "docs" / "terms.toml").read_text(encoding="utf-8"))
    names = set(data.get("latin", {}).get("names", []))
    for term in data.get("term", []):
        names |= set(LATIN_WORD.findall(term.get("en", "")))
    return names, [re.compile(p) for p in data.get("latin", {}).get("patterns", [])]


def latin_words(texts: list[list[str]]) -> list[tuple[str, str, str]]:
    """(word, where, context) for each Latin-script word outside the allow-list. A word joined by / (GNU/Linux,
    CUDA/CPU) is allowed when each part is; a single letter is a variable (m·n·k) and allowed."""
    names, patterns = allowed_latin()

    def ok(w: str) -> bool:
        return len(w) == 1 or w in names or any(p.fullmatch(w) for p in patterns)

    found = []
    for kind, text in texts:
        for m in LATIN_WORD.finditer(text):
            w = m.group(0)
            if ok(w) or ("/" in w and all(ok(part) for part in w.split("/") if part)):
                continue
            found.append((w, kind, text[max(0, m.start() - 30): m.end() + 30].strip()))
    return found


TEXT_SEEN_JS = """() => {
  // The article's text as a reader finds it: what Chromium shows as loaded (a closed <details>, an unselected
  // tab, anything display:none or invisible left out), code, outputs and chart text included; non-space characters.
  const root = document.querySelector('.bd-article') || document.body;
  const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  let chars = 0;
  for (let n = w.nextNode(); n; n = w.nextNode()) {
    const el = n.parentElement;
    if (el.closest('script, style')) continue;
    if (!el.checkVisibility({contentVisibilityAuto: true, visibilityProperty: true, opacityProperty: true})) continue;
    chars += n.data.replace(/\\s+/g, '').length;
  }
  return chars;
}"""


def drafts_dir() -> Path:
    """Where the drafts are: $BOOK_DRAFTS, else ../shared/seeds beside the repository."""
    return Path(os.environ.get("BOOK_DRAFTS") or ROOT.parent / "shared" / "seeds")


def draft_chars(page: str, folder: Path | None = None) -> int | None:
    """Non-space characters of the page's draft, or None (no draft for this page, or none found)."""
    pattern = DRAFTS.get(page)
    folder = folder or drafts_dir()
    found = sorted(folder.glob(pattern)) if pattern and folder.is_dir() else []
    if not found:
        return None
    return len("".join(found[0].read_text(encoding="utf-8").split()))


def reading(browser, url: str) -> dict:
    """At 390 px: the page's height as loaded, tab nesting, Latin words; at 1280 px: the text a reader sees as
    loaded (non-space characters), then hidden table columns."""
    ctx = browser.new_context(viewport={"width": 390, "height": 900})
    page = ctx.new_page()
    page.goto(url, wait_until="load")
    charts_ready(page)
    page.wait_for_timeout(200)
    out = {"height_390": page.evaluate(HEIGHT_JS), "tabs": page.evaluate(TABS_JS),
           "latin": latin_words(page.evaluate(READER_TEXT_JS))}
    ctx.close()
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    page.goto(url, wait_until="load")
    charts_ready(page)
    page.wait_for_timeout(200)
    out["text_1280"] = page.evaluate(TEXT_SEEN_JS)
    page.evaluate(SHOW_ALL_JS)
    page.wait_for_timeout(200)
    out["columns_1280"] = page.evaluate(HIDDEN_COLUMNS_JS)
    ctx.close()
    return out


def search_hits(browser, base: str, query: str, timeout_ms: int = 10_000) -> list[str]:
    """The pages the site's search lists for a query, in order (paths relative to the site, no anchors)."""
    from urllib.parse import quote, unquote, urlsplit

    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    page.goto(f"{base}search.html?q={quote(query)}", wait_until="load")
    page.wait_for_function("() => (document.querySelector('#search-results .search-summary') || {}).innerText",
                           timeout=timeout_ms)
    hrefs = page.eval_on_selector_all("#search-results ul.search li > a", "els => els.map((a) => a.href)")
    ctx.close()
    root = unquote(urlsplit(base).path)
    return [unquote(urlsplit(h).path)[len(root):] for h in hrefs]


def search_queries() -> list[tuple[str, str]]:
    """(query, the page it must find first): every term of docs/terms.toml, found first where it is
    introduced (its `at` label, looked up in docs/anchors.txt), and the extra queries listed there."""
    data = tomllib.loads((ROOT / "docs" / "terms.toml").read_text(encoding="utf-8"))
    pages = {}
    for line in (ROOT / "docs" / "anchors.txt").read_text(encoding="utf-8").splitlines():
        if "#" in line and not line.startswith("#"):
            page, label = line.strip().split("#", 1)
            pages[label] = page + ".html"
    out = [(t["zh"], pages[t["at"]]) for t in data.get("term", []) if t.get("at") in pages]
    out += [(q["query"], q["first"]) for q in data.get("query", [])]
    return out


def search(browser, base: str, queries=None) -> list[dict]:
    """Each query with its first hit and whether it is the expected page."""
    out = []
    for query, want in queries if queries is not None else search_queries():
        hits = search_hits(browser, base, query)
        out.append({"query": query, "want": want, "first": hits[0] if hits else None, "hits": hits[:4],
                    "ok": bool(hits) and hits[0] == want})
    return out


# -- accessibility (axe-core, pinned in tests/site/axe/) -----------------------------------------

AXE_RUN_JS = """async () => {
  const r = await axe.run(document, {resultTypes: ['violations']});
  return r.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length,
                                   targets: v.nodes.slice(0, 4).map((n) => n.target.join(' ') + ' :: ' + (n.failureSummary || '').split('\\n').slice(1, 2).join(''))}));
}"""


def axe_path() -> Path:
    from capture.toolchains import assets

    return assets.ensure_npm(AXE_NPM_DIR, "axe-core", AXE_DIST, log=lambda _m: None)


# Resolves when every finite CSS transition and animation on the page has finished (at most 5 s); a style
# read first, so that a theme switched just before has started its transitions.
SETTLED_JS = """async () => {
  void document.body.offsetHeight;
  const finite = document.getAnimations().filter((a) => a.effect && a.effect.getComputedTiming().endTime !== Infinity);
  await Promise.race([Promise.all(finite.map((a) => a.finished.catch(() => null))),
                      new Promise((done) => setTimeout(done, 5000))]);
}"""


def axe(browser, url: str, dark: bool, width: int = 1280) -> list[dict]:
    """axe-core's violations on the page as a reader sees it (light or dark), every details opened."""
    ctx = browser.new_context(viewport={"width": width, "height": 900}, color_scheme="dark" if dark else "light")
    page = ctx.new_page()
    page.goto(url, wait_until="load")
    mode = "dark" if dark else "light"
    page.evaluate(f"() => {{ document.documentElement.dataset.theme = '{mode}'; document.documentElement.dataset.mode = '{mode}'; }}")
    charts_ready(page)
    page.evaluate("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    charts_ready(page)
    page.evaluate(SETTLED_JS)  # the theme's .15 s colour transitions: axe read a half-switched button once
    page.add_script_tag(path=str(axe_path()))
    found = page.evaluate(AXE_RUN_JS)
    ctx.close()
    return found


def serious(violations: list[dict]) -> list[dict]:
    return [v for v in violations if v["impact"] in ("serious", "critical")]


def screens(browser, url: str, folder: Path, stem: str) -> list[Path]:
    """Screenshots of the page's top and of its first chart, at each width, light and dark."""
    folder.mkdir(parents=True, exist_ok=True)
    saved = []
    for width in WIDTHS:
        for mode in ("light", "dark"):
            ctx = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=mode)
            page = ctx.new_page()
            page.goto(url, wait_until="load")
            charts_ready(page)
            page.evaluate(SETTLED_JS)
            path = folder / f"{stem}-{width}-{mode}.png"
            page.screenshot(path=str(path), full_page=True)
            saved.append(path)
            ctx.close()
    return saved


# -- as a script: the figures of a build --------------------------------------------------------


def main(argv: list[str]) -> int:
    import argparse

    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from conftest import CHROMIUM_ARGS, SITE_PATH, find_chromium, serve

    parser = argparse.ArgumentParser(prog="python tests/site/reader.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("--pages", nargs="*", default=list(READER_PAGES))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-axe", action="store_true")
    parser.add_argument("--reading", action="store_true",
                        help="only the reading figures: heights, tab depth, Latin words, hidden columns, search")
    parser.add_argument("--screens", type=Path, help="also save screenshots (390 px and 1280 px, light and dark) here")
    parser.add_argument("--tag", default="", help="prefix of the screenshot names, e.g. before/after")
    parser.add_argument("--drafts", type=Path, default=None,
                        help="folder of the chapters' drafts (000_* eager, 004_* design); default $BOOK_DRAFTS or ../shared/seeds")
    args = parser.parse_args(argv)
    server = serve(args.site, SITE_PATH)  # as the tests and GitHub Pages serve it: under a path of its own
    base = server.__enter__()
    report = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=find_chromium(), headless=True, args=CHROMIUM_ARGS)
        for name in args.pages:
            if not (args.site / name).is_file():
                continue
            url = base + name
            r = report[name] = {"reading": reading(browser, url)}
            draft = draft_chars(name, args.drafts)
            r["reading"]["draft_chars"] = draft
            r["reading"]["text_ratio"] = round(r["reading"]["text_1280"] / draft, 2) if draft else None
            if args.reading:
                continue
            r["weight"] = weight(browser, url)
            for w in WIDTHS:
                r[f"layout_{w}"] = layout(browser, url, w)
            if args.screens:
                screens(browser, url, args.screens, f"{args.tag}{Path(name).stem}")
            if not args.no_axe:
                for dark in (False, True):
                    r["axe_dark" if dark else "axe_light"] = axe(browser, url, dark)
        found = search(browser, base)
        browser.close()
    server.__exit__(None, None, None)
    if args.json:
        print(json.dumps({"pages": report, "search": found}, ensure_ascii=False, indent=1))
        return 0
    print("reading (issues 22 and 28):")
    for name, r in report.items():
        rd = r["reading"]
        words = sorted({w for w, _, _ in rd["latin"]})
        print(f"  {name}: {rd['height_390']} px tall at 390 px; tab depth {rd['tabs']['depth']} "
              f"({rd['tabs']['nested']} of {rd['tabs']['sets']} tab sets nested); "
              f"{len(rd['latin'])} Latin words outside the allow-list ({len(words)} distinct); "
              f"{len(rd['columns_1280']['hidden'])} hidden columns at 1280 px in {rd['columns_1280']['tables']} tables")
        ratio = f", {rd['text_ratio']}x its draft's {rd['draft_chars']}" if rd.get("text_ratio") else ""
        print(f"      text seen at 1280 px: {rd['text_1280']} non-space characters{ratio}")
        for w in words[:12]:
            ctx = next(c for x, _, c in rd["latin"] if x == w)
            print(f"      latin: {w!r} in «{ctx}»")
        for h in rd["columns_1280"]["hidden"][:5]:
            print(f"      hidden column: {h}")
    print(f"  search: {sum(q['ok'] for q in found)} of {len(found)} queries find the expected page first")
    for q in found:
        if not q["ok"]:
            print(f"      {q['query']!r}: want {q['want']}, got {q['hits']}")
    for name, r in report.items():
        if "weight" not in r:
            continue
        w = r["weight"]
        print(f"{name}: {w['bytes'] / 2**20:.2f} MiB transferred (budget 2.5), DOMContentLoaded min {w['dcl_min_ms']:.0f} ms (budget 600) "
              f"median {w['dcl_median_ms']:.0f} ms")
        for f in w["biggest"]:
            print(f"    {f['bytes']:>9} {f['url'].rsplit('/', 1)[-1][:60]}")
        for wd in WIDTHS:
            lay = r[f"layout_{wd}"]
            mp = lay["chart_text_min_px"]
            print(f"  {wd} px: smallest chart text {mp and round(mp, 1)} px over {lay['charts_measured']} charts; "
                  f"{len(lay['overflow'])} unhinted overflow; {len(lay['sticky']['bad'])} of {lay['sticky']['checked']} scrolling tables lose their first column; "
                  f"{len(lay['split']['split'])} of {lay['split']['checked']} number/unit pairs split")
            for o in lay["overflow"][:8]:
                print(f"      overflow: {o['what']}: {o['why']}")
            for s in lay["split"]["split"][:5]:
                print(f"      split: {s!r}")
        for mode in ("axe_light", "axe_dark"):
            if mode in r:
                v = r[mode]
                print(f"  {mode}: {len(v)} rules violated ({sum(x['nodes'] for x in v)} nodes), "
                      f"{len(serious(v))} serious/critical")
                for x in v:
                    print(f"      {x['impact']:8} {x['id']} ×{x['nodes']}: {x['targets'][:2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
