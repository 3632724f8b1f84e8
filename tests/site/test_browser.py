"""The built site in a real browser (system Chromium, headless), over HTTP and from file://."""

from __future__ import annotations

import re
from urllib.parse import quote, unquote, urlsplit

import pytest
from conftest import find_chromium
from reader import SHOW_ALL_JS
from site_helpers import built_charts, chart_sources, html_pages, mermaid_sources, svg_text

pytestmark = pytest.mark.browser

CHART_TIMEOUT_MS = 20_000
CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
CJK_FONT = re.compile(r"CJK|Han|Hei|Song|Ming|Kai|PingFang|Hiragino|YaHei|WenQuanYi|Droid Sans Fallback|\bSC\b", re.I)
SEARCH_TERM = "延迟执行"


def page_url(base: str, site, page) -> str:
    return base + quote(page.relative_to(site).as_posix())


def chart_labels(source: str) -> list[str]:
    """The texts a flowchart source puts on nodes and edges: what the SVG must show."""
    body = re.sub(r"\A\s*---\n.*?\n---\n", "", source, flags=re.S)  # front matter (config, title)
    body = "\n".join(line for line in body.splitlines() if not line.strip().startswith("%%"))
    labels = re.findall(r'"([^"]+)"', body)
    unquoted = re.sub(r'"[^"]*"', "", body)
    for pattern in (r"\[([^\[\]\n]+)\]", r"\{([^{}\n]+)\}", r"\(([^()\n]+)\)", r"\|([^|\n]+)\|"):
        labels += re.findall(pattern, unquoted)
    # a label's lines (<br/>) are drawn as separate text lines: check each line
    parts = [part for lab in labels for part in re.split(r"<br\s*/?>", lab)]
    return [p.strip().strip("`*") for p in parts if p.strip()]


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def render_charts(probe, url: str, sources: list[str]) -> list[str]:
    """Open a page whose charts the browser draws (the fallback), let them draw, return what is missing."""
    probe.goto(url)
    page = probe.page
    page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # charts are drawn when they come near
    try:
        page.wait_for_function(
            "n => document.querySelectorAll('pre.mermaid[data-processed=\"true\"] svg').length >= n",
            arg=len(sources),
            timeout=CHART_TIMEOUT_MS,
        )
    except Exception:  # playwright's TimeoutError; the assertions below say what is missing
        pass
    drawn = page.evaluate(
        "Array.from(document.querySelectorAll('pre.mermaid')).map((el) => {"
        "  const svg = el.querySelector('svg');"
        "  return svg ? svg.textContent : null; })"
    )
    missing = []
    if len(drawn) != len(sources):
        missing.append(f"{url}: {len(sources)} charts in the HTML, {len(drawn)} on the page")
    for i, (source, text) in enumerate(zip(sources, drawn)):
        if text is None:
            missing.append(f"{url}: chart {i + 1} did not become an SVG")
            continue
        lost = [lab for lab in chart_labels(source) if squash(lab) not in squash(text)]
        if lost:
            missing.append(f"{url}: chart {i + 1} lacks labels {lost}")
    return missing


def chart_pages(site):
    """Pages with charts: (page, number of charts drawn at build time, sources left to the browser)."""
    return [(p, len(built), s) for p in html_pages(site) if (built := built_charts(p)) or (s := mermaid_sources(p))]


def test_site_has_a_chart_to_check(site):
    assert chart_pages(site), "no chart anywhere: the chart tests would prove nothing"


def test_charts_are_drawn_at_build_time_with_every_label(site):
    """With Chromium at build time every chart is in the page as SVG (light and dark), showing all its labels."""
    if find_chromium() is None:
        pytest.skip("no Chromium at build time: the charts are drawn in the browser (tested below)")
    sources = chart_sources(site)
    problems = []
    for page in html_pages(site):
        rel = page.relative_to(site).as_posix()
        built, left = built_charts(page), mermaid_sources(page)
        if left:
            problems.append(f"{rel}: {len(left)} chart(s) left to the browser although Chromium was there")
        if len(built) != len(sources.get(rel, [])):
            problems.append(f"{rel}: {len(sources.get(rel, []))} charts in the source, {len(built)} drawn")
        for i, (svgs, source) in enumerate(zip(built, sources.get(rel, [])), 1):
            if len(svgs) != 2:
                problems.append(f"{rel}: chart {i} has {len(svgs)} SVGs, not a light and a dark one")
            for svg in svgs:
                lost = [lab for lab in chart_labels(source) if squash(lab) not in squash(svg_text(svg))]
                if lost:
                    problems.append(f"{rel}: chart {i} lacks labels {lost}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("scheme", ["http", "file"])
@pytest.mark.parametrize("mode", ["light", "dark"])
def test_charts_show_in_the_readers_mode(site, server, probe, scheme, mode):
    """Each chart shows exactly one drawing, the one of the reader's mode, with no script needed (also from file://)."""
    problems = []
    for page, n_built, _ in chart_pages(site):
        if not n_built:
            continue
        p = probe(mode=mode)
        p.goto(page_url(server, site, page) if scheme == "http" else page.as_uri())
        p.page.evaluate(SHOW_ALL_JS)
        shown = p.page.evaluate(
            "() => Array.from(document.querySelectorAll('.book-chart')).map((c) =>"
            "  Array.from(c.querySelectorAll('svg')).filter((s) => s.getClientRects().length > 0)"
            "    .map((s) => [s.getAttribute('class'), Math.round(s.getBoundingClientRect().width)]))"
        )
        for i, svgs in enumerate(shown, 1):
            if len(svgs) != 1 or f"book-chart-{mode}" not in svgs[0][0] or svgs[0][1] < 50:
                problems.append(f"{page.relative_to(site)}: chart {i} shows {svgs} in {mode} mode")
        problems += p.problems
        p.close()
    assert not problems, "\n".join(problems)


def test_browser_fallback_draws_charts_over_http_and_from_file(fallback_site, probe):
    """Built without Chromium, the charts are drawn in the browser: mermaid loads when a chart comes near,
    over HTTP and from file:// (a plain script, not an ES module)."""
    site, base = fallback_site
    missing = []
    for page, _, sources in chart_pages(site):
        for url in (page_url(base, site, page), page.as_uri()):
            p = probe()
            missing += render_charts(p, url, sources) + p.problems
            p.close()
    assert chart_pages(site), "the fallback site has no chart"
    assert not missing, "\n".join(missing)


def test_browser_fallback_loads_mermaid_only_near_a_chart(fallback_site, probe):
    site, base = fallback_site
    p = probe()
    loaded = []
    p.page.on("request", lambda req: loaded.append(req.url) if "mermaid.min.js" in req.url else None)
    p.goto(page_url(base, site, site / "far.html"))
    p.page.wait_for_timeout(500)
    assert loaded == [], "mermaid.min.js loaded although no chart is near the viewport"
    p.page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    p.page.wait_for_function("() => document.querySelector('pre.mermaid svg')", timeout=CHART_TIMEOUT_MS)
    assert len(loaded) == 1 and p.problems == []


def test_pages_open_from_file_without_errors(site, probe):
    problems = []
    for page in [site / "index.html", site / "search.html"]:
        p = probe()
        p.goto(page.as_uri())
        problems += [f"{page.name}: {msg}" for msg in p.problems]
        p.close()
    assert not problems, "\n".join(problems)


def test_chinese_renders_with_a_cjk_font(server, probe):
    """The glyphs of a Chinese paragraph come from a CJK font, not from boxes of a Latin one."""
    p = probe()
    p.goto(server + "index.html")
    text = p.page.evaluate(
        "() => { const el = Array.from(document.querySelectorAll('article p'))"
        "  .find((e) => /[\\u4e00-\\u9fff]{8}/.test(e.textContent));"
        "  el.setAttribute('data-cjk-probe', ''); return el.textContent; }"
    )
    cdp = p.context.new_cdp_session(p.page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument")["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": "[data-cjk-probe]"})["nodeId"]
    fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    cjk_glyphs = sum(f["glyphCount"] for f in fonts if CJK_FONT.search(f["familyName"]))
    want = len(CJK_CHAR.findall(text))
    assert cjk_glyphs >= want, f"{want} Chinese characters, {cjk_glyphs} drawn by a CJK font; fonts used: {fonts}"


def expected_search_hits(site, term: str) -> set[str]:
    """Pages whose article text contains the term."""
    hits = set()
    for page in html_pages(site):
        text = page.read_text(encoding="utf-8")
        article = text[text.find("<article") :]
        if term in re.sub(r"<[^>]+>", "", article):
            hits.add(page.relative_to(site).as_posix())
    return hits - {"search.html", "genindex.html"}


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_chinese_search_finds_the_page(site, server, probe, scheme):
    """jieba with the terms of docs/terms.toml indexes 延迟执行 as one term; without them it finds nothing."""
    expected = expected_search_hits(site, SEARCH_TERM)
    assert expected, f"no page contains {SEARCH_TERM!r}: the search test would prove nothing"
    p = probe()
    base = server if scheme == "http" else (site / "index.html").as_uri().rsplit("/", 1)[0] + "/"
    p.goto(f"{base}search.html?q={quote(SEARCH_TERM)}")
    # the summary line is written when the search has finished, with or without results
    p.page.wait_for_function(
        "() => (document.querySelector('#search-results .search-summary') || {}).innerText", timeout=10_000
    )
    hrefs = p.page.eval_on_selector_all("#search-results ul.search li > a", "els => els.map((a) => a.href)")
    found = {unquote(urlsplit(h).path)[len(unquote(urlsplit(base).path)) :] for h in hrefs}
    assert found, "search returned nothing"
    assert found <= expected, f"results without the term: {found - expected}"
    assert p.problems == []


def test_search_ranks_chapters_before_appendix_notes_and_api(site, server, probe):
    """同步 is on the chapters, the appendix, the notes for authors and the generated API pages: the chapters
    come first, the notes for authors after everything a reader reads."""
    p = probe()
    p.goto(f"{server}search.html?q={quote('同步')}")
    p.page.wait_for_function(
        "() => (document.querySelector('#search-results .search-summary') || {}).innerText", timeout=10_000
    )
    hrefs = p.page.eval_on_selector_all("#search-results ul.search li > a", "els => els.map((a) => a.href)")
    pages = [unquote(urlsplit(h).path)[len(urlsplit(server).path):] for h in hrefs]
    rank = [0 if pg in ("eager.html", "design.html") else 1 if pg == "index.html" else 2 if pg.startswith("appendix/")
            else 3 if pg.startswith("dev/") else 4 for pg in pages]
    assert pages and rank[0] == 0, f"results: {pages}"
    assert rank == sorted(rank), f"chapters, front page, appendix, notes for authors, API: got {pages}"
    assert p.problems == []


def test_notes_for_authors_stay_out_of_the_readers_sidebar_and_search(site, server, probe):
    """docs/dev is an author section (dev/index.html, linked from the front page's end): not in the sidebar a
    reader navigates by, not in the reader's search; a reader's query finds the chapter's section first."""
    assert (site / "dev" / "index.html").is_file() and (site / "dev" / "authoring.html").is_file()
    p = probe()
    p.goto(f"{server}index.html")
    sidebar = p.page.eval_on_selector_all(".bd-sidebar-primary a", "els => els.map((a) => a.getAttribute('href'))")
    assert sidebar and not [h for h in sidebar if h and h.startswith("dev/")], sidebar
    assert p.page.eval_on_selector_all("article a[href='dev/index.html']", "els => els.length") == 1
    for query in ("断言", "同步"):  # 断言 is all over the notes for authors, 同步 on chapters, API pages and notes
        p.goto(f"{server}search.html?q={quote(query)}")
        p.page.wait_for_function(
            "() => (document.querySelector('#search-results .search-summary') || {}).innerText", timeout=10_000
        )
        hrefs = p.page.eval_on_selector_all("#search-results ul.search li > a", "els => els.map((a) => a.href)")
        pages = [unquote(urlsplit(h).path)[len(urlsplit(server).path):] for h in hrefs]
        assert pages and not [pg for pg in pages if pg.startswith("dev/")], f"{query}: {pages}"
        if query == "同步":  # the section that introduces the term, before any bookrec::* API page
            assert pages[0] == "eager.html" and urlsplit(hrefs[0]).fragment == "eager-ret", hrefs[:3]
    assert p.problems == []


# a word of inline code broken across two lines although it fits on one (chai/n8, regenera/te)
BROKEN_CODE_WORDS_JS = """(cells) => {
  const out = [];
  const article = document.querySelector('.bd-article');
  for (const el of document.querySelectorAll('.bd-article code.literal')) {
    let block = el.parentElement;
    while (block && getComputedStyle(block).display.startsWith('inline')) block = block.parentElement;
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/\\S+/g)) {
        const r = document.createRange();
        r.setStart(node, m.index);
        r.setEnd(node, m.index + m[0].length);
        const rects = Array.from(r.getClientRects()).filter((x) => x.width > 0);
        // a rect starts a new line when it sits below the previous one by more than half its height (runs of
        // another font on the same line have tops a pixel or two apart)
        let lines = 0, bottom = -Infinity;
        for (const x of rects.sort((a, b) => a.top - b.top)) {
          if (x.top >= bottom - x.height / 2) lines += 1;
          bottom = Math.max(bottom, x.bottom);
        }
        const width = rects.reduce((a, x) => a + x.width, 0);
        const cs = block && getComputedStyle(block);
        let line = block ? block.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) : 0;
        // a table cell is as narrow as the table lets it be: there the line a word may fill is the article's
        if (cells && block && block.closest('td, th')) line = article.clientWidth;
        if (lines > 1 && width <= line) out.push(m[0]);
      }
    }
  }
  return out;
}"""


@pytest.mark.parametrize("width", [390, 360])
@pytest.mark.parametrize("name", ["index.html", "eager.html", "design.html"])
def test_inline_code_keeps_its_words_whole_on_a_phone(site, server, probe, name, width):
    """On a phone a name in inline code breaks only at its spaces, or inside a word longer than its whole line
    (the front page's `nox -s regenerate` in a narrow table cell read «regenera te»)."""
    p = probe(width=width)
    p.goto(server + name)
    broken = p.page.evaluate(BROKEN_CODE_WORDS_JS, name == "index.html")  # the front page's table of commands
    assert broken == [], f"{name} at {width} px: inline code broken inside a word: {broken[:10]}"


def test_a_chart_opens_full_size(site, server, probe):
    """「全屏查看」 shows the chart at its own width in a dialog (styled like the page's copy), and closes."""
    page = next((p for p, n_built, _ in chart_pages(site) if n_built), None)
    if page is None:
        pytest.skip("no chart drawn at build time")
    p = probe(width=390)
    p.goto(page_url(server, site, page))
    p.page.locator(".book-chart-open").first.click()
    shown = p.page.evaluate(
        "() => { const d = document.querySelector('dialog.book-chart-dialog'); const s = d && d.querySelector('svg');"
        "  return d && {open: d.open, width: s.getBoundingClientRect().width, natural: s.viewBox.baseVal.width,"
        "  styled: getComputedStyle(s.querySelector('.node rect, .node polygon, .node circle')).fill}; }"
    )
    assert shown and shown["open"] and abs(shown["width"] - shown["natural"]) < 2, shown
    assert shown["styled"] not in ("", "rgb(0, 0, 0)"), f"the copy lost its drawing's styles: {shown}"
    p.page.locator("dialog.book-chart-dialog .book-chart-close").click()
    assert p.page.evaluate("() => document.querySelector('dialog.book-chart-dialog') === null")
    assert p.problems == []


def test_icons_come_from_the_webfont(server, probe):
    """Without fontawesome.js the theme's icons are drawn by the Font Awesome webfont its CSS declares."""
    p = probe()
    p.goto(server + "index.html")
    p.page.wait_for_function("() => document.fonts.status === 'loaded'", timeout=10_000)
    icons = p.page.evaluate(
        "() => Array.from(document.querySelectorAll('i.fa-solid')).filter((i) => i.getClientRects().length)"
        "  .map((i) => [getComputedStyle(i, '::before').content, getComputedStyle(i).fontFamily, i.getBoundingClientRect().width])"
    )
    assert icons, "no visible icon on the page"
    for content, family, width in icons:
        assert content not in ("none", "normal", '""') and "Font Awesome" in family and width > 0, icons
    assert p.page.evaluate("() => document.fonts.check('900 16px \"Font Awesome 6 Free\"')")
    assert p.problems == []
