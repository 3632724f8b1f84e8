"""The reading path shows the reader's words; the machinery's side is one click away behind an icon.

A held-out reader counted, between the sentences of eager.html and design.html, 68 「来历」 labels under the outputs,
36 claim check marks (「✓ H200」) and fold titles saying 「断言」. Now an output's provenance and a claim's check
on each machine are a small icon (reader.icon_disclosure: a real <summary>, named by its tooltip and aria-label)
that opens the same content; the data stay in the HTML (tests/docs, the reader's-machine overlay read them).
"""

from __future__ import annotations

import pytest
import reader

pytestmark = pytest.mark.browser

PAGES = ("eager.html", "design.html")

# The article's visible text as a reader finds it (closed <details>, unselected tabs left out), in two parts: the
# titles of {evidence} folds (a page may write its own: reported, not judged here) and everything else.
SEEN_JS = """() => {
  const root = document.querySelector('.bd-article');
  const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const text = [], titles = [];
  for (let n = w.nextNode(); n; n = w.nextNode()) {
    const el = n.parentElement;
    if (el.closest('script, style')) continue;
    if (!el.checkVisibility({contentVisibilityAuto: true, visibilityProperty: true, opacityProperty: true})) continue;
    (el.closest('details.book-fold > summary, details.book-evidence > summary') ? titles : text).push(n.data);
  }
  return {text: text.join(''), titles: titles.join('|')};
}"""

MACHINERY_WORDS = ("来历", "断言", "✓", "✗", "数据支持", "重现：")  # (≈ and 说不清 are also the prose's words)


@pytest.mark.parametrize("width", reader.WIDTHS)
@pytest.mark.parametrize("page", PAGES)
def test_the_reading_path_shows_no_machinery_labels(probe, server, page, width):
    """No 「来历」 line, no claim mark (✓ ✗), no 「断言」 in the visible text outside the folds' titles; every
    output's and claim's details sit behind one icon with a name."""
    p = probe(width=width)
    p.goto(server + page)
    seen = p.page.evaluate(SEEN_JS)
    found = {w: seen["text"].count(w) for w in MACHINERY_WORDS if w in seen["text"]}
    assert not found, found
    assert "断言" not in seen["titles"], seen["titles"]
    icons = p.page.evaluate("""() => [...document.querySelectorAll('details.book-output-more, details.book-claim-marks')]
      .map((d) => { const s = d.querySelector(':scope > summary');
        return {text: s.textContent.trim(), name: s.getAttribute('aria-label') || '', title: s.title || ''}; })""")
    assert icons, "no output or claim on the page"
    bad = [i for i in icons if i["text"] != "ⓘ" or not i["name"] or i["name"] != i["title"]]
    assert not bad, bad[:3]
    assert p.problems == []


def test_an_outputs_provenance_and_a_claims_check_are_one_click_away(probe, server):
    """Clicking an output's icon shows its 「来历」 (machine, reproduce steps); Enter on a claim's icon (keyboard)
    shows each machine's check, whose marks were its tooltip."""
    p = probe(width=1280)
    p.goto(server + "eager.html")
    out = p.page.locator(".book-output-wrapper").filter(visible=True).first
    icon = out.locator(":scope > details.book-output-more > summary")
    assert "来历" in icon.get_attribute("aria-label")
    repro = out.locator(":scope > details.book-output-more p", has_text="重现：")
    assert not repro.is_visible()
    icon.click()
    assert repro.is_visible() and "机器：" in out.locator(":scope > details.book-output-more").inner_text()

    claim = p.page.locator(".book-claim:has(> details.book-claim-marks)").first
    claim.evaluate("(c) => { for (let d = c.closest('details'); d; d = d.parentElement.closest('details')) d.open = true; }")
    mark = claim.locator(":scope > details.book-claim-marks > summary")
    assert "✓" in mark.get_attribute("title")
    lines = claim.locator(":scope > details.book-claim-marks p.book-claim-ok")
    assert not lines.first.is_visible()
    mark.focus()
    p.page.keyboard.press("Enter")
    assert lines.first.is_visible() and "数据支持" in lines.first.inner_text()
    # the icon follows the sentence on its last line: no line of its own between the reader's paragraphs
    gap = p.page.evaluate("""(c) => { const s = c.querySelector(':scope > details > summary').getBoundingClientRect();
      const p = c.querySelector(':scope > details').previousElementSibling.getClientRects();
      const last = p[p.length - 1]; return Math.abs((s.top + s.bottom) / 2 - (last.top + last.bottom) / 2); }""",
                          claim.element_handle())
    assert gap < 12, f"the claim's icon is {gap:.0f} px off its sentence's last line"
    assert p.problems == []
