"""The book's terms, from one file (docs/terms.toml, `book_terms`): the glossary, the words pages avoid.

- `{glossary-table}`: the reader's table (术语、英文、在哪一节引入、意思), in the file's order; `{glossary-table} authors`:
  the authors' list (docs/dev/terms.md), with the words the book does not use and the Latin names it may write.
- Each term's `at` names the labelled section that introduces it: an unknown label, or a page where the
  term does not appear, is a warning (the search ranks that page first for the term: search.py).
- On the reader pages (`book_scope_pages` and the appendix), a word of a term's `avoid` list in the prose
  (code left out) is a warning that names the page, the line and the word to write instead.
- One term per idea: a term's `variants` (other names for the same idea, e.g. «eager» for 即时执行) may appear on
  a reader page only in parentheses right after the term, where the page tells the reader the other name
  (「即时执行（eager）」); anywhere else it is a finding (capture/sphinxext/words.py: a warning, or a log line
  on a page in `book_words_pending`).
- The same file feeds the Chinese tokenizer (zhsearch.py) and the search's ranking (search.py).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Term:
    zh: str
    en: str
    at: str
    says: str
    avoid: tuple[str, ...] = ()
    line: int = 0
    variants: tuple[str, ...] = ()  # other names for the idea: only in parentheses right after the term

    def patterns(self) -> list[tuple[str, re.Pattern]]:
        """(as written in the file, compiled) for each avoided word: `re:` prefixes a regular expression."""
        return [(a, _compile(a)) for a in self.avoid]

    def variant_patterns(self) -> list[tuple[str, re.Pattern]]:
        return [(a, _compile(a)) for a in self.variants]


def _compile(word: str) -> re.Pattern:
    """`re:` prefixes a regular expression; a Latin word matches as a whole word (eager, not eagerly)."""
    if word.startswith("re:"):
        return re.compile(word[3:])
    if word.isascii():
        return re.compile(rf"(?<![A-Za-z0-9_.\-]){re.escape(word)}(?![A-Za-z0-9_\-])")
    return re.compile(re.escape(word))


@dataclass(frozen=True)
class Terms:
    terms: tuple[Term, ...] = ()
    words: tuple[str, ...] = ()  # tokenizer only
    latin: tuple[str, ...] = ()  # names a reader page may write in Latin script
    queries: tuple[tuple[str, str], ...] = field(default=())


class TermsError(ValueError):
    """docs/terms.toml cannot be used; the message names the file and the entry."""


def load(path: Path) -> Terms:
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise TermsError(f"{path}: {e}") from None
    lines = [i + 1 for i, line in enumerate(text.splitlines()) if line.strip() == "[[term]]"]
    terms = []
    for i, entry in enumerate(data.get("term", [])):
        for key in ("zh", "en", "at", "says"):
            if not str(entry.get(key, "")).strip():
                raise TermsError(f"{path}: term {i + 1} ({entry.get('zh', '?')}) has no {key!r}")
        avoid, variants = entry.get("avoid", []), entry.get("variants", [])
        for name, words in (("avoid", avoid), ("variants", variants)):
            if not isinstance(words, list) or not all(isinstance(a, str) and a for a in words):
                raise TermsError(f"{path}: term {entry['zh']}: {name} is a list of strings")
        term = Term(entry["zh"], entry["en"], entry["at"], entry["says"], tuple(avoid), lines[i] if i < len(lines) else 0,
                    tuple(variants))
        try:
            term.patterns()
            term.variant_patterns()
        except re.error as e:
            raise TermsError(f"{path}: term {entry['zh']}: avoid pattern: {e}") from None
        terms.append(term)
    dup = sorted({t.zh for t in terms if sum(u.zh == t.zh for u in terms) > 1})
    if dup:
        raise TermsError(f"{path}: terms listed twice: {', '.join(dup)}")
    queries = tuple((q["query"], q["first"]) for q in data.get("query", []))
    return Terms(tuple(terms), tuple(data.get("words", {}).get("search", [])),
                 tuple(data.get("latin", {}).get("names", [])), queries)


def terms_path(app: Sphinx) -> Path | None:
    return Path(app.confdir) / app.config.book_terms if app.config.book_terms else None


def book_terms(app: Sphinx) -> Terms:
    """The terms of this build (read once per build; an unusable file is a warning and no terms)."""
    cached = getattr(app, "_book_terms", None)
    if cached is None:
        path = terms_path(app)
        try:
            cached = load(path) if path is not None else Terms()
        except TermsError as e:
            logger.warning(str(e), location=str(path), type="book", subtype="terms")
            cached = Terms()
        app._book_terms = cached
    return cached


# -- the glossary --------------------------------------------------------------------------------
class GlossaryDirective(SphinxDirective):
    optional_arguments = 1
    option_spec = {"class": directives.class_option}

    def run(self):
        path = terms_path(self.env.app)
        if path is not None:
            self.env.note_dependency(str(path))
        t = book_terms(self.env.app)
        authors = (self.arguments or [""])[0].strip() == "authors"
        header = ["术语", "英文", "在哪一节引入", "意思"] + (["不用的说法"] if authors else [])
        table = nodes.table(classes=["book-glossary", "book-records-table"])
        group = nodes.tgroup(cols=len(header))
        table += group
        for _ in header:
            group += nodes.colspec(colwidth=1)
        thead, tbody = nodes.thead(), nodes.tbody()
        group += thead
        group += tbody
        row = nodes.row()
        for h in header:
            row += nodes.entry("", nodes.paragraph(text=h))
        thead += row
        for term in t.terms:
            row = nodes.row()
            ref = addnodes.pending_xref("", nodes.inline(term.at, term.at), refdomain="std", reftype="ref",
                                        reftarget=term.at, refexplicit=False, refwarn=True)
            from capture.sphinxext.reader import tip, with_code

            english = tip(term.en, "")
            english["lang"] = "en"  # the English name, on purpose
            cells = [nodes.strong(text=term.zh), english, ref, nodes.inline("", "", *with_code(term.says))]
            if authors:
                said = [a.removeprefix("re:") for a in term.avoid] + \
                    [f"{v.removeprefix('re:')}（只在「{term.zh}（…）」的括号里）" for v in term.variants]
                cells.append(nodes.Text("、".join(said) or "—"))
            for c in cells:
                row += nodes.entry("", nodes.paragraph("", "", c))
            tbody += row
        out = [table]
        if authors and t.latin:
            para = nodes.paragraph()
            para += nodes.Text("读者页面上可以直接用拉丁字母写的名字：")
            for i, name in enumerate(t.latin):
                if i:
                    para += nodes.Text("、")
                para += nodes.literal(name, name)
            para += nodes.Text("。")
            out.append(para)
        return out


# -- checks ----------------------------------------------------------------------------------------
def _reader_page(app: Sphinx, docname: str) -> bool:
    """The pages a reader reads: the chapters (`book_scope_pages`, capture.sphinxext's) and the appendix."""
    pages = app.config.book_scope_pages if "book_scope_pages" in app.config else [app.config.root_doc]
    return docname in pages or docname.startswith("appendix/") and docname != "appendix/api"


def _prose_texts(doctree):
    """(text node, its paragraph) for the prose of a page: code, literal blocks and raw HTML left out."""
    for t in doctree.findall(nodes.Text):
        parent, skip, para = t.parent, False, None
        while parent is not None:
            if isinstance(parent, (nodes.literal, nodes.literal_block, nodes.raw, nodes.comment)) or \
                    "book-glossary" in parent.get("classes", []):  # the glossary names the avoided words itself
                skip = True
                break
            if para is None and isinstance(parent, (nodes.paragraph, nodes.title, nodes.caption, nodes.rubric)):
                para = parent
            parent = parent.parent
        if not skip:
            yield t, para


def check_avoided(app: Sphinx, doctree, docname: str) -> None:
    """doctree-resolved: the words the book does not use, on its reader pages."""
    if not _reader_page(app, docname):
        return
    terms = book_terms(app).terms
    check_variants(app, doctree, docname, terms)
    pats = [(term, written, pat) for term in terms for written, pat in term.patterns()]
    seen = set()
    for text, para in _prose_texts(doctree):
        s = text.astext()
        for term, written, pat in pats:
            m = pat.search(s)
            if not m:
                continue
            where = para if para is not None and para.line else text.parent
            key = (id(where), written)
            if key in seen:
                continue
            seen.add(key)
            logger.warning(f"«{m.group(0)}» is not a word this book uses ({app.config.book_terms}: {term.zh!r} avoids "
                           f"{written!r}): write «{term.zh}», or change the term list", location=where,
                           type="book", subtype="terms")


def check_variants(app: Sphinx, doctree, docname: str, terms) -> None:
    """One term per idea: a variant only right after its term, in parentheses (「即时执行（eager）」)."""
    from capture.sphinxext.words import report

    pats = [(term, written, pat) for term in terms for written, pat in term.variant_patterns()]
    seen = set()
    for text, para in _prose_texts(doctree):
        s = text.astext()
        for term, written, pat in pats:
            for m in pat.finditer(s):
                if s[:m.start()].endswith((f"{term.zh}（", f"{term.zh}(")):
                    continue  # the page names the other name once, beside the term
                where = para if para is not None and para.line else text.parent
                key = (id(where), written)
                if key in seen:
                    continue
                seen.add(key)
                report(app, docname, f"«{m.group(0)}» is another name for «{term.zh}» ({app.config.book_terms}: "
                       f"variants of {term.zh!r}): one term per idea, write «{term.zh}» (the other name may follow it "
                       f"once in parentheses: 「{term.zh}（{m.group(0)}）」)", where, "terms")


def _found(env) -> dict[str, str]:
    """docname -> its text without white space (recorded when the page is read, kept across incremental builds,
    so that a term added to the file is checked without reading every page again)."""
    if not hasattr(env, "book_terms_found"):
        env.book_terms_found = {}
    return env.book_terms_found


def note_terms(app: Sphinx, doctree) -> None:
    """doctree-read: the page's text (check_at reads this instead of loading every doctree again)."""
    _found(app.env)[app.env.docname] = re.sub(r"\s+", "", doctree.astext())


def purge_terms(app: Sphinx, env, docname: str) -> None:
    _found(env).pop(docname, None)


def merge_terms(app: Sphinx, env, docnames, other) -> None:
    _found(env).update({d: f for d, f in getattr(other, "book_terms_found", {}).items() if d in docnames})


def check_at(app: Sphinx, env) -> None:
    """env-check-consistency: each term's `at` is a label, and the term appears on that label's page."""
    terms = book_terms(app).terms
    if not terms:
        return
    labels = env.domains["std"].labels
    path = str(terms_path(app))
    found = _found(env)
    for term in terms:
        if term.at not in labels:
            logger.warning(f"term {term.zh!r}: at = {term.at!r} is not a label of this book (docs/anchors.txt lists them)",
                           location=f"{path}:{term.line}", type="book", subtype="terms")
            continue
        doc = labels[term.at][0]
        if "".join(term.zh.split()) not in found.get(doc, ""):  # the page text is compared without whitespace
            logger.warning(f"term {term.zh!r} does not appear on {doc!r}, where its at = {term.at!r} says it is "
                           "introduced: use the term there, or point `at` at the section that does",
                           location=f"{path}:{term.line}", type="book", subtype="terms")


def setup(app: Sphinx) -> dict[str, Any]:
    from capture.sphinxext import words

    app.add_config_value("book_terms", "", "env")
    words.add_config(app)  # variants are reported through capture/sphinxext/words.py
    app.add_directive("glossary-table", GlossaryDirective)
    app.connect("doctree-resolved", check_avoided)
    app.connect("doctree-read", note_terms)
    app.connect("env-purge-doc", purge_terms)
    app.connect("env-merge-info", merge_terms)
    app.connect("env-check-consistency", check_at)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
