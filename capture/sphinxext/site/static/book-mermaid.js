// Renders the book's <pre class="mermaid"> charts with the classic mermaid build
// (_static/mermaid/mermaid.min.js, loaded before this file as a plain deferred script).
// Plain scripts also run on file:// pages, where browsers refuse ES modules.
// See capture/sphinxext/mermaid_assets.py and docs/dev/site.md.
(function () {
  "use strict";
  const FONTS =
    'system-ui, "PingFang SC", "Hiragino Sans GB", "Noto Sans CJK SC", "Source Han Sans SC", "Microsoft YaHei", sans-serif';
  const sources = new WeakMap(); // chart element -> its mermaid source
  let drawnWith = null; // the mermaid theme of the charts drawn so far

  function theme() {
    return document.documentElement.dataset.theme === "dark" ? "dark" : "default";
  }

  // Charts inside a closed <details> or an inactive tab have no size yet; mermaid would
  // lay them out at zero width. They are drawn when they become visible.
  function visible(el) {
    return el.getClientRects().length > 0;
  }

  async function render(force) {
    const todo = [];
    document.querySelectorAll("pre.mermaid").forEach((el) => {
      if (!sources.has(el)) sources.set(el, el.textContent);
      const done = el.getAttribute("data-processed") === "true";
      if ((done && !force) || !visible(el)) return;
      if (done) {
        el.removeAttribute("data-processed");
        el.textContent = sources.get(el);
      }
      todo.push(el);
    });
    if (todo.length === 0) return;
    drawnWith = theme();
    window.mermaid.initialize({ startOnLoad: false, theme: drawnWith, fontFamily: FONTS });
    try {
      await window.mermaid.run({ nodes: todo });
    } catch (err) {
      console.error("mermaid:", err);
    }
  }

  let queue = Promise.resolve();
  function schedule(force) {
    queue = queue.then(() => render(force));
  }

  function start() {
    if (!window.mermaid) {
      console.error("mermaid: _static/mermaid/mermaid.min.js did not load; charts stay as text");
      return;
    }
    schedule(false);
    document.addEventListener("toggle", () => schedule(false), true); // <details> opened
    document.addEventListener("change", () => schedule(false), true); // sphinx-design tab chosen
    // The theme's light/dark switch: redraw when the resolved theme really changed.
    new MutationObserver(() => {
      if (drawnWith !== null && theme() !== drawnWith) schedule(true);
    }).observe(document.documentElement, {
      attributes: true,
      attributeFilter: ["data-theme"],
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
