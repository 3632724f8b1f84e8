// Ranking and splitting of the book's search (html_search_scorer, capture/sphinxext/site/search.py).
// Sphinx puts this file into language_data.js, loaded after searchtools.js on the search page; its
// `var Scorer` and `var splitQuery` replace the defaults, which are only read when a query runs.
// The build puts BOOK_TERMS in front of this file: each term of docs/terms.toml (Chinese, and English in
// lower case) -> [page, label] of the section that introduces it.
var BOOK_TERMS = typeof BOOK_TERMS === "undefined" ? {} : BOOK_TERMS;

// The weights are Sphinx 7.4's defaults; `score` moves results by the kind of page they are on:
// the chapters first, then the front page, the appendix, the generated API pages (the notes for authors are not
// in the index: book_author_pages).
// A query that is one of the book's terms puts the page that introduces it first, linked to that section.
var Scorer = {
  score: (result) => {
    const [docname, , anchor, , score] = result;
    const query = (new URLSearchParams(window.location.search).get("q") || "").trim().toLowerCase();
    const intro = BOOK_TERMS[query];
    if (intro && intro[0] === docname) {
      if (!anchor) result[2] = "#" + intro[1];
      return score + 50;
    }
    if (docname.startsWith("api/")) return score - 40;
    if (docname.startsWith("dev/")) return score - 30;
    if (docname.startsWith("appendix/")) return score - 5;
    if (docname === "index") return score - 2;
    return score;
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};

// Chinese has no spaces: a run of Chinese the index does not know as one word (矩阵乘法) is cut into the
// longest words it does know (矩阵乘 + 法), the way jieba cut the pages; single characters are left out,
// as the index leaves them out.
var splitQuery = (query) => {
  const index = typeof Search !== "undefined" && Search._index ? Search._index : null;
  const known = (w) => index && (w in index.terms || w in index.titleterms);
  const out = [];
  query.split(/[^\p{L}\p{N}_\p{Emoji_Presentation}]+/gu).filter((w) => w).forEach((word) => {
    if (!/[\u3400-\u9fff]/.test(word) || known(word) || !index) {
      out.push(word);
      return;
    }
    let i = 0;
    while (i < word.length) {
      let j = Math.min(word.length, i + 8);
      while (j > i + 1 && !known(word.slice(i, j))) j -= 1;
      if (j > i + 1) out.push(word.slice(i, j));
      i = j;
    }
  });
  return out;
};
