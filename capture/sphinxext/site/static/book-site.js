// The site's behaviour on every page (capture/sphinxext/site/theme.py, docs/dev/site.md):
// - a block wider than its column (code, a table, a chart) says so, in a line above it, and can be
//   scrolled with the keyboard; a table keeps its first column in view (book-site.css);
// - a chart opens full-size in a dialog (its own width, scrollable, pinch-zoomable);
// - search summaries are taken from the text, not from charts or tables of contents;
// - a list item's evidence, folded on a phone (evidence.py), is open on a wider screen in a browser whose
//   CSS cannot show a closed <details> (no ::details-content); elsewhere book-site.css alone does it;
// - a link to an id inside a closed <details> (a section's {evidence} fold) opens it, in browsers that do not
//   do so themselves (Chromium does).
(function () {
  "use strict";

  const SCROLLERS = [
    ".bd-article pre",
    ".bd-article .pst-scrollable-table-container",
    ".bd-article .book-chart-scroll",
  ].join(", ");
  const HINTS = {
    table: "⇆ 表格比屏幕宽，可以左右滑动（第一列不动）",
    chart: "⇆ 图比屏幕宽，可以左右滑动，或者点「全屏查看」",
    drawing: "⇆ 图比屏幕宽，可以左右滑动",
    code: "⇆ 可以左右滑动",
  };
  let serial = 0;

  function kind(el) {
    if (el.classList.contains("book-chart-scroll")) return "chart";
    if (el.classList.contains("mermaid")) return "drawing"; // drawn in the browser (no build-time SVG)
    if (el.classList.contains("pst-scrollable-table-container")) return "table";
    return "code";
  }

  function hintFor(el) {
    const id = el.getAttribute("aria-describedby");
    let hint = id && document.getElementById(id);
    if (hint) return hint;
    hint = document.createElement("p");
    hint.className = "book-overflow-hint book-overflow-hint-" + kind(el);
    hint.id = "book-overflow-hint-" + ++serial;
    hint.textContent = HINTS[kind(el)];
    // Above the block, outside a code block's frame (where the copy button sits); a code block's hint sits
    // in the frame's bottom margin instead, on a phone (book-site.css), so it costs no line of its own.
    const anchor = el.parentElement && el.parentElement.classList.contains("highlight") ? el.parentElement : el;
    anchor.parentElement.insertBefore(hint, anchor);
    el.setAttribute("aria-describedby", hint.id);
    return hint;
  }

  function check(el) {
    if (el.clientWidth === 0) return; // hidden (closed details, inactive tab): checked when shown
    const wide = el.scrollWidth > el.clientWidth + 1;
    if (wide) {
      hintFor(el).hidden = false;
      el.setAttribute("tabindex", "0"); // scrollable with the keyboard
    } else if (el.hasAttribute("aria-describedby")) {
      hintFor(el).hidden = true;
    }
    el.setAttribute("data-book-overflow", wide ? "true" : "false");
  }

  function watchOverflow() {
    const blocks = Array.from(document.querySelectorAll(SCROLLERS));
    if ("ResizeObserver" in window) {
      // Called once per block after the first layout (not before DOMContentLoaded: no forced layout),
      // then whenever a block's size changes: a window resized, a tab or a <details> opened.
      const ro = new ResizeObserver((entries) => entries.forEach((e) => check(e.target)));
      blocks.forEach((el) => ro.observe(el));
    } else {
      window.addEventListener("load", () => blocks.forEach(check));
      window.addEventListener("resize", () => blocks.forEach(check));
    }
  }

  // -- charts, full-size -------------------------------------------------------------------------
  function openChart(button) {
    const chart = button.closest(".book-chart");
    const svg = Array.from(chart.querySelectorAll("svg")).find((s) => s.getClientRects().length > 0);
    if (!svg) return;
    const dialog = document.createElement("dialog");
    dialog.className = "book-chart-dialog";
    dialog.setAttribute("aria-label", button.getAttribute("data-title") || "图");
    const close = document.createElement("button");
    close.type = "button";
    close.className = "book-chart-close";
    close.textContent = "关闭";
    close.addEventListener("click", () => dialog.close());
    const body = document.createElement("div");
    body.className = "book-chart-dialog-body";
    const copy = svg.cloneNode(true);
    copy.removeAttribute("id"); // the drawing's styles are scoped by id: keep them working on the copy
    copy.querySelectorAll("style").forEach((st) => {
      st.textContent = st.textContent.split("#" + svg.id).join(".book-chart-dialog-body > svg");
    });
    copy.style.minWidth = "";
    copy.style.maxWidth = "none";
    copy.style.width = (svg.viewBox.baseVal && svg.viewBox.baseVal.width) + "px";
    body.appendChild(copy);
    dialog.append(close, body);
    dialog.addEventListener("close", () => dialog.remove());
    document.body.appendChild(dialog);
    dialog.showModal();
  }

  // -- search summaries: the text, without charts or tables of contents ------------------------
  function cleanSearchSummaries() {
    if (typeof Search === "undefined" || !Search.htmlToText || Search._bookClean) return;
    const original = Search.htmlToText;
    const drop = "#jb-print-docs-body, .toctree-wrapper, .mermaid, .book-chart, .book-overflow-hint, .book-no-search";
    Search.htmlToText = (htmlString, anchor) => {
      const doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll(drop).forEach((el) => el.remove());
      // a label can be an empty marker before its heading (<span id=…></span>): summarise its section
      const marker = anchor && doc.querySelector(`[role="main"] ${anchor}`);
      if (marker && !marker.textContent.trim()) {
        const section = marker.closest("section");
        anchor = section && section.id ? "#" + section.id : "";
      }
      return original(doc.documentElement.outerHTML, anchor);
    };
    // a page without text to summarise gets no summary (Sphinx 7.4 would append null and throw)
    const summary = Search.makeSearchSummary;
    Search.makeSearchSummary = (...args) => summary(...args) || document.createTextNode("");
    Search._bookClean = true;
  }

  // -- a list item's evidence: unfolded wider than a phone, where CSS cannot do it -------------
  function unfoldEvidenceWithoutCss() {
    if (!window.CSS || !CSS.supports || CSS.supports("selector(::details-content)")) return;
    const wide = window.matchMedia("(min-width: 641px)");
    const apply = () => {
      if (wide.matches) document.querySelectorAll("details.book-evidence").forEach((d) => { d.open = true; });
    };
    apply();
    if (wide.addEventListener) wide.addEventListener("change", apply);
  }

  // -- a link into a fold opens it ---------------------------------------------------------------
  function openToTarget() {
    let id = "";
    try {
      id = decodeURIComponent(window.location.hash.slice(1));
    } catch (e) {
      return;
    }
    const target = id && document.getElementById(id);
    if (!target) return;
    let opened = false;
    for (let d = target.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) {
      if (!d.open) {
        d.open = true;
        opened = true;
      }
    }
    if (opened) target.scrollIntoView();
  }

  function start() {
    watchOverflow();
    openToTarget();
    window.addEventListener("hashchange", openToTarget);
    unfoldEvidenceWithoutCss();
    document.addEventListener("click", (ev) => {
      const button = ev.target.closest && ev.target.closest(".book-chart-open");
      if (button) openChart(button);
    });
    cleanSearchSummaries();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
