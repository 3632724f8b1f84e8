"""{num}`expression | style`: a recorded value in a sentence, from the platform the text is about.

    {num}`median(burn-chain8@gpu:chain8.device.median)`            -> 0.41 ms
    {num}`range(torch-ret@gpu:ret.synced)`                          -> 0.82–1.36 ms
    {num}`median(a@gpu:x) / median(b@gpu:y) | ratio`                -> 2.1 倍
Styles: ratio, percent, approx (prefix 约), digits=N, decimal (bytes in powers of 1000, as an output printed them).

The platform is the one the enclosing block names ({per-platform}, a claim's :platform:) or the
page's front matter `book_platform`. A figure never comes from another machine: where that
platform lacks the record, the sentence says so (（此平台未测）).
"""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxRole

from capture.evidence.fmt import fmt_value
from capture.sphinxext.common import book, depend, differs_option, report_answer, scope, stale_mark, value_node, warn

NO_SCOPE = ("{role} names no platform: put the sentence in a {{per-platform}} block, give its claim a "
            ":platform:, or set book_platform in the page's front matter")


def split_style(text: str) -> tuple[str, dict]:
    expr, _, style = text.partition("|")
    opts = {}
    for s in style.split(","):
        s = s.strip()
        if not s:
            continue
        k, _, v = s.partition("=")
        opts[k.strip()] = v.strip() or True
    return expr.strip(), opts


def render_value(v, opts) -> str:
    if getattr(v, "v", 0) is None and getattr(v, "why", ""):
        return "说不清"  # a verdict the measurements cannot decide (capture/evidence/verdict.py)
    style = "ratio" if opts.get("ratio") else "percent" if opts.get("percent") else "decimal" if opts.get("decimal") else ""
    digits = int(opts.get("digits", 3 if not opts.get("ratio") else 2))
    text = fmt_value(v, digits=digits, style=style)
    return ("约 " + text) if opts.get("approx") else text


def said(env, value, text: str) -> str:
    """A recorded word (an outcome such as `silent: read 0`) in the reader's words, from conf.py's
    `book_recorded_words`; a text not listed there (an error message) stays as the program wrote it."""
    raw = getattr(value, "v", None)
    words = env.app.config.book_recorded_words or {}
    return words.get(raw, text) if isinstance(raw, str) else text


def scoped_platform(role, env, b, where):
    """The platform a role in running text draws from, or None after warning why there is none."""
    plat = scope(env)
    if not plat:
        warn(NO_SCOPE.format(role=role), where, "scope")
        return None
    if plat not in b.platforms() and plat != b.local:
        warn(f"{role}: platform {plat!r} has no fragments (captured: {', '.join(b.platforms())})", where, "scope")
        return None
    return plat


def na(rawtext: str, text: str, title: str) -> nodes.Node:
    from capture.sphinxext.reader import tip

    return tip(text, title, ["book-num", "book-na"])


class NumRole(SphinxRole):
    def run(self):
        b = book(self.env)
        expr, opts = split_style(self.text)
        where = self.get_location()
        plat = scoped_platform("{num}", self.env, b, where)
        if plat is None:
            return [na(self.rawtext, "（未指明平台）", expr)], []
        try:
            differs = differs_option(str(opts.get("differs", "")).replace("+", " "))
        except ValueError as e:
            warn(f"{{num}} {expr}: {e}", where, "format")
            differs = ()
        ans = b.answer(expr, plat, differs)
        report_answer(ans, where, f"{{num}} {expr}")
        try:
            depend(self.env, b, b.refs(expr), [plat])
        except Exception:  # noqa: BLE001 - the answer already carries the error
            pass
        if ans.error and not ans.no_record:
            return [na(self.rawtext, "（？）", ans.error)], []
        if ans.no_record:
            return [na(self.rawtext, "（此平台未测）", f"{b.label(plat)}: {ans.error}")], []
        if not ans.ok:
            st = ans.blocking
            return [na(self.rawtext, "（此平台未测）", f"{b.label(plat)}: {st.detail}")], []
        try:
            text = render_value(ans.value, opts)
        except (TypeError, ValueError) as e:
            warn(f"{{num}} {expr}: cannot format {ans.value!r}: {e}", where, "format")
            return [na(self.rawtext, "（？）", str(e))], []
        out = [value_node(self.env, b, ans, said(self.env, ans.value, text), self.rawtext)]
        raw = getattr(ans.value, "v", None)
        if isinstance(raw, str) and out[0].astext() != text:  # the program's own words, one hover away
            out[0]["reftitle"] = f"程序记下的是「{raw}」。" + out[0].get("reftitle", "")
        mark = stale_mark(b, ans.states)
        return out + ([mark] if mark is not None else []), []
