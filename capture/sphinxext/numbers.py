"""{num}`expression | style`: a recorded value in a sentence, formatted, with its provenance as a tooltip and link.

    {num}`median(burn-chain8@gpu:chain8.device.median)`            -> 0.41 ms
    {num}`range(torch-ret@gpu:ret.synced)`                          -> 0.82–1.36 ms
    {num}`median(a@gpu:x) / median(b@gpu:y) | ratio`                -> 2.1 倍
Styles: ratio, percent, approx (prefix 约), digits=N.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxRole

from capture.fmt import fmt_value
from capture.query import MissingData, QueryError, parse_refs
from capture.sphinxext.common import book, fragment_href, logger, page_platform, platform_label, provenance


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
    style = "ratio" if opts.get("ratio") else "percent" if opts.get("percent") else ""
    digits = int(opts.get("digits", 3 if not opts.get("ratio") else 2))
    text = fmt_value(v, digits=digits, style=style)
    return ("约 " + text) if opts.get("approx") else text


def choose_platform(b, env, options, expr) -> tuple[str | None, list[str]]:
    plat = page_platform(env, options)
    have = b.platforms_with(expr)
    if plat:
        return (plat if plat in have else None), have
    return (have[0] if have else None), have


class NumRole(SphinxRole):
    def run(self):
        b = book(self.env)
        expr, opts = split_style(self.text)
        where = (self.env.docname, self.lineno)
        refs = parse_refs(expr)[1]
        wanted = page_platform(self.env, {})
        candidates = [wanted] if wanted else b.platforms_with(expr) if refs else []
        v = plat = None
        errors = []
        for p in candidates:  # the first platform whose records answer it
            try:
                v, plat = b.evaluate(expr, p), p
                break
            except MissingData as e:
                errors.append(str(e))
            except QueryError as e:
                errors.append(str(e))
                break
        if plat is None:
            if not candidates and refs and all(b.expected_absent(r.exp, r.role) for r in refs):
                return [nodes.inline(self.rawtext, "（未测）", classes=["book-num", "book-na"])], []
            why = "; ".join(errors) or f"no captured platform has all the fragments of {expr!r}"
            cmds = "; ".join(sorted({f"nox -s regenerate -- --only {r.exp} --device {r.role}" for r in refs}))
            logger.warning(f"{{num}} {expr}: {why}; regenerate with: {cmds}", location=where, type="capture", subtype="num")
            return [nodes.inline(self.rawtext, "（未测）", classes=["book-num", "book-num-missing"])], []
        for r in parse_refs(expr)[1]:
            for suffix in (".json",):
                p = b.layout.fragments / plat / f"{r.key}{suffix}"
                if p.exists():
                    self.env.note_dependency(str(p))
        text = render_value(v, opts)
        srcs = getattr(v, "sources", ())
        first = b.fragment(plat, srcs[0]) if srcs else None
        title = f"{platform_label(plat)} · {expr}" + (f" · {provenance(first)}" if first else "")
        ref = nodes.reference(self.rawtext, text, refuri=fragment_href(self.env, plat, srcs[0], "json") if srcs else "#",
                              classes=["book-num"], reftitle=title)
        return [ref], []
