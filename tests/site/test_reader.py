"""The site as a reader gets it, on a phone (390 px) and a laptop (1280 px): the budgets of issue 13.

Every page: chart text never under 11 px, nothing wider than its column without a hint (and tables
that scroll keep their first column), a number never on another line than its unit, no serious or
critical axe-core violation in light or dark mode. The heaviest chapter: at most 2.5 MiB transferred
(DOMContentLoaded is a speed figure: `python tests/site/reader.py` prints it). The measures are in reader.py.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
import reader
from site_helpers import html_pages

pytestmark = pytest.mark.browser

WEIGHT_PAGE = "eager.html"  # the heaviest chapter: outputs in tabs, charts, tables
MAX_BYTES = int(2.5 * 2**20)
MAX_DCL_MS = 600
CHAPTERS = ("index.html", "eager.html", "design.html", "appendix/ran-where.html")


def url(server, site, page) -> str:
    return server + quote(page.relative_to(site).as_posix())


def reader_pages(site):
    """Pages a reader reads: every page but the generated API reference (checked by axe below)."""
    return [p for p in html_pages(site) if not p.relative_to(site).as_posix().startswith(("api/", "genindex", "search"))]


@pytest.fixture(scope="module")
def layouts(browser, site, server):
    """reader.layout() of every reader page at both widths: (page, width) -> measures."""
    return {(page.relative_to(site).as_posix(), w): reader.layout(browser, url(server, site, page), w)
            for page in reader_pages(site) for w in reader.WIDTHS}


@pytest.mark.parametrize("width", reader.WIDTHS)
def test_chart_text_is_never_under_11px(layouts, width):
    measured = {page: m for (page, w), m in layouts.items() if w == width and m["charts_measured"]}
    assert measured, "no page with a chart measured: the test would prove nothing"
    small = {page: m["chart_text_small"] for page, m in measured.items() if m["chart_text_small"]}
    assert not small, f"chart text under {reader.MIN_CHART_TEXT_PX} px at {width} px: {small}"


@pytest.mark.parametrize("width", reader.WIDTHS)
def test_nothing_overflows_without_a_hint(layouts, width):
    found = {page: m["overflow"] for (page, w), m in layouts.items() if w == width and m["overflow"]}
    assert not found, f"at {width} px: {found}"


def test_something_does_scroll_on_a_phone(layouts):
    """At 390 px some tables must scroll (the book's are wider): else the hint and sticky tests prove nothing."""
    assert sum(m["sticky"]["checked"] for (_, w), m in layouts.items() if w == 390) > 0


@pytest.mark.parametrize("width", reader.WIDTHS)
def test_scrolling_tables_keep_their_first_column(layouts, width):
    bad = {page: m["sticky"]["bad"] for (page, w), m in layouts.items() if w == width and m["sticky"]["bad"]}
    assert not bad, f"at {width} px: {bad}"


@pytest.mark.parametrize("width", reader.WIDTHS)
def test_no_number_is_split_from_its_unit(layouts, width):
    checked = sum(m["split"]["checked"] for (_, w), m in layouts.items() if w == width)
    split = {page: m["split"]["split"] for (page, w), m in layouts.items() if w == width and m["split"]["split"]}
    assert checked > 50, f"only {checked} number/unit pairs found: the test would prove nothing"
    assert not split, f"at {width} px: {split}"


def test_the_heaviest_chapter_is_light(browser, site, server):
    page = site / WEIGHT_PAGE
    w = reader.weight(browser, url(server, site, page), runs=1)
    assert w["bytes"] <= MAX_BYTES, f"{WEIGHT_PAGE}: {w['bytes'] / 2**20:.2f} MiB transferred; biggest: {w['biggest']}"
    # DOMContentLoaded (budget MAX_DCL_MS) is a speed target: it is measured and printed by the reader
    # benchmark (`python tests/site/reader.py`), not asserted here, where a busy CI machine would make it flaky.


@pytest.mark.parametrize("mode", ["light", "dark"])
def test_no_serious_accessibility_violation(browser, site, server, mode):
    """axe-core (the npm package pinned in tests/site/axe/) on every page, every <details> open."""
    found = {}
    for page in html_pages(site):
        rel = page.relative_to(site).as_posix()
        widths = reader.WIDTHS if rel in CHAPTERS else (1280,)
        for width in widths:
            bad = reader.serious(reader.axe(browser, url(server, site, page), mode == "dark", width))
            if bad:
                found[f"{rel} @ {width}px"] = [(v["id"], v["nodes"], v["targets"][:2]) for v in bad]
    assert not found, found


# -- reading (issue 22): one row of tabs, Chinese throughout, every column in view, short enough, searchable --

READING_PAGES = ("index.html", "eager.html", "design.html", "appendix/ran-where.html", "appendix/glossary.html")
# At 390 px, as loaded (tabs on their first machine, details closed, list items' evidence folded).
# issue 28: eager ≤ 17 000 px and design ≤ 22 000 px at 390 px (both pages rewritten).
HEIGHT_BUDGET_390 = {"design.html": 22_000, "eager.html": 17_000}


@pytest.fixture(scope="module")
def readings(browser, site, server):
    """reader.reading() of each reader page: height and tabs and Latin words at 390 px, columns at 1280 px."""
    return {page: reader.reading(browser, server + page) for page in READING_PAGES if (site / page).is_file()}


def test_tabs_never_nest(readings):
    """One row of tabs per block: the machine; frameworks are sections inside it ({outputs})."""
    deep = {page: r["tabs"] for page, r in readings.items() if r["tabs"]["depth"] > 1}
    assert not deep, deep
    assert sum(r["tabs"]["sets"] for r in readings.values()) > 10, "no tabs measured: the test would prove nothing"


def test_reader_pages_have_no_latin_words_outside_the_allow_list(readings):
    """Reader text (article, tooltips, table of contents, footer) is Chinese: Latin words only in code, as names
    of things ([latin] of docs/terms.toml) or as the English of a term."""
    found = {page: sorted({(w, ctx) for w, _, ctx in r["latin"]})[:10] for page, r in readings.items() if r["latin"]}
    assert not found, found


def test_tables_show_every_column_at_1280(readings):
    hidden = {page: r["columns_1280"]["hidden"] for page, r in readings.items() if r["columns_1280"]["hidden"]}
    assert not hidden, hidden
    assert sum(r["columns_1280"]["tables"] for r in readings.values()) > 20


@pytest.mark.parametrize("page", sorted(HEIGHT_BUDGET_390))
def test_chapters_fit_their_height_on_a_phone(readings, page):
    assert readings[page]["height_390"] <= HEIGHT_BUDGET_390[page], readings[page]["height_390"]


# The text a reader sees at 1280 px (closed folds and unselected tabs left out) against the chapter's draft, in
# non-space characters (reader.TEXT_SEEN_JS, reader.draft_chars): issue 28 asks for at most 1.8 on both pages,
# and both pages are rewritten to it.
TEXT_RATIO_BUDGET_1280 = {"eager.html": 1.8, "design.html": 1.8}


@pytest.mark.parametrize("page", sorted(TEXT_RATIO_BUDGET_1280))
def test_chapters_text_against_their_drafts(readings, page):
    from conftest import unavailable

    draft = reader.draft_chars(page)
    if draft is None:
        unavailable(f"no draft for {page} in {reader.drafts_dir()} (set BOOK_DRAFTS, or put shared/ beside the repository)")
    seen = readings[page]["text_1280"]
    assert seen / draft <= TEXT_RATIO_BUDGET_1280[page], f"{page}: {seen} characters seen at 1280 px, {seen / draft:.2f}x the draft's {draft}"


def test_text_seen_leaves_out_closed_folds_and_unselected_tabs(probe, server):
    """The measure counts what is shown as loaded: opening a closed fold, or showing every tab, adds to it."""
    fold = probe(width=1280)
    fold.goto(server + FOLD_PAGE)
    closed = fold.page.evaluate(reader.TEXT_SEEN_JS)
    inside = fold.page.evaluate("() => document.querySelector('details.book-fold').textContent.replace(/\\s+/g, '').length")
    fold.page.locator("details.book-fold > summary").first.click()
    opened = fold.page.evaluate(reader.TEXT_SEEN_JS)
    assert opened - closed > 0.5 * inside > 50, (closed, opened, inside)
    tabs = probe(width=1280)
    tabs.goto(server + "eager.html")
    loaded = tabs.page.evaluate(reader.TEXT_SEEN_JS)
    tabs.page.evaluate(TABS_SHOWN_JS)
    assert tabs.page.evaluate(reader.TEXT_SEEN_JS) > loaded * 1.1, "unselected tabs were counted as seen"


def test_search_finds_each_term_where_it_is_introduced(browser, server):
    """Every term of docs/terms.toml (and its extra queries): the first hit is the page that introduces it."""
    found = reader.search(browser, server)
    assert len(found) >= 20
    wrong = [(q["query"], q["want"], q["hits"]) for q in found if not q["ok"]]
    assert not wrong, wrong


TABS_SHOWN_JS = """() => {
  const s = document.createElement('style');
  s.textContent = '.sd-tab-content { display: block !important; }';
  document.head.appendChild(s);
}"""

LAYOUT_JS = """() => {
  const lines = (el) => { const cs = getComputedStyle(el); const lh = parseFloat(cs.lineHeight) || 1.5 * parseFloat(cs.fontSize);
    return (el.getBoundingClientRect().height - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom)) / lh; };
  const shown = (el) => el.getClientRects().length > 0;
  const out = {captions: [], labels: [], machines: [], questions: [], marks: [], untitled: []};
  document.querySelectorAll('.book-output-wrapper > .code-block-caption').forEach((c) => {
    if (shown(c) && lines(c) > 2.2) out.captions.push(c.textContent.trim().slice(0, 50)); });
  document.querySelectorAll('.book-platform-tabs > label').forEach((l) => {
    if (!shown(l)) return;
    if (lines(l) > 1.3) out.labels.push(l.textContent.trim());
    if (!l.querySelector('[title]')) out.untitled.push('tab ' + l.textContent.trim()); });
  document.querySelectorAll('table.book-records-table .book-machine').forEach((m) => {
    if (!shown(m)) return;
    if (lines(m) > 1.3) out.machines.push(m.textContent.trim());
    if (!m.title) out.untitled.push('row ' + m.textContent.trim()); });
  document.querySelectorAll('table.book-verdict-matrix').forEach((t) => {
    if (!shown(t)) return;
    t.querySelectorAll('td:first-child').forEach((q) => {
      if (q.getBoundingClientRect().width < 0.8 * t.getBoundingClientRect().width || lines(q) > 3.2)
        out.questions.push(`${Math.round(q.getBoundingClientRect().width)}px, ${lines(q).toFixed(1)} lines: ${q.textContent.trim().slice(0, 30)}`); }); });
  document.querySelectorAll('.book-claim').forEach((c) => {
    const marks = c.querySelectorAll(':scope > details.book-claim-marks');
    if (marks.length > 1 || (marks[0] && (marks[0].open || lines(marks[0].querySelector('summary')) > 1.3)))
      out.marks.push(c.textContent.trim().slice(0, 40)); });
  return out;
}"""


@pytest.mark.parametrize("page", ["eager.html", "design.html"])
def test_captions_tabs_rows_matrices_and_claims_are_compact_on_a_phone(probe, server, page):
    """At 390 px: output captions at most two lines (the rest in 「来历」, behind the caption's icon), machine names
    in tabs and table rows on one line with the full name in their tooltip, every verdict-matrix question as wide as the matrix in
    at most three lines, each claim followed by one closed icon (its marks in the tooltip)."""
    p = probe(width=390)
    p.goto(server + page)
    p.page.evaluate(TABS_SHOWN_JS)  # every tab's content shown; the details stay as a reader finds them
    found = p.page.evaluate(LAYOUT_JS)
    assert not any(found.values()), found
    assert p.problems == []


def test_the_search_field_leaves_room_for_its_icon(probe, server):
    p = probe(width=390)
    p.goto(server + "search.html")
    gap = p.page.evaluate("""() => { const f = document.querySelector('.bd-search'); const i = f.querySelector('input');
      const icon = f.querySelector('.fa-magnifying-glass, svg, .icon'); const r = icon.getBoundingClientRect();
      return i.getBoundingClientRect().left + parseFloat(getComputedStyle(i).paddingLeft) - r.right; }""")
    assert gap >= 0, f"the icon covers {-gap:.0f} px of the text"


def test_the_footer_says_what_the_book_is_not_who_wrote_it(probe, server):
    p = probe()
    p.goto(server + "eager.html")
    footer = p.page.inner_text("footer.bd-footer-content")
    assert "每个数字都来自一次记录下来的运行" in footer and "构建自提交" in footer
    assert "Copyright" not in footer and "作者" not in footer and "本书作者" not in footer


# list items with evidence: the design page argued in them before its rewrite; the showcase keeps an example
LIST_FOLD_PAGE = "dev/showcase.html"
FOLDS_JS = """() => [...document.querySelectorAll('details.book-evidence')].map((d) => {
  const summary = d.querySelector(':scope > summary');
  const body = [...d.children].filter((c) => c !== summary);
  return {open: d.open, summary: summary.checkVisibility() ? summary.textContent.trim() : null,
          shown: body.length > 0 && body.every((c) => c.checkVisibility()),
          target: (body.map((c) => c.id ? c : c.querySelector('[id]')).find(Boolean) || {}).id || null};
})"""


def test_a_list_items_evidence_is_folded_on_a_phone_and_opens(probe, server):
    """At 390 px each list item's code, outputs and claims are behind one closed 「代码和输出」-like line, which
    opens on a click, and opens by itself when the URL's fragment points inside it."""
    phone = probe(width=390)
    phone.goto(server + LIST_FOLD_PAGE)
    folds = phone.page.evaluate(FOLDS_JS)
    assert len(folds) >= 2, folds
    assert all(not f["open"] and not f["shown"] and f["summary"] for f in folds), folds
    assert all(set(f["summary"]) <= set("代码输出表图核对、和") for f in folds), [f["summary"] for f in folds]

    phone.page.locator("details.book-evidence > summary").first.click()
    first = phone.page.evaluate(FOLDS_JS)[0]
    assert first["open"] and first["shown"], first

    target = next(f["target"] for f in folds[1:] if f["target"])
    linked = probe(width=390)
    linked.goto(server + f"{LIST_FOLD_PAGE}#{target}")
    linked.page.wait_for_timeout(200)
    opened = [f for f in linked.page.evaluate(FOLDS_JS) if f["target"] == target]
    assert opened and opened[0]["open"] and opened[0]["shown"], (target, opened)
    assert phone.problems == [] and linked.problems == []


def test_nothing_is_folded_on_a_laptop(probe, server):
    """At 1280 px the same lists read as they did before the folds: no summary line, every block shown."""
    laptop = probe(width=1280)
    laptop.goto(server + LIST_FOLD_PAGE)
    folds = laptop.page.evaluate(FOLDS_JS)
    assert len(folds) >= 2
    folded = [f for f in folds if f["summary"] or not f["shown"]]
    assert not folded, folded


SECTION_FOLDS_JS = """() => [...document.querySelectorAll('details.book-fold')].map((d) => {
  const summary = d.querySelector(':scope > summary');
  const body = [...d.children].filter((c) => c !== summary);
  return {open: d.open, summary: summary.checkVisibility() ? summary.textContent.trim() : null,
          shown: body.some((c) => c.checkVisibility()), ids: [...d.querySelectorAll('[id]')].map((e) => e.id)};
})"""
FOLD_PAGE = "dev/showcase.html"  # the section shape, with one {evidence} fold (docs/dev/showcase.md)
FOLD_TARGET = "dev-showcase-evidence-inside"


@pytest.mark.parametrize("width", reader.WIDTHS)
def test_a_sections_fold_is_closed_at_every_width_and_opens(probe, server, width):
    """{evidence}: one closed line naming what it holds, at 390 px and at 1280 px; a click opens it; a link to an id
    inside it (from another page, or on the same page) opens it; the reading path's output names its machine."""
    p = probe(width=width)
    p.goto(server + FOLD_PAGE)
    folds = p.page.evaluate(SECTION_FOLDS_JS)
    assert folds and all(not f["open"] and not f["shown"] and f["summary"] for f in folds), folds
    assert folds[0]["summary"] == "输出", folds  # each output's 「来历」 is its own icon, not a word here
    section = p.page.locator("#dev-showcase-evidence")
    assert section.locator(".book-output-wrapper .book-output-machine").first.is_visible()  # the one machine, named
    p.page.locator("details.book-fold > summary").first.click()
    first = p.page.evaluate(SECTION_FOLDS_JS)[0]
    assert first["open"] and first["shown"], first
    p.page.locator("details.book-fold > summary").first.click()  # closed again

    p.page.evaluate(f"() => {{ window.location.hash = '{FOLD_TARGET}'; }}")  # a link on the same page
    p.page.wait_for_timeout(200)
    assert next(f for f in p.page.evaluate(SECTION_FOLDS_JS) if FOLD_TARGET in f["ids"])["open"]

    linked = probe(width=width)
    linked.goto(server + f"{FOLD_PAGE}#{FOLD_TARGET}")
    linked.page.wait_for_timeout(200)
    fold = next(f for f in linked.page.evaluate(SECTION_FOLDS_JS) if FOLD_TARGET in f["ids"])
    assert fold["open"] and fold["shown"], fold
    in_view = linked.page.evaluate(f"() => {{ const r = document.getElementById('{FOLD_TARGET}').getBoundingClientRect();"
                                   " return r.top >= 0 && r.top < window.innerHeight; }")
    assert in_view, "the link's target is opened but not scrolled to"
    assert p.problems == [] and linked.problems == []


# -- phone (issue 28): words of code whole, wide blocks say what is off-screen, nothing pointed at is folded ------

PHONE_PAGES = ("index.html", "eager.html", "design.html", "appendix/ran-where.html", "appendix/glossary.html")


@pytest.fixture(scope="module")
def phones(browser, site, server):
    """reader.phone() of each reader page at both widths: (page, width) -> measures."""
    return {(page, w): reader.phone(browser, server + page, w)
            for page in PHONE_PAGES if (site / page).is_file() for w in reader.WIDTHS}


@pytest.mark.parametrize("width", reader.WIDTHS)
def test_inline_code_never_breaks_inside_a_word(phones, width):
    """`chain8` never shows as «chai/n8», `nox -s regenerate` never as «regenera te»: a word of code that fits on a
    line stays on one; a long token breaks only between its parts (capture/sphinxext/site/codewrap.py)."""
    checked = sum(m["code"]["checked"] for (_, w), m in phones.items() if w == width)
    split = {page: m["code"]["split"][:6] for (page, w), m in phones.items() if w == width and m["code"]["split"]}
    assert checked > 200, f"only {checked} words of code measured: the test would prove nothing"
    assert not split, f"at {width} px: {split}"


def test_wide_tables_and_charts_say_what_is_off_screen_on_a_phone(phones):
    """At 390 px every table or chart wider than the column has a visible hint right above it, and a table's hint
    names the columns that start out of sight («右边还有：留住、比»)."""
    wide = sum(m["hints"]["wide"] for (_, w), m in phones.items() if w == 390)
    bad = {page: m["hints"]["bad"] for (page, w), m in phones.items() if w == 390 and m["hints"]["bad"]}
    assert wide > 5, f"only {wide} wide blocks at 390 px: the test would prove nothing"
    assert not bad, bad


@pytest.mark.parametrize("width", reader.WIDTHS)
def test_nothing_the_text_points_at_is_folded(phones, width):
    """A sentence that says 「下表」 or 「下图」 has that table or chart in view as the page loads, not behind a fold."""
    checked = sum(m["pointed"]["checked"] for (_, w), m in phones.items() if w == width)
    bad = {page: m["pointed"]["bad"] for (page, w), m in phones.items() if w == width and m["pointed"]["bad"]}
    # the rewritten chapters point at little (eager's machine table); one sentence found is enough to prove something
    assert checked >= 1, "no pointing sentence found: the test would prove nothing"
    assert not bad, f"at {width} px: {bad}"
