"""{snippet} path[#region]: show a region of a real file from snippets/ or crates/, captioned with a link to it.

The path goes through the path policy (capture.storage.paths: inside snippets/ or crates/, symlinks
followed and kept inside). Each file shown is remembered per page, so that the site publishes
exactly the files its pages show (capture.sphinxext.provenance). Every mistake (a bad path, a
missing region, bad options) is a located warning of type "capture", never an exception.
"""

from __future__ import annotations

import re

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from capture.storage.paths import PathError
from capture.plan.regions import RegionError, extract
from capture.sphinxext.common import book, logger

LANG = {".py": "python", ".rs": "rust", ".toml": "toml"}
ALLOWED = ("snippets/", "crates/")


class SnippetError(Exception):
    pass


def parse_emphasize(spec: str, n_lines: int) -> list[int]:
    """`:emphasize-lines: 1, 3-4` (lines of the shown block, 1-based) -> [1, 3, 4]."""
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not m:
            raise SnippetError(f":emphasize-lines: {part!r} is not a line number or a range like 3-5")
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        if not 1 <= a <= b <= n_lines:
            raise SnippetError(f":emphasize-lines: {part!r} is outside the {n_lines} lines shown")
        out.extend(range(a, b + 1))
    return out


def shown_files(env) -> dict[str, dict[str, int]]:
    """{docname: {path shown: line of the first {snippet} showing it}}, kept across incremental builds."""
    if not hasattr(env, "book_snippet_files"):
        env.book_snippet_files = {}
    return env.book_snippet_files


class SnippetDirective(SphinxDirective):
    required_arguments = 1
    option_spec = {"caption": directives.unchanged, "linenos": directives.flag, "emphasize-lines": directives.unchanged}

    def run(self):
        where = (self.env.docname, self.lineno)
        try:
            return self._run(where)
        except (SnippetError, RegionError, PathError) as e:
            return self._fail(f"snippet {self.arguments[0]}: {e}", where)
        except Exception as e:  # never an exception out of a directive: a located warning instead
            return self._fail(f"snippet {self.arguments[0]}: {type(e).__name__}: {e}", where)

    def _run(self, where):
        b = book(self.env)
        path, _, region = self.arguments[0].partition("#")
        file = b.layout.shown(path)
        self.env.note_dependency(str(file))
        try:
            source = file.read_bytes().decode("utf-8")
        except UnicodeDecodeError as e:
            raise SnippetError(f"not UTF-8 (byte offset {e.start})") from None
        reg = extract(source, region or None)
        literal = nodes.literal_block(reg.text, reg.text, language=LANG.get(file.suffix, "text"))
        literal["book_source"] = path
        literal["linenos"] = "linenos" in self.options
        literal["highlight_args"] = {"linenostart": reg.first_line}
        if "emphasize-lines" in self.options:
            literal["highlight_args"]["hl_lines"] = parse_emphasize(self.options["emphasize-lines"] or "", len(reg.text.splitlines()))
        self.set_source_info(literal)
        shown_files(self.env).setdefault(self.env.docname, {}).setdefault(path, self.lineno)
        wrapper = nodes.container("", literal_block=True, classes=["literal-block-wrapper", "book-snippet"])
        depth = self.env.docname.count("/")
        caption = nodes.caption("", "")
        if self.options.get("caption"):
            caption += nodes.Text(self.options["caption"] + " · ")
        link = nodes.reference("", "", nodes.literal(path, path), refuri="../" * depth + f"_code/{path}.txt",
                               classes=["book-source-link"])
        if region:
            link["reftitle"] = f"整个文件；这里是第 {reg.first_line}–{reg.last_line} 行"
        caption += link
        if region:
            caption += nodes.inline("", f" 第 {reg.first_line}–{reg.last_line} 行", classes=["book-snippet-lines"])
        wrapper += caption
        wrapper += literal
        return [wrapper]

    def _fail(self, msg, where):
        msg += f" (page {where[0]}, line {where[1]})"  # also in the text, for the page's error box
        logger.warning(msg, location=where, type="capture", subtype="snippet")
        return [nodes.error("", nodes.paragraph(text=msg))]


def purge(app, env, docname) -> None:
    shown_files(env).pop(docname, None)


def merge(app, env, docnames, other) -> None:
    mine = shown_files(env)
    for doc, files in getattr(other, "book_snippet_files", {}).items():
        if doc in docnames:
            mine[doc] = files


def setup(app) -> None:
    """Keep the record of shown files right across incremental and parallel builds."""
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
