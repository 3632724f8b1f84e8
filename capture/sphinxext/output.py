"""{output} experiment@role: a captured output, one tab per platform that captured it.

Options: :lines: "1-3, 8-" (gaps shown as "..."); :platform: KEY shows that platform only;
:caption: text put before the provenance. Tabs follow the book's platform order and are
synchronised across the page (choosing a machine in one block chooses it everywhere); the CPU
role of each machine is its own tab, named by that machine. A platform whose fragment is stale
is still shown, with a note that names what changed and the command to run on that machine.
"""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from capture.controls import visible
from capture.keys import FragmentKey, KeyError_, check_platform_key
from capture.manifest import ManifestError
from capture.regions import RegionError, select_lines
from capture.sphinxext.common import (
    book,
    depend,
    fragment_href,
    notice,
    platform_tabs,
    provenance,
    awaiting_notice,
    report_state,
    state_notice,
    warn,
)


class OutputDirective(SphinxDirective):
    required_arguments = 1
    option_spec = {"lines": directives.unchanged, "platform": directives.unchanged, "caption": directives.unchanged}

    def run(self):
        b = book(self.env)
        where = self.get_location()
        try:
            key = FragmentKey.parse(self.arguments[0])
            b.experiment(key)
            only = self.options.get("platform")
            plats = [check_platform_key(only, ":platform:")] if only else b.holders(key)
        except (KeyError_, ManifestError) as e:
            return self._fail(f"output {self.arguments[0]}: {e}", where)
        depend(self.env, b, [key])
        if not plats:
            st = b.absent_everywhere(key)
            report_state(st, where, f"output {key}")
            if st.severity == "warn":
                return [notice("missing", f"{key} 尚未捕获。重新生成：", st.fix)]
            return [awaiting_notice(b, key)]
        items = []
        for plat in plats:
            st = b.state(plat, key)
            report_state(st, where, f"output {key}")
            content = [n for n in [state_notice(b, st)] if n is not None]
            if st.fragment is not None and st.state in ("fresh", "stale"):
                content += [self._block(b, st), reproduce(b, st)]
            items.append((plat, b.label(plat, key.role), content))
        if len(items) == 1:
            return items[0][2]
        return [platform_tabs(items, classes=["book-output-tabs"])]

    def _block(self, b, st):
        frag, key = st.fragment, st.key
        text = frag.text.rstrip("\n")
        try:
            text = select_lines(text, self.options.get("lines"))
        except RegionError as e:
            warn(f"output {key}: {e}", self.get_location(), "lines")
        text = visible(text)  # raw control bytes (ESC, BEL...) as symbols, never into the HTML
        literal = nodes.literal_block(text, text, language="text", classes=["book-output"])
        literal["book_source"] = f"fragment:{st.platform}/{key}"
        self.set_source_info(literal)
        wrapper = nodes.container("", literal_block=True, classes=[
            "literal-block-wrapper", "book-output-wrapper", f"book-plat-{st.platform}", f"book-frag-{key.exp}--{key.role}"])
        cap = nodes.caption("", "")
        if self.options.get("caption"):
            cap += nodes.Text(self.options["caption"] + " · ")
        cap += nodes.Text(f"{b.experiment(key).title or key} · " + provenance(b, frag, b.experiment(key)) + " · ")
        cap += nodes.reference("原始输出", "原始输出", refuri=fragment_href(self.env, st.platform, key, "txt"))
        cap += nodes.Text(" / ")
        cap += nodes.reference("元数据", "元数据", refuri=fragment_href(self.env, st.platform, key, "json"))
        wrapper += cap
        wrapper += literal
        return wrapper

    def _fail(self, msg, where):
        warn(msg, where, "output")
        return [notice("error", msg)]


def reproduce(b, st) -> nodes.container:
    """Under an output: the command that makes it again, on the machine it came from.
    (A container: inside a sphinx-design card a paragraph's own classes are replaced.)"""
    cmd = st.fix or b.identity(st.platform).regenerate_command([st.key.exp], [st.key.role])
    box = nodes.container(classes=["book-reproduce", "book-no-search"])
    para = nodes.paragraph()
    para += nodes.Text("重现：")
    para += nodes.literal(cmd, cmd)
    box += para
    return box
