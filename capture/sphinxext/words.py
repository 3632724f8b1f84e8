"""Words that say no more than the records: the strict build's checks on what the sentences around figures say.

On the reader pages (`book_scope_pages`), each finding is a warning (an error under -W) naming the page and line:

- comparison words: a hand-written direction or size word (快/慢, 还长/更短, 比 … 多, 倍, 一半, 不到, 超过 …) in a
  sentence that holds two or more measured {num} figures. Such words come from {cmp} (comparisons.py), which
  takes them from the same engine that decides claims, so they cannot call the shorter time the longer one;
- assertions the data do not bear out: a claim's body is an assertion, so a claim the data cannot tell on a
  machine where it is expected (its :where:) fails, like one they contradict (claims.py calls `report`);
- one term per idea: a term's `variants` (docs/terms.toml) on a reader page, except in parentheses right after
  the term itself (site/glossary.py calls `report`).

Pages being rewritten are listed in `book_words_pending` (conf.py): there the findings are only printed in the
build log, prefixed "words pending", and the build's end says how many each page still has; a listed page
with none is told it can leave the list.
"""

from __future__ import annotations

import re

from docutils import nodes

from capture.sphinxext.common import logger

# Direction and size words that compare two values (applied to the text the author wrote, never to figures).
COMPARISON = re.compile(
    r"比[^，。；：！？]{0,40}?(?:[快慢长短多少大小高低贵省]|便宜)"  # 比 X 快, 比 burn 的 10.9 s 还长
    r"|[更还][快慢长短多少大小高低贵省]"  # 更快, 还长
    r"|[快慢长短多少大小高低贵]得多|[快慢]了"
    r"|[快慢]"  # 快 / 慢 alone are direction words in any sentence with two timings
    r"|倍|一半|不到|超过|不及|多于|少于|大于|小于|高于|低于|以上|以下|差不多|相当于|接近"
    r"|最[快慢长短多少大小高低贵省]")

# machinery's own text: not the author's words
MACHINERY = {"book-claim-marks", "book-notice", "book-output-more", "book-chart-more", "book-reproduce", "book-glossary",
             "book-records-table", "book-verdict-matrix", "book-platform-table", "book-chart-caption"}
SENTENCE_END = "。！？；"


# -- reporting -----------------------------------------------------------------------------------------
def add_config(app) -> None:
    """`book_words_pending`: registered by whichever extension that reports through here is set up first."""
    if "book_words_pending" not in app.config:
        app.add_config_value("book_words_pending", [], "env")
    if not getattr(app, "_book_words_summary", False):
        app._book_words_summary = True
        app.connect("build-finished", summarise_pending)


def pending(app) -> list[str]:
    return list(app.config.book_words_pending if "book_words_pending" in app.config else [])


def report(app, docname: str, message: str, location, subtype: str) -> None:
    """A finding: a warning, or on a page listed in book_words_pending a line in the build log."""
    if docname in pending(app):
        _counts(app)[docname] = _counts(app).get(docname, 0) + 1
        logger.info(f"words pending ({docname}): {message}", location=location)
    else:
        logger.warning(message, location=location, type="capture", subtype=subtype)


def _counts(app) -> dict:
    if not hasattr(app, "_book_words_pending"):
        app._book_words_pending = {}
    return app._book_words_pending


def summarise_pending(app, exc) -> None:
    """build-finished: how many findings each pending page still has (a page with none can leave the list)."""
    if exc is not None:
        return
    for page in pending(app):
        n = _counts(app).get(page, 0)
        if n:
            logger.info(f"words pending: {page} has {n} finding(s) above (reported, not failing: conf.py "
                        f"book_words_pending); remove {page!r} from the list when it has none")
        elif page in _seen(app):
            logger.info(f"words pending: {page} has no findings: remove {page!r} from book_words_pending in conf.py")


def _seen(app) -> set:
    if not hasattr(app, "_book_words_seen"):
        app._book_words_seen = set()
    return app._book_words_seen


# -- comparison words ------------------------------------------------------------------------------------
def _tokens(node, out: list) -> list:
    """The paragraph in reading order: ("text", s), ("num", measured), ("cmp", s) or ("code", s)."""
    for child in node.children:
        classes = set(child.get("classes", [])) if isinstance(child, nodes.Element) else set()
        if "book-cmp" in classes:
            out.append(("cmp", child.astext()))
        elif "book-num" in classes:
            out.append(("num", "book-measured" in classes, child.astext()))
        elif isinstance(child, (nodes.literal, nodes.math)):
            out.append(("code", child.astext()))
        elif isinstance(child, nodes.Text):
            out.append(("text", child.astext()))
        elif isinstance(child, nodes.Element):
            _tokens(child, out)
    return out


def sentences(para) -> list[list]:
    """The paragraph's tokens cut into sentences (at 。！？； in the author's text)."""
    out, cur = [], []
    for tok in _tokens(para, []):
        if tok[0] != "text":
            cur.append(tok)
            continue
        for piece in re.split(f"(?<=[{SENTENCE_END}])", tok[1]):
            if piece:
                cur.append(("text", piece))
            if piece and piece[-1] in SENTENCE_END:
                out.append(cur)
                cur = []
    if cur:
        out.append(cur)
    return out


def comparison_findings(para) -> list[tuple[str, str]]:
    """(the comparison word, the sentence) for each sentence with a hand-written comparison and two measured figures."""
    found = []
    for sent in sentences(para):
        if sum(1 for t in sent if t[0] == "num" and t[1]) < 2:
            continue
        written = "".join(t[1] if t[0] == "text" else "…" for t in sent if t[0] in ("text", "num"))
        m = COMPARISON.search(written)
        if m:
            found.append((" ".join(m.group(0).split()), " ".join("".join(t[-1] for t in sent).split())))
    return found


def _machinery(node) -> bool:
    parent = node
    while parent is not None:
        if MACHINERY & set(parent.get("classes", [])):
            return True
        parent = parent.parent
    return False


def check_comparisons(app, doctree, docname) -> None:
    """doctree-resolved: hand-written comparison words next to two measured figures, on the reader pages."""
    if docname not in app.config.book_scope_pages:
        return
    _seen(app).add(docname)
    for para in doctree.findall(nodes.paragraph):
        if _machinery(para):
            continue
        for word, sentence in comparison_findings(para):
            report(app, docname,
                   f"hand-written comparison «{word}» beside two measured figures: {sentence[:120]!r} — let the records "
                   "say it: {cmp}`A vs B | a=NAME, b=NAME` (docs/dev/authoring.md), or leave the comparison out",
                   para, "words")
