// Ranking of the book's search results (html_search_scorer, capture/sphinxext/site/search.py).
// Sphinx puts this file into language_data.js, before searchtools.js, which keeps a Scorer it finds.
// The weights are Sphinx 7.4's defaults; `score` moves results by the kind of page they are on:
// the chapters first, then the front page, the developer notes, the appendix, the generated API pages.
var Scorer = {
  score: (result) => {
    const [docname, , , , score] = result;
    if (docname.startsWith("api/")) return score - 40;
    if (docname.startsWith("appendix/")) return score - 30;
    if (docname.startsWith("dev/")) return score - 20;
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
