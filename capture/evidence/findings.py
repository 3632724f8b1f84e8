"""A chapter's findings, and each machine's answer to them: what the page 「你的机器和本书的机器」 lists.

A finding is one yes/no question a chapter answers from the records: a claim, a verdict-matrix row (for each
role), a chart branch, a {cmp} comparison and a records-table ratio cell that shows its verdict, exactly the
expressions capture/evidence/share.py counts (verdict_expressions), here with the words a reader knows them by
(the claim's sentence, the matrix's question, the two names of a comparison) and the section they are in.
On a platform, a finding is answered yes, no, about the same (within a factor), cannot tell, or not measured
there, by the one rule (capture/evidence/book.py, capture/evidence/verdict.py); `compare` sets the reader's
answer beside the book's machines' answers: the same, different, or nothing to compare.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from capture.evidence.book import Book
from capture.evidence.share import split_ratio
from capture.system import regular

_LABEL = re.compile(r"^\((?P<label>[A-Za-z0-9_.:-]+)\)=\s*$")
_HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<title>.+?)\s*$")
_OPEN = re.compile(r"^\s*(?P<fence>:{3,}|`{3,})\{(?P<name>[a-z][a-z-]*)\}\s*(?P<arg>.*?)\s*$")
_CLOSE = re.compile(r"^\s*(:{3,}|`{3,})\s*$")
_OPTION = re.compile(r"^\s*:(?P<name>[a-z-]+):\s*(?P<value>.*?)\s*$")
_CMP = re.compile(r"\{cmp\}`([^`]+)`")
_CHART = re.compile(r"""\{%\s*(?:el)?if\s+(?P<fn>holds|fails)\(\s*(['"])(?P<expr>.*?)\2\s*\)\s*%\}(?P<text>[^{]*)""")
_ROLE = re.compile(r"\{(?P<role>[a-z-]+)\}`(?P<body>[^`]*)`")
_TOCTREE = re.compile(r"```\{toctree\}\n(?P<body>.*?)```", re.S)


@dataclass(frozen=True)
class Finding:
    page: str  # the page's docname: "eager"
    line: int  # where it is written (1-based)
    kind: str  # claim | matrix | chart | cmp | table
    expr: str  # the yes/no expression (a comparison `A vs B` as `(A) < (B)`)
    what: str  # in the reader's words: the claim's sentence, the question, the chart's branch, the table cell
    section: str = ""  # the label of the section it is in ("eager-drop"), "" before the first label
    title: str = ""  # that section's heading
    names: tuple[str, str, str] = ()  # a {cmp} or a ratio cell: the two sides' names and the kind (time, rate, ...)
    otherwise: str = ""  # a chart branch: what the chart says when the answer is no

    @property
    def where(self) -> str:
        return f"{self.page}.md:{self.line}"


def chapters(docs: Path) -> list[str]:
    """The chapters: the pages the front page's first toctree (正文) lists, in order."""
    try:
        text = regular.read_text(docs / "index.md")
    except OSError:
        return []
    m = _TOCTREE.search(text)
    if not m:
        return []
    return [ln.strip().lstrip("/") for ln in m.group("body").splitlines()
            if ln.strip() and not ln.strip().startswith(":")]


def page_label(docs: Path, page: str) -> str:
    """The label of the page's title (the one before its first heading), or ""."""
    label = ""
    for line in regular.read_text(docs / f"{page}.md").splitlines():
        if m := _LABEL.match(line):
            label = m.group("label")
        elif _HEADING.match(line):
            return label
        elif line.strip():
            label = ""
    return ""


def plain(text: str) -> str:
    """A line of MyST as plain words: roles keep their text ({vol}`Dispatch <burn:dispatch>` -> Dispatch), a figure
    ({num}, {meta}, {cmp}) becomes …, and code loses its backticks."""
    def role(m):
        if m.group("role") in ("num", "meta", "cmp", "drift"):
            return "…"
        return re.sub(r"\s*<[^>]*>$", "", m.group("body"))

    return re.sub(r"\s+", " ", _ROLE.sub(role, text).replace("`", "")).strip()


def of_page(docs: Path, page: str) -> list[Finding]:
    """Every finding of one page, in the order the page has them."""
    lines = regular.read_text(docs / f"{page}.md").splitlines()
    out: list[Finding] = []
    section = title = ""
    pending_label = ""
    matrix = table = None  # (title) of the open directive, while its options are read
    table_rows: list[tuple[str, str]] = []
    for n, line in enumerate(lines, 1):
        if m := _LABEL.match(line):
            pending_label = m.group("label")
            continue
        if (m := _HEADING.match(line)) and not line.startswith("#!"):
            if pending_label:
                section, title = pending_label, plain(m.group("title"))
            pending_label = ""
        elif line.strip():
            pending_label = ""
        at = dict(page=page, line=n, section=section, title=title)
        if m := _OPEN.match(line):
            name, arg = m.group("name"), m.group("arg")
            if name == "claim":
                out.append(Finding(kind="claim", expr=arg, what=_claim_text(lines, n), **at))
            elif name == "verdict-matrix":
                matrix = plain(arg)
            elif name == "records-table":
                table, table_rows = plain(arg), []
            continue
        if (m := _OPTION.match(line)) is not None:
            opt, value = m.group("name"), m.group("value")
            if matrix is not None and opt == "rows":
                for part in value.split(";"):
                    label, _, expr = part.partition("=")
                    for role in ("cpu", "gpu"):
                        out.append(Finding(kind="matrix", expr=expr.strip().replace("{role}", role),
                                           what=f"{plain(label)}（{ROLE_WORDS[role]}）", **at))
                matrix = None
            if table is not None and opt == "rows":
                table_rows = [(plain(lbl), key.strip()) for lbl, _, key in (p.partition("=") for p in value.split(";"))]
            if table is not None and opt == "columns":
                for part in value.split(";"):
                    label, _, cell = part.partition("=")
                    expr, _, style = cell.partition("|")
                    faster = re.search(r"faster=([^,]+)", style)
                    if faster and (sides := split_ratio(expr.strip())):
                        a, _, b = faster.group(1).strip().partition("/")
                        for row, key in table_rows:
                            out.append(Finding(kind="table", expr=f"({sides[0]}) < ({sides[1]})".replace("{row}", key),
                                               what=f"{table}：{plain(label)}（{row}）" if table else f"{plain(label)}（{row}）",
                                               names=(a.strip(), b.strip(), "time"), **at))
                table = None
            continue
        if matrix is not None or table is not None:
            matrix = table = None  # the options are over (a directive without the expected ones)
        for cm in _CHART.finditer(line):
            if cm.group("fn") == "holds":
                no = re.search(r"""fails\(\s*(['"])""" + re.escape(cm.group("expr")) + r"""\1\s*\)\s*%\}(?P<text>[^{]*)""", line)
                out.append(Finding(kind="chart", expr=cm.group("expr"), what=plain(cm.group("text")),
                                   otherwise=plain(no.group("text")) if no else "", **at))
            elif not re.search(r"""holds\(\s*(['"])""" + re.escape(cm.group("expr")) + r"""\1""", line):
                out.append(Finding(kind="chart", expr=f"not ({cm.group('expr')})", what=plain(cm.group("text")), **at))
        for cm in _CMP.finditer(line):
            exprs, _, opts = cm.group(1).partition("|")
            a, vs, b = exprs.partition(" vs ")
            if not vs:
                continue
            named = dict((k.strip(), v.strip()) for k, _, v in (o.partition("=") for o in opts.split(",")) if k.strip())
            names = (named.get("a", "A"), named.get("b", "B"), named.get("kind", "time"))
            out.append(Finding(kind="cmp", expr=f"({a.strip()}) < ({b.strip()})",
                               what=f"{names[0]} 和 {names[1]}", names=names, **at))
    return out


ROLE_WORDS = {"cpu": "CPU 一侧", "gpu": "GPU 一侧"}


def _claim_text(lines: list[str], n: int) -> str:
    """The sentence of the claim opened at line n (1-based): its body, options left out."""
    body = []
    for line in lines[n:]:
        if _CLOSE.match(line) or _OPEN.match(line):
            break
        if not body and _OPTION.match(line):
            continue
        body.append(line.strip())
    return plain(" ".join(body))


def of_chapters(docs: Path) -> dict[str, list[Finding]]:
    return {page: of_page(docs, page) for page in chapters(docs) if (docs / f"{page}.md").is_file()}


# -- answers -----------------------------------------------------------------------------------------
YES, NO, ABOUT, UNDECIDED, UNTESTED = "yes", "no", "about", "undecided", "untested"


@dataclass(frozen=True)
class Reply:
    platform: str
    word: str  # yes | no | about | undecided | untested
    why: str = ""  # the comparison that decided it (English, capture/evidence/query.py), or why there is no answer
    same: float | None = None  # about: within this factor
    stale: bool = False  # read from a fragment of an older version of the code
    states: tuple = field(default=(), compare=False)

    @property
    def decided(self) -> bool:
        return self.word in (YES, NO)


def reply(book: Book, finding: Finding, platform: str) -> Reply:
    """The platform's answer to the finding."""
    ans = book.answer(finding.expr, platform)
    if ans.error and not ans.no_record:
        return Reply(platform, UNTESTED, ans.error, states=ans.states)
    if ans.no_record or not ans.ok:
        st = ans.blocking
        return Reply(platform, UNTESTED, ans.error or (st.detail if st else ""), states=ans.states)
    v = getattr(ans.value, "v", ans.value)
    why = getattr(ans.value, "why", "")
    stale = bool(ans.stale)
    if v is True:
        return Reply(platform, YES, why, stale=stale, states=ans.states)
    if v is False:
        return Reply(platform, NO, why, stale=stale, states=ans.states)
    same = getattr(ans.value, "same", None)
    if v is None and same:
        return Reply(platform, ABOUT, why, same, stale, ans.states)
    if v is None:
        return Reply(platform, UNDECIDED, why, stale=stale, states=ans.states)
    return Reply(platform, UNTESTED, f"the expression gives {v!r}, not yes or no", states=ans.states)


SAME, DIFFERENT, SPLIT, OPEN, ALONE, NONE = "same", "different", "split", "open", "alone", "none"


def compare(mine: Reply, theirs: list[Reply]) -> str:
    """The reader's answer against the book's machines' answers:
    same (every book machine that decided says what yours says), different (none of them does), split (the book's
    machines differ among themselves, and yours is one of their answers), open (yours is about the same or cannot
    tell), alone (yours decided, no book machine did), none (your machine did not measure it)."""
    if mine.word == UNTESTED:
        return NONE
    if not mine.decided:
        return OPEN
    decided = [r.word for r in theirs if r.decided]
    if not decided:
        return ALONE
    if all(w == mine.word for w in decided):
        return SAME
    if all(w != mine.word for w in decided):
        return DIFFERENT
    return SPLIT


@dataclass
class Row:
    finding: Finding
    mine: Reply
    theirs: list[Reply]

    @property
    def verdict(self) -> str:
        return compare(self.mine, self.theirs)


def rows(book: Book, findings: list[Finding]) -> list[Row]:
    """Each finding with the reader's answer and the book's machines' (none when there is no reader's machine)."""
    if not book.reader:
        return []
    others = [p for p in book.book_platforms() if p != book.reader]
    return [Row(f, reply(book, f, book.reader), [reply(book, f, p) for p in others]) for f in findings]


def counts(rows_: list[Row]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows_:
        out[r.verdict] = out.get(r.verdict, 0) + 1
    return out
