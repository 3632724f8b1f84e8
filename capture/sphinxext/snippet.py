"""{snippet} path[#region]: show a region of a real file from snippets/ or crates/, captioned with a link to it."""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from capture.regions import RegionError, extract
from capture.sphinxext.common import book, logger

LANG = {".py": "python", ".rs": "rust", ".toml": "toml"}
ALLOWED = ("snippets/", "crates/")


class SnippetDirective(SphinxDirective):
    required_arguments = 1
    option_spec = {"caption": directives.unchanged, "linenos": directives.flag, "emphasize-lines": directives.unchanged}

    def run(self):
        b = book(self.env)
        arg = self.arguments[0]
        path, _, region = arg.partition("#")
        where = (self.env.docname, self.lineno)
        if not path.startswith(ALLOWED):
            return self._fail(f"snippet {path}: only files under snippets/ or crates/ can be shown", where)
        file = b.layout.root / path
        if not file.is_file():
            return self._fail(f"snippet file {path} not found (page {self.env.docname}, line {self.lineno})", where)
        self.env.note_dependency(str(file))
        try:
            reg = extract(file.read_text(encoding="utf-8"), region or None)
        except RegionError as e:
            return self._fail(f"snippet {path}: {e} (page {self.env.docname}, line {self.lineno})", where)
        literal = nodes.literal_block(reg.text, reg.text, language=LANG.get(file.suffix, "text"))
        literal["book_source"] = path
        literal["linenos"] = "linenos" in self.options
        literal["highlight_args"] = {"linenostart": reg.first_line}
        if "emphasize-lines" in self.options:
            literal["highlight_args"]["hl_lines"] = [int(x) for x in self.options["emphasize-lines"].split(",")]
        self.set_source_info(literal)
        wrapper = nodes.container("", literal_block=True, classes=["literal-block-wrapper", "book-snippet"])
        depth = self.env.docname.count("/")
        caption = nodes.caption("", "")
        if self.options.get("caption"):
            caption += nodes.Text(self.options["caption"] + " · ")
        caption += nodes.reference(path, path, refuri="../" * depth + f"_code/{path}.txt", classes=["book-source-link"])
        caption += nodes.Text(f"（第 {reg.first_line}–{reg.last_line} 行）" if region else "")
        wrapper += caption
        wrapper += literal
        return [wrapper]

    def _fail(self, msg, where):
        logger.warning(msg, location=where, type="capture", subtype="snippet")
        return [nodes.error("", nodes.paragraph(text=msg))]
