"""{cmp}`A vs B | a=NAME, b=NAME[, kind=time|rate|size|count][, differs=...]`: a comparison in words, from the records.

    {cmp}`median(candle-mlp@cpu:mlp.step) vs median(burn-mlp@cpu:mlp.step) | a=candle, b=burn`
        -> candle 比 burn 快，用时是 burn 的 31%
        -> candle 比 burn 慢，用时是 burn 的 3.2 倍
        -> candle 和 burn 差不多，相差不到 1.3 倍                          (no order, the ratio bounded)
        -> 分不出 candle 和 burn 哪个快（说不清）                        (the repeats overlap)
        -> 这次 candle 比 burn 快，但差距没有超出前后几次运行之间的波动（说不清）
                                                                       (they agree; the drift keeps it open)

The direction is decided by the engine that decides claims: the role evaluates `(A) < (B)` and
`(A) > (B)` through capture/evidence/book.py (capture/evidence/query.py's comparisons, capture/evidence/verdict.py's rule),
so a page cannot call the shorter time the longer one, and a comparison the rule cannot decide
says so instead of picking a side. The size is the ratio (A) / (B) evaluated the same way and
formatted by capture/evidence/fmt.py, in words that equal the number ("是 B 的 31%", "是 B 的 3.2 倍"; below
10% the other way round, "B 的用时是 A 的 320 倍"). Where the rule cannot order them but bounds their ratio
within a stated factor of at most 2 (verdict.about_same, or every capture of the history in one sitting), the
words say so: "差不多，相差不到 k 倍". "说不清" is what is left: the data bound neither the order nor the gap.

kind: time (default; smaller is faster), rate (larger is faster), size (larger is bigger), count
(larger is more). Platform scoping, stale and missing fragments: exactly as {num} (numbers.py).
"""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxRole

from capture.evidence.fmt import NBSP, fmt_value
from capture.sphinxext.common import book, depend, differs_option, reader_why, report_answer, stale_mark, value_node, warn
from capture.sphinxext.numbers import na, scoped_platform, split_style


CLASS = "book-cmp"  # the strict build's word checks know a clause with this class came from the records (words.py)

# per kind: the word when A is the smaller / the larger value, what the ratio is a ratio of,
# the question the data cannot answer, and the words for exactly equal values
KINDS = {
    "time": {"smaller": "快", "larger": "慢", "noun": "用时", "which": "哪个快", "same": "用时一样"},
    "rate": {"smaller": "慢", "larger": "快", "noun": "速度", "which": "哪个快", "same": "速度一样"},
    "size": {"smaller": "小", "larger": "大", "noun": "", "which": "哪个大", "same": "一样大"},
    "count": {"smaller": "少", "larger": "多", "noun": "", "which": "哪个多", "same": "一样多"},
}
INVERT_BELOW = 0.1  # a ratio under 10% reads better the other way round: "B 的用时是 A 的 320 倍"


class CmpError(ValueError):
    pass


def parse(text: str) -> tuple[str, str, dict]:
    """`A vs B | a=x, b=y, kind=time` -> (A, B, options); a page mistake is a CmpError."""
    exprs, opts = split_style(text)
    parts = exprs.split(" vs ")
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise CmpError("write two expressions separated by ' vs ': {cmp}`A vs B | a=NAME, b=NAME`")
    for side in ("a", "b"):
        if not isinstance(opts.get(side), str) or not opts[side].strip():
            raise CmpError(f"name side {side}: {{cmp}}`A vs B | a=NAME, b=NAME` (the names the sentence uses)")
    kind = opts.get("kind", "time")
    if kind not in KINDS:
        raise CmpError(f"kind={kind} is not one of {', '.join(KINDS)}")
    opts["kind"] = kind
    unknown = set(opts) - {"a", "b", "kind", "differs"}
    if unknown:
        raise CmpError(f"unknown option {', '.join(sorted(unknown))} (a, b, kind, differs)")
    return parts[0].strip(), parts[1].strip(), opts


def direction(lt, gt, about=None) -> str:
    """From the two verdicts of (A) < (B) and (A) > (B): "smaller", "larger", "same", "about" (no order, but the
    ratio bounded within `about`) or "undecided"."""
    if lt is True:
        return "smaller"
    if gt is True:
        return "larger"
    if lt is False and gt is False:
        return "same"  # exact values only: a measurement is never equal to anything
    return "about" if about else "undecided"


class CmpRole(SphinxRole):
    def run(self):
        b = book(self.env)
        where = self.get_location()
        try:
            left, right, opts = parse(self.text)
            differs = differs_option(str(opts.get("differs", "")).replace("+", " "))
        except (CmpError, ValueError) as e:
            warn(f"{{cmp}} {self.text}: {e}", where, "cmp")
            return [na(self.rawtext, "（？）", str(e))], []
        plat = scoped_platform("{cmp}", self.env, b, where)
        if plat is None:
            return [na(self.rawtext, "（未指明平台）", self.text)], []
        kind, name_a, name_b = opts["kind"], opts["a"], opts["b"]
        lt = b.answer(f"({left}) < ({right})", plat, differs)
        report_answer(lt, where, f"{{cmp}} {left} vs {right}")
        try:
            depend(self.env, b, b.refs(lt.expr), [plat])
        except Exception:  # noqa: BLE001 - the answer already carries the error
            pass
        if lt.error and not lt.no_record:
            return [na(self.rawtext, "（？）", lt.error)], []
        if lt.no_record or not lt.ok:
            detail = lt.error if lt.no_record else lt.blocking.detail
            return [na(self.rawtext, "（此平台未测）", f"{b.label(plat)}: {detail}")], []
        gt = b.answer(f"({left}) > ({right})", plat, differs)
        about = getattr(lt.value, "same", None)
        way = direction(getattr(lt.value, "v", None), getattr(gt.value, "v", None), about)
        words = KINDS[kind]
        clause = self.clause(b, plat, differs, left, right, way, words, name_a, name_b, kind, where,
                             getattr(lt.value, "repeats", None), about)
        decided_by = lt if way in ("smaller", "undecided", "about") else gt
        node = _titled(clause, reader_why(getattr(decided_by.value, "why", ""), self.env))
        mark = stale_mark(b, lt.states)
        return [node] + ([mark] if mark is not None else []), []

    def clause(self, b, plat, differs, left, right, way, words, name_a, name_b, kind, where,
               repeats=None, about=None) -> list[nodes.Node]:
        if way == "about":
            return spaced(name_a, "和", name_b, f"差不多，相差不到 {about:g}{NBSP}倍")
        if way == "undecided" and repeats is not None:
            # every repeat of this capture puts them in one order; only the drift between captures keeps it open
            side = words["smaller" if repeats else "larger"]
            return spaced("这次", name_a, "比", name_b, side, "，但差距没有超出前后几次运行之间的波动（说不清）")
        if way == "undecided":
            return spaced("分不出", name_a, "和", name_b, words["which"] + "（说不清）")
        if way == "same":
            return spaced(name_a, "和", name_b, words["same"])
        head = [name_a, "比", name_b, words[way]]
        ratio = b.answer(f"({left}) / ({right})", plat, differs)
        r = getattr(ratio.value, "v", None)
        if ratio.error or not isinstance(r, (int, float)) or isinstance(r, bool) or r <= 0:
            # the direction stands; a ratio without meaning (B is 0, a word) is left out, said in the log
            if ratio.error:
                warn(f"{{cmp}} {left} vs {right}: no size for the comparison: {ratio.error}", where, "cmp")
            return spaced(*head)
        noun = words["noun"]
        if r < INVERT_BELOW:
            inv = b.answer(f"({right}) / ({left})", plat, differs)
            number = value_node(self.env, b, inv, fmt_value(inv.value, style="ratio"))
            return spaced(*head, "，", name_b, f"的{noun}是", name_a, "的", number)
        number = value_node(self.env, b, ratio, fmt_value(ratio.value, style="ratio" if r >= 1 else "percent"))
        return spaced(*head, "，", f"{noun}是", name_b, "的", number)


def spaced(*parts) -> list[nodes.Node]:
    """Words and nodes joined the way the pages write them: a space between Chinese and Latin letters or
    digits ("candle 比 burn 快"), none between Chinese words ("同步比返回慢") or around Chinese punctuation."""
    out: list[nodes.Node] = []
    prev = ""
    for part in parts:
        text = part if isinstance(part, str) else part.astext()
        if prev and text and (_latin(prev[-1]) or _latin(text[0])) and prev[-1] not in _CJK_PUNCT \
                and text[0] not in _CJK_PUNCT:
            out.append(nodes.Text(" "))
        out.append(nodes.Text(part) if isinstance(part, str) else part)
        prev = text or prev
    return out


_CJK_PUNCT = "，。：；（）、"


def _latin(ch: str) -> bool:
    return ch.isascii() and not ch.isspace()


def _titled(children: list[nodes.Node], why: str) -> nodes.Node:
    from capture.sphinxext.reader import titled

    node = titled("", "", *children, classes=[CLASS])
    if why:
        node["title"] = why
    return node
