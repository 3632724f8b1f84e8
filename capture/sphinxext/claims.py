"""{claim} expression: the sentence in the body, then an icon that opens whether each platform's data bear it out.

Options: :where: where the claim is expected to hold (see capture/evidence/claims.py; default all);
:platform: KEY — check it there only, and read the body's figures from there.
Inside a {per-platform} block it is checked on that block's platform only.
"""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from capture.evidence.book import WARN
from capture.evidence.claims import WhereError, judge, parse_where
from capture.plan.manifest import ManifestError
from capture.evidence.query import QueryError
from capture.sphinxext.common import SCOPE, book, depend, differs_option, logger, notice, reader_why, scoped, warn
from capture.sphinxext.words import report


class ClaimDirective(SphinxDirective):
    required_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = {"where": directives.unchanged, "platform": directives.unchanged, "differs": directives.unchanged}

    def run(self):
        b = book(self.env)
        expr = self.arguments[0]
        where = self.get_location()
        only = self.options.get("platform") or ((self.env.temp_data.get(SCOPE) or [None])[-1])
        box = nodes.container(classes=["book-claim"])
        with scoped(self.env, self.options.get("platform")):
            self.state.nested_parse(self.content, self.content_offset, box)
        try:
            tokens = parse_where(self.options.get("where"))
            verdicts = judge(b, expr, tokens, (only,) if only else None, differs_option(self.options.get("differs")))
            pending = None if verdicts else b.pending(expr)
            depend(self.env, b, b.refs(expr))
        except (WhereError, QueryError, ManifestError, ValueError) as e:
            warn(f"claim {expr}: {e} — fix the claim in the page", where, "claim")
            box["classes"].append("book-claim-failed")
            box += notice("claim", f"这条断言写错了：{e}")
            return [box]
        if not verdicts:
            if pending is not None and pending.severity == WARN:
                warn(f"claim {expr}: no captured platform has its data; capture it with: {pending.fix}", where, "claim")
            box["classes"].append("book-claim-pending")
            box += notice("na", "这句话依据的数据还没有在能运行它的机器上捕获，尚未核对。")
            return [box]
        failed = False
        lines, counts, other = [], {"ok": [], "bad": [], "undecided": [], "unknown": [], "skipped": []}, []
        stale = False
        for v in verdicts:
            for u in v.answer.unlike:
                if v.answer.severity != WARN:  # the reader's machine: in the log only
                    logger.info(f"claim on {v.platform} compares unlike things: {u}", location=where)
                    continue
                warn(f"claim on {v.platform} compares unlike things: {u} — make the experiments' conditions agree, or "
                     "say how they differ in the text and add `:differs: CONDITION`", where, "unlike")
            short = b.short_label(v.platform)  # the machine as a reader knows it; its devices go to the log only
            devices = "、".join(sorted(set(d for d in v.devices if d)))
            if v.severity == WARN:
                failed = True
                warn(f"claim not supported on {v.platform} ({devices}): {expr} — {v.why}", where, "claim")
            if v.undecided:
                if v.expected:
                    self.undecided(v, devices, expr, where)
                kind, text = "undecided", f"≈ {short}：说不清"
            elif v.holds is None:
                kind, text = "unknown", f"？ {short}：未能核对"
            elif v.expected and v.holds and skipped_on(b, expr, v.platform):
                kind, text = "skipped", f"· {short}：这台机器跳过了这一步，没有数据"
            elif v.expected:
                kind, text = ("ok", f"✓ {short}：数据支持") if v.holds else ("bad", f"✗ {short}：数据不支持")
            elif v.holds:
                continue  # outside the sentence's scope and true there too: nothing a reader needs
            else:
                kind, text = "other", f"· {short}：这句话说的不是这台机器，这里的数据也确实不支持它"
            (other if kind == "other" else counts[kind]).append(short)
            why = reader_why(v.why, self.env) if v.why and kind != "skipped" else ""
            if v.stale:
                stale = True
                why += ("；" if why else "") + "数据来自这段代码较早的版本"
            lines.append(nodes.paragraph("", f"{text}。{why}" if why else f"{text}。", classes=[f"book-claim-{kind}"]))
        missing = reader_missing(b, expr, verdicts, only)
        if missing is not None:  # the reader's machine could have said, but lacks the data: why, so it is not silent
            short = b.short_label(b.reader)
            counts["unknown"].append(short)
            lines.append(nodes.paragraph("", f"？ {short}：没有测，{missing}。", classes=["book-claim-unknown"]))
        box["classes"].append("book-claim-failed" if failed else "book-claim-checked")
        box.extend(claim_marks(counts, other, stale, lines))
        return [box]

    def undecided(self, v, devices: str, expr: str, where) -> None:
        """The body asserts; where it is expected and the data cannot tell, a reader page must not assert it
        (capture/sphinxext/words.py; docs/dev/authoring.md says what to do instead)."""
        app, docname = self.env.app, self.env.docname
        # the reader's machine (capture/machines/yours.py): what its data cannot tell is said on the page, not a warning
        if docname not in app.config.book_scope_pages or v.platform == book(self.env).reader:
            logger.info(f"claim cannot be decided on {v.platform} ({devices}): {v.why}", location=where)
            return
        report(app, docname,
               f"claim asserts what the data cannot tell on {v.platform} ({devices}): {expr} — {v.why}. Claim what "
               "the data decide (for 'about the same': a < 4 * b and b < 4 * a), narrow :where: to the machines where "
               "it is decided, or take the sentence out of the claim and let {cmp} say 说不清",
               where, "claim")


def reader_missing(b, expr: str, verdicts, only) -> str | None:
    """Why the reader's machine (capture/machines/yours.py) has no verdict on a claim it could have checked: in its
    words (no cargo, a failed run, not captured yet); None when it has one, is out of the claim's scope, or is not
    the kind of machine that runs it (a GPU claim on a machine without one)."""
    from capture.sphinxext.common import could_run
    from capture.sphinxext.reader import detail_words

    mine = b.reader
    if not mine or any(v.platform == mine for v in verdicts) or (only and only != mine):
        return None
    keys = b.refs(expr)
    if not all(could_run(b, mine, [k]) for k in keys):
        return None
    for k in keys:
        st = b.state(mine, k)
        if not st.usable:
            if st.state == "missing":
                return "上一次运行失败" if st.detail.startswith("the run failed there") else "还没有捕获"
            return detail_words(st.detail)
    return None


def skipped_on(b, expr: str, platform: str) -> bool:
    """Whether a record the claim reads is "skipped" on this machine: a claim that holds there only through its
    `== "skipped"` branch has no data behind it, and its mark must not say the data support it."""
    from capture.evidence.query import parse_refs

    _, refs = parse_refs(expr)
    return any(getattr(b.answer(r.text, platform).value, "v", None) == "skipped" for r in refs)


def claim_marks(counts: dict, other: list, stale: bool, lines: list) -> list[nodes.Node]:
    """An icon after the sentence, not a line of marks under it: the marks (how many machines bear it out) are its
    tooltip and the first line it opens, each machine's reasons follow (reader.claim_fold)."""
    from capture.sphinxext.reader import claim_fold

    parts = []
    if counts["bad"]:
        parts.append(f"✗ {'、'.join(counts['bad'])} 的数据不支持")
    if counts["ok"]:
        parts.append(f"✓ {'、'.join(counts['ok'])}")
    if counts["undecided"]:
        parts.append(f"≈ {'、'.join(counts['undecided'])} 说不清")
    if counts["unknown"]:
        parts.append(f"？ {'、'.join(counts['unknown'])} 未能核对")
    if counts["skipped"]:
        parts.append(f"· {'、'.join(counts['skipped'])} 跳过了这一步")
    if other:
        parts.append(f"{'、'.join(other)} 不是这样")
    if not parts:
        return []
    label = "　".join(parts) + ("（旧）" if stale else "")
    cls = "book-claim-bad" if counts["bad"] else "book-claim-undecided" if counts["undecided"] and not counts["ok"] \
        else "book-claim-ok"
    return [claim_fold(label, lines, ["book-claim-marks", cls, "book-no-search"])]

