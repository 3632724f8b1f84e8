"""{your-machine}: the chapters' findings, the book's machines' answers, and the reader's machine's beside them.

    :::{your-machine}
    :::

The page 「你的机器和本书的机器」 (docs/appendix/yours.md). Each finding of each chapter (capture/evidence/findings.py:
claims, verdict-matrix rows, chart branches, {cmp} comparisons, ratio cells with a verdict) is a row, linked to its
section, with the answer of every book machine and, in the local site `nox -s yours` builds (capture/machines/yours.py),
the answer of the reader's machine and whether it is the book's. Rows where the reader's machine answers otherwise are
listed first, each with the figures on both sides and a link to the section. Without a reader's machine (the published
book) the page says how to get one.
"""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective

from capture.evidence import findings as fmod
from capture.machines import fingerprint as fpmod
from capture.machines.yours import COMMAND
from capture.storage.keys import FragmentKey
from capture.sphinxext.common import book, notice, reader_why
from capture.sphinxext.comparisons import KINDS, spaced
from capture.sphinxext.reader import data_label, detail_words, disclosure, tip
from capture.sphinxext.tables import table_node

VERDICT_WORDS = {
    fmod.SAME: "相同",
    fmod.DIFFERENT: "不同",
    fmod.SPLIT: "本书的机器之间也不同",
    fmod.OPEN: "你的机器定不下",
    fmod.ALONE: "本书的机器定不下",
    fmod.NONE: "—",
}
COUNT_WORDS = {**VERDICT_WORDS, fmod.NONE: "你的机器没有测"}
ORDER = (fmod.DIFFERENT, fmod.SPLIT, fmod.SAME, fmod.ALONE, fmod.OPEN, fmod.NONE)


def answer_words(f: fmod.Finding, r: fmod.Reply) -> str:
    """A machine's answer to a finding, in the words of the finding's kind."""
    if r.word == fmod.UNTESTED:
        return "未测"
    if r.word == fmod.UNDECIDED:
        return "说不清"
    if r.word == fmod.ABOUT:
        return f"差不多（相差不到 {r.same:g} 倍）"
    yes = r.word == fmod.YES
    if f.names:  # a comparison: which side is faster (smaller, fewer...)
        a, _, kind = f.names
        words = KINDS.get(kind, KINDS["time"])
        return _words(a, words["smaller" if yes else "larger"])
    if f.kind == "chart":
        return (f.what or "是") if yes else (f.otherwise or "否")
    if f.kind == "claim":
        return "成立" if yes else "不成立"
    return "是" if yes else "否"


def _words(*parts: str) -> str:
    """Parts joined the way {cmp} writes them: a space only between Chinese and Latin ("burn 快", "丢掉和留住")."""
    return "".join(n.astext() for n in spaced(*parts))


def why_words(r: fmod.Reply) -> str:
    if r.word == fmod.UNTESTED:
        return detail_words(r.why) if r.why else ""
    text = reader_why(r.why)
    return text + ("（数据来自这段代码较早的版本）" if r.stale else "")


def finding_words(f: fmod.Finding) -> str:
    if f.kind == "cmp":
        a, b, kind = f.names
        return _words(a, "和", b, "，", KINDS.get(kind, KINDS["time"])["which"])
    if f.kind == "chart":
        return f"流程图：「{f.what}」" + (f"还是「{f.otherwise}」" if f.otherwise else "")
    return f.what or f.expr


def section_link(f: fmod.Finding, text: str) -> nodes.Node:
    """A link to the section the finding is in (its label), or to the page."""
    if f.section:
        ref = addnodes.pending_xref("", refdomain="std", reftype="ref", reftarget=f.section, refexplicit=True,
                                    refwarn=True)
    else:
        ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget=f"/{f.page}", refexplicit=True,
                                    refwarn=True)
    ref += nodes.inline(text, text)
    return ref


class YourMachineDirective(SphinxDirective):
    has_content = False

    def run(self):
        b = book(self.env)
        docs = b.layout.root / "docs"
        for page in fmod.chapters(docs):  # the findings are read from the chapters' sources
            self.env.note_dependency(str(docs / f"{page}.md"))
        self.env.note_dependency(str(docs / "index.md"))
        chapters = fmod.of_chapters(docs)
        out: list[nodes.Node] = []
        if not b.reader:
            box = notice("yours", "这份网站里没有你的机器。在仓库根目录运行下面这条命令（也写在 README 里），"
                                  "它把你的机器上能运行的实验跑一遍，再在本地构建网站：这一页就会在每个结论旁边列出你的机器的回答，"
                                  "每一章的输出、表格、比较和是非矩阵里也会多出「你的机器」一栏。")
            para = nodes.paragraph("", "命令：")
            para += nodes.literal(COMMAND, COMMAND)
            para += nodes.Text("。只跑一章：")
            one = f"{COMMAND} -- --chapter design"
            para += nodes.literal(one, one)
            para += nodes.Text("；只跑几个实验：")
            few = f"{COMMAND} -- --only torch-ret burn-ret"
            para += nodes.literal(few, few)
            para += nodes.Text("。")
            box += para
            out.append(box)
        else:
            out += self.summary(b, chapters)
        for page, items in chapters.items():
            out += self.chapter(b, page, items)
        return out

    # -- the reader's machine --------------------------------------------------------------------------
    def summary(self, b, chapters) -> list[nodes.Node]:
        ident = b.identity(b.reader)
        rows = [r for items in chapters.values() for r in fmod.rows(b, items)]
        n = fmod.counts(rows)
        intro = nodes.paragraph()
        if b.reader_is_book:
            name = ident.display_name.removeprefix("你的机器（本书的 ").removesuffix("）")  # capture/evidence/book.py _yours
            intro += nodes.Text(f"你的机器就是本书的 {b.reader}（{name}）：指纹"
                                f"（{fpmod.describe_zh(ident.host)}）和这个平台的一样，所以它的回答就是本书在这台机器上的回答，"
                                "不用另外捕获。")
        else:
            intro += nodes.Text(f"你的机器：{fpmod.describe_zh(ident.host)}。它的记录在 ")
            folder = b.layout.rel(b.folder(b.reader))
            intro += nodes.literal(folder, folder)
            intro += nodes.Text("（不进版本库，不属于本书），由 ")
            intro += nodes.literal(COMMAND, COMMAND)
            intro += nodes.Text(" 捕获；再运行一次只重跑过期的实验。")
        out: list[nodes.Node] = [intro, self.capture_note(b)]
        total = len(rows)
        para = nodes.paragraph(classes=["book-yours-counts"])
        parts = [f"{COUNT_WORDS[k]} {n[k]} 个" for k in ORDER if n.get(k)]
        para += nodes.Text(f"两章共 {total} 个由数据得出的结论。和本书的机器比，你的机器的回答：" + "，".join(parts) + "。")
        out.append(para)
        differ = [r for r in rows if r.verdict in (fmod.DIFFERENT,)]
        if differ:
            out.append(nodes.rubric("", "和本书不同的地方"))
            items = nodes.bullet_list(classes=["book-yours-different"])
            for r in differ:
                item = nodes.list_item()
                para = nodes.paragraph()
                para += section_link(r.finding, r.finding.title or r.finding.page)
                para += nodes.Text(f"：{finding_words(r.finding)}。你的机器：{answer_words(r.finding, r.mine)}")
                why = why_words(r.mine)
                para += nodes.Text(f"（{why}）" if why else "")
                theirs = "；".join(f"{b.short_label(t.platform)}：{answer_words(r.finding, t)}" for t in r.theirs if t.decided)
                para += nodes.Text(f"。本书 {theirs}。")
                item += para
                items += item
            out.append(items)
        return out

    def capture_note(self, b) -> nodes.Node:
        """When the reader's machine was captured, what it ran and what it could not run, and why."""
        keys = b.store.keys(b.reader)
        metas = [m for k in keys if (f := b.store.read(b.reader, k)) is not None and not f.corrupt and (m := f.meta)]
        when = sorted(str(m.get("started") or "")[:16].replace("T", " ") for m in metas)
        reasons: dict[str, int] = {}
        wanted = [f"{e.id}@{r}" for e in b.manifest.experiments for r in e.roles]
        for k in wanted:
            if k in keys:
                continue
            reason = b.store.skip_reason(b.reader, k)
            if k.endswith("@gpu") and not b.identity(b.reader).has_gpu:
                reasons["没有 GPU（GPU 一侧的实验）"] = reasons.get("没有 GPU（GPU 一侧的实验）", 0) + 1
                continue
            if reason is None:
                st = b.state(b.reader, FragmentKey.parse(k))
                reason = st.detail if st.state != "missing" or "failed" in st.detail else "not captured yet"
            words = detail_words(reason) if reason != "not captured yet" else "还没有捕获"
            if reason.startswith("the run failed there"):
                words = "运行失败"
            reasons[words] = reasons.get(words, 0) + 1
        para = nodes.paragraph()
        span = f"{when[0]} 到 {when[-1]}（UTC）" if when and when[0] != when[-1] else (f"{when[0]}（UTC）" if when else "")
        para += nodes.Text(f"本书的 {len(wanted)} 个实验（每个设备角色算一个）里，你的机器上有 {len(metas)} 个的记录"
                           + (f"，捕获于 {span}" if span else "") + "。")
        if reasons:
            para += nodes.Text("没有记录的：" + "；".join(f"{w}，{c} 个" for w, c in
                                                     sorted(reasons.items(), key=lambda x: -x[1])) + "。")
        return para

    # -- one chapter -----------------------------------------------------------------------------------
    def chapter(self, b, page: str, items: list[fmod.Finding]) -> list[nodes.Node]:
        if not items:
            return []
        head = nodes.rubric("", "", classes=["book-yours-chapter"])
        label = fmod.page_label(b.layout.root / "docs", page)
        if label:  # the chapter's title, filled in by Sphinx from the label (the page may not be read yet)
            ref = addnodes.pending_xref("", refdomain="std", reftype="ref", reftarget=label, refexplicit=False,
                                        refwarn=True)
            ref += nodes.inline(page, page)
            head += ref
        else:
            head += section_link(fmod.Finding(page, 0, "", "", "", page), page)
        platforms = [p for p in b.book_platforms() if p != b.reader]
        header = ["结论", *[tip(b.short_label(p), b.label(p)) for p in platforms]]
        rows = fmod.rows(b, items) if b.reader else [fmod.Row(f, None, [fmod.reply(b, f, p) for p in platforms])
                                                     for f in items]
        if b.reader:
            header += [tip(b.short_label(b.reader), b.label(b.reader)), "和本书比"]
        body = []
        for r in rows:
            f = r.finding
            what = nodes.inline("", "", section_link(f, finding_words(f)), classes=["book-yours-finding"])
            cells = [what]
            for t in r.theirs:
                cells.append(nodes.inline("", "", data_label(b.short_label(t.platform)), self._answer(f, t)))
            if r.mine is not None:
                cells.append(nodes.inline("", "", data_label(b.short_label(b.reader)), self._answer(f, r.mine, mine=True)))
                v = r.verdict
                cells.append(nodes.inline("", "", data_label("和本书比"),
                                          nodes.inline("", VERDICT_WORDS[v], classes=[f"book-yours-{v}"])))
            body.append(cells)
        table = table_node(None, header, body, ("book-records-table", "book-yours-table"))
        return [head, disclosure(f"{len(items)} 个结论", [table], ["book-yours-fold"]) if not b.reader else table]

    def _answer(self, f: fmod.Finding, r: fmod.Reply, mine: bool = False) -> nodes.Node:
        text = answer_words(f, r)
        why = why_words(r)
        classes = ["book-yours-answer", f"book-yours-{r.word}"] + (["book-yours-mine"] if mine else [])
        return tip(text + ("（旧）" if r.stale else ""), why, classes)
