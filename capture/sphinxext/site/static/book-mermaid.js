// The browser fallback for charts (capture/sphinxext/site/mermaid.py): used only on pages built without
// Chromium, whose charts are still <pre class="mermaid">source</pre>. The 3.6 MB mermaid build is loaded
// when a chart comes near the viewport, as a plain script (also fine on file://, where browsers refuse
// ES modules); each visible chart is drawn in the reader's mode, and again when the mode changes.
// Charts in a closed <details> or an inactive tab have no size yet: they are drawn when shown.
(function () {
  "use strict";
  const FONTS =
    'system-ui, -apple-system, "Segoe UI", "PingFang SC", "Hiragino Sans GB", "Noto Sans CJK SC", "Source Han Sans SC", "Microsoft YaHei", sans-serif';
  const READABLE_PX = 11; // as the build draws them: text never smaller than this
  const here = document.currentScript && document.currentScript.src;
  const library = here ? here.replace(/book-mermaid\.js(\?.*)?$/, "mermaid/mermaid.min.js") : "_static/mermaid/mermaid.min.js";
  const sources = new WeakMap(); // chart element -> its mermaid source
  let drawnWith = null; // the mermaid theme of the charts drawn so far
  let loading = null;

  function theme() {
    return document.documentElement.dataset.theme === "dark" ? "dark" : "default";
  }

  function load() {
    if (window.mermaid) return Promise.resolve();
    if (!loading) {
      loading = new Promise((resolve, reject) => {
        const s = document.createElement("script");
        s.src = library;
        s.onload = resolve;
        s.onerror = () => reject(new Error(library + " did not load; charts stay as text"));
        document.head.appendChild(s);
      });
    }
    return loading;
  }

  function visible(el) {
    return el.getClientRects().length > 0;
  }

  function readable(el) {
    // Shrink with the column only until the text is READABLE_PX; then the chart's box scrolls.
    const svg = el.querySelector("svg");
    const box = svg && svg.viewBox && svg.viewBox.baseVal;
    if (!box || !box.width) return;
    const sizes = Array.from(svg.querySelectorAll("text, foreignObject *"))
      .filter((t) => (t.textContent || "").trim())
      .map((t) => parseFloat(getComputedStyle(t).fontSize) || 16);
    const smallest = sizes.length ? Math.min(...sizes) : 16;
    svg.style.minWidth = Math.ceil(box.width * Math.min(1, READABLE_PX / smallest)) + "px";
  }

  async function render(force) {
    const todo = [];
    document.querySelectorAll("pre.mermaid").forEach((el) => {
      if (!sources.has(el)) sources.set(el, el.textContent);
      const done = el.getAttribute("data-processed") === "true";
      if ((done && !force) || !visible(el) || !el.hasAttribute("data-book-near")) return;
      if (done) {
        el.removeAttribute("data-processed");
        el.textContent = sources.get(el);
      }
      todo.push(el);
    });
    if (todo.length === 0) return;
    try {
      await load();
    } catch (err) {
      console.error("mermaid:", err.message);
      return;
    }
    drawnWith = theme();
    window.mermaid.initialize({ startOnLoad: false, theme: drawnWith, fontFamily: FONTS, flowchart: { htmlLabels: false } });
    try {
      await window.mermaid.run({ nodes: todo });
    } catch (err) {
      console.error("mermaid:", err);
    }
    todo.forEach(readable);
  }

  let queue = Promise.resolve();
  function schedule(force) {
    queue = queue.then(() => render(force));
  }

  function start() {
    const charts = document.querySelectorAll("pre.mermaid");
    if (charts.length === 0) return;
    const near = (el) => {
      el.setAttribute("data-book-near", "");
      schedule(false);
    };
    if ("IntersectionObserver" in window) {
      const io = new IntersectionObserver(
        (entries) => entries.forEach((e) => e.isIntersecting && (io.unobserve(e.target), near(e.target))),
        { rootMargin: "600px 0px" },
      );
      charts.forEach((el) => io.observe(el));
    } else {
      charts.forEach(near);
    }
    document.addEventListener("toggle", () => schedule(false), true); // <details> opened
    document.addEventListener("change", () => schedule(false), true); // sphinx-design tab chosen
    // The theme's light/dark switch: redraw when the resolved theme really changed.
    new MutationObserver(() => {
      if (drawnWith !== null && theme() !== drawnWith) schedule(true);
    }).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
