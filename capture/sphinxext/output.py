"""{output} and {outputs}: captured outputs, one row of tabs (the machine), the details one click away.

    ```{output} torch-ret@cpu          one output; a tab per machine (and role) that captured it
    :lines: 1-3, 8-                     gaps shown as "..."
    :platform: KEY                      that platform only, named in the caption (the reading path's one output)
    :except: KEY[, KEY]                 every platform but those (the others, in the section's {evidence} fold)
    :caption: text                      put before the experiment's title
    ```

    :::{outputs}                        several outputs read together: a tab per machine, and in it
    torch-ret@cpu                       the outputs one under the other, each headed by its framework
    burn Flex = burn-ret@cpu            and device ("PyTorch · cuda"), or by the label written before `=`
    torch-errors@gpu | lines=2-3
    :::

Tabs follow the book's platform order, are named by the machine's short name (the full one in their
tooltip) and are synchronised across the page: choosing a machine in one block chooses it everywhere.
Each output block has a caption of at most two lines (framework, device, the experiment's title) and
at its right end a small icon that opens 「来历」 (reader.provenance_fold): the machine in full, versions, date, load, the raw output and metadata,
the commands that capture it again and, for a stale fragment, what changed since. Tabs never nest:
a tab set whose tabs hold outputs with tabs of their own is a build error that says to use {outputs}
(check_tab_depth).
"""

from __future__ import annotations

import re

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from capture.evidence.controls import visible
from capture.storage.keys import FragmentKey, KeyError_
from capture.plan.manifest import ManifestError
from capture.plan.regions import RegionError, select_lines
from capture.sphinxext import reader
from capture.sphinxext.common import (
    awaiting_notice,
    compiler_words,
    could_run,
    book,
    depend,
    fragment_href,
    logger,
    notice,
    platform_choice,
    platform_tabs,
    with_reader,
    report_state,
    state_notice,
    warn,
)


class OutputDirective(SphinxDirective):
    required_arguments = 1
    option_spec = {"lines": directives.unchanged, "platform": directives.unchanged, "except": directives.unchanged,
                   "caption": directives.unchanged}

    def run(self):
        b = book(self.env)
        where = self.get_location()
        try:
            key = FragmentKey.parse(self.arguments[0])
            b.experiment(key)
            only, others = platform_choice(self.options)
            plats = [only] if only else [p for p in b.holders(key) if p not in others]
            plats = with_reader(b, only, others, plats, [key])  # the reader's machine beside the book's
        except (KeyError_, ManifestError) as e:
            return fail(f"output {self.arguments[0]}: {e}", where)
        depend(self.env, b, [key])
        if not plats:
            if others and b.holders(key):
                return []  # every machine that has it is shown elsewhere (:except:)
            return absent(b, key, where)
        items = []
        for plat in plats:
            # the one machine chosen for the reading path is named in the caption (in tabs, the tab names it)
            machine = (b.short_label(plat), b.label(plat)) if only and len(plats) == 1 else None
            content = shown(self, b, plat, key, self.options.get("lines"), self.options.get("caption"), machine=machine)
            items.append((plat, b.short_label(plat, key.role), content, b.label(plat, key.role)))
        if len(items) == 1:
            return items[0][2]
        return [platform_tabs(items, classes=["book-output-tabs"])]


class OutputsDirective(SphinxDirective):
    """Several outputs in one row of machine tabs (see the module's docstring)."""

    has_content = True
    option_spec = {"platform": directives.unchanged, "except": directives.unchanged}

    def run(self):
        b = book(self.env)
        where = self.get_location()
        try:
            entries = parse_entries(self.content)
            for _, key, _ in entries:
                b.experiment(key)
            only, others = platform_choice(self.options)
        except (KeyError_, ManifestError, ValueError) as e:
            return fail(f"outputs: {e}", where)
        if not entries:
            return fail("outputs: no output listed (one `experiment@role` per line)", where)
        keys = [k for _, k, _ in entries]
        depend(self.env, b, keys)
        plats = [only] if only else [p for p in b.platforms()
                                     if p not in others and any(b.fragment(p, k) is not None for k in keys)]
        plats = with_reader(b, only, others, plats, keys)  # the reader's machine beside the book's
        out: list[nodes.Node] = []
        for label, key, lines in entries:  # what no machine holds yet says so once, before the tabs
            if not only and not others and not b.holders(key):
                out += absent(b, key, where)
        items = []
        for plat in plats:
            content: list[nodes.Node] = []
            for label, key, lines in entries:
                mine = plat == b.reader and plat != only  # the reader's machine: what it could run, and why not
                if b.fragment(plat, key) is None and (not could_run(b, plat, [key]) if mine else not only):
                    st = b.state(plat, key)
                    report_state(st, where, f"outputs {key}")
                    continue
                content += shown(self, b, plat, key, lines, None, head=label or "")
            items.append((plat, b.short_label(plat), content, b.label(plat)))
        if len(items) == 1:
            plat, short, content, full = items[0]
            box = nodes.container(classes=["book-platform-note", "book-outputs-one"])
            box += nodes.paragraph("", "", nodes.strong("", "", reader.tip(f"在 {short} 上", full)),
                                   classes=["book-per-platform-head"])
            box.extend(content)
            return out + [box]
        if items:
            out.append(platform_tabs(items, classes=["book-output-tabs", "book-outputs"]))
        return out


def parse_entries(content) -> list[tuple[str | None, FragmentKey, str | None]]:
    """`[label =] experiment@role [| lines=…]`, one per line."""
    out = []
    for raw in content:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        body, _, opts = line.partition("|")
        label, sep, key = body.rpartition("=")
        lines = None
        for opt in opts.split(","):
            name, _, value = opt.partition("=")
            if name.strip() == "lines":
                lines = value.strip()
            elif name.strip():
                raise ValueError(f"{line!r}: unknown option {name.strip()!r} (only lines=…)")
        out.append(((label.strip() or None) if sep else None, FragmentKey.parse(key.strip()), lines))
    return out


def fail(msg, where):
    warn(msg, where, "output")
    return [notice("error", msg)]


def absent(b, key, where) -> list[nodes.Node]:
    st = b.absent_everywhere(key)
    report_state(st, where, f"output {key}")
    if st.severity == "warn":
        return [notice("missing", f"{key} 尚未捕获。", st.fix)]
    return [awaiting_notice(b, key)]


def shown(directive, b, plat, key, lines=None, caption=None, head=None, machine=None) -> list[nodes.Node]:
    """One machine's output block for `key`, or the notice that replaces it."""
    st = b.state(plat, key)
    report_state(st, directive.get_location(), f"output {key}")
    if st.fragment is not None and st.state in ("fresh", "stale"):
        return [block(directive, b, st, lines, caption, head, machine)]
    note = state_notice(b, st)
    return [note] if note is not None else []


def block(directive, b, st, lines=None, caption=None, head=None, machine=None) -> nodes.container:
    """The output with a caption of at most two lines and its details under it; `machine` (short name, full
    name) leads the caption of a block that no tab names."""
    frag, key, env = st.fragment, st.key, directive.env
    exp = b.experiment(key)
    text = frag.text.rstrip("\n")
    try:
        text = select_lines(text, lines)
    except RegionError as e:
        warn(f"output {key}: {e}", directive.get_location(), "lines")
    text = visible(text)  # raw control bytes (ESC, BEL...) as symbols, never into the HTML
    # an output laid out in columns (names padded with spaces) keeps its lines and scrolls sideways;
    # any other output wraps, so that a long error message is read without scrolling
    columns = any(re.search(r"\S {2,}\S", line) for line in text.splitlines())
    literal = nodes.literal_block(text, text, language="text",
                                  classes=["book-output"] + (["book-output-columns"] if columns else []))
    literal["book_source"] = f"fragment:{st.platform}/{key}"
    directive.set_source_info(literal)
    wrapper = nodes.container("", literal_block=True, classes=[
        "literal-block-wrapper", "book-output-wrapper", f"book-plat-{st.platform}", f"book-frag-{key.exp}--{key.role}"])
    meta = frag.meta
    fw = reader.FRAMEWORKS.get(meta.get("framework") or exp.framework, exp.framework)
    cap = nodes.caption("", "")
    # burn on CUDA: which compiler made its kernels, in the device's tooltip (the caption stays two lines on a
    # phone) and in 「来历」
    compiler = compiler_words(meta)
    device = str(meta.get("device"))
    if head is not None:  # in {outputs}: the framework and device lead, the machine is the tab
        if head or not compiler:
            cap += nodes.strong("", head or f"{fw} · {device}")
        else:
            lead = nodes.strong("", f"{fw} · ")
            lead += reader.tip(device, compiler)
            cap += lead
        cap += nodes.Text("　")
    else:
        if machine:
            cap += nodes.strong("", "", reader.tip(machine[0], machine[1], ["book-output-machine"]))
            cap += nodes.Text("：")
        cap += nodes.Text(f"{fw} · ")
        cap += reader.tip(device, compiler) if compiler else nodes.Text(device)
        cap += nodes.Text("　")
    if caption:
        cap += reader.with_code(caption + " · ")
    title = exp.title or str(key)
    cap += reader.with_code(title.removeprefix(f"{fw}：").removeprefix(f"{exp.framework}："))
    if st.state == "stale":
        cap += reader.tip("（旧）", "这段输出来自这段代码较早的版本：改了什么写在「来历」里", ["book-stale-mark"])
    wrapper += cap
    wrapper += literal
    wrapper += more(b, st, env)
    return wrapper


def more(b, st, env) -> nodes.Node:
    """「来历」: where and how the output was made, and how to make it again (closed)."""
    frag, key = st.fragment, st.key
    meta = frag.meta
    ident = b.identity(st.platform)
    v = meta.get("versions", {})
    rows: list[nodes.Node] = []
    machine = ident.display_name + (f"（{ident.os_pretty}）" if ident.os_pretty else "")
    side = reader.SIDES.get(key.role, key.role)
    compiler = compiler_words(meta)
    rows.append(nodes.paragraph("", f"机器：{machine}，{side}，设备 {meta.get('device')}"
                                    + (f"（{compiler}）" if compiler else "") + "。"))
    versions = []
    if v.get("torch"):
        t = f"PyTorch {v['torch']}"
        if v.get("torch_matches_pin") is False:
            t += f"（本书固定 {v.get('torch_pin')}，这台机器上是 {v['torch']}）"
        versions.append(t)
    fw = meta.get("framework")
    for name, label in (("burn", "burn"), ("candle-core", "candle")):
        if v.get(name) and fw == label:
            versions.append(f"{label} {v[name]}")
    build = v.get("rust_build") or {}
    if build.get("rustc"):
        versions.append(build["rustc"].split(" (")[0].replace("rustc ", "rustc "))
    exp = b.experiment(key)
    crate = exp.build_crate
    feats = [f.split("/", 1)[1] for f in build.get("features") or [] if crate and f.startswith(crate + "/")]
    line = "版本：" + "，".join(versions) if versions else ""
    if feats:
        # the crate's own features picked by the build (its dependencies' features are in its Cargo.toml)
        line += ("；" if line else "") + "构建时给这个 crate 打开的特性：" + "、".join(feats)
    if line:
        rows.append(nodes.paragraph("", line + "。"))
    when = (meta.get("started") or "")[:10]
    load = reader.load_words(meta.get("load_before"), meta.get("load_after"), (meta.get("machine") or {}).get("cores"))
    para = nodes.paragraph()
    para += nodes.Text("捕获于 " + when + (f"，{load}" if load else "") + "。")
    para += nodes.reference("原始输出", "原始输出", refuri=fragment_href(env, st.platform, key, "txt"))
    para += nodes.Text(" · ")
    para += nodes.reference("元数据", "元数据", refuri=fragment_href(env, st.platform, key, "json"))
    rows.append(para)
    if st.state == "stale":
        para = nodes.paragraph()
        para += nodes.Text("这段输出来自这段代码较早的版本，捕获之后改动了：")
        for i, path in enumerate(st.changed):
            if i:
                para += nodes.Text("、")
            para += nodes.literal(path, path)
        para += nodes.Text("。")
        rows.append(para)
    rows.append(reader.reproduce(ident, key.exp, key.role))
    return reader.provenance_fold(rows, ["book-output-more", "book-no-search"])


def check_tab_depth(app, doctree, docname) -> None:
    """doctree-resolved: a tab set inside another tab set's tab is an error (one row of tabs per block)."""
    for node in doctree.findall(nodes.container):
        if "sd-tab-set" not in node.get("classes", []):
            continue
        parent = node.parent
        while parent is not None and "sd-tab-set" not in parent.get("classes", []):
            parent = parent.parent
        if parent is None:
            continue
        logger.warning("tabs inside a tab: this block has a row of tabs of its own inside another tab set's tab "
                       "(outputs with machine tabs inside framework tabs?) — list the outputs in one {outputs} block, "
                       "whose tabs are the machines and which shows the frameworks one under the other",
                       location=parent, type="capture", subtype="tabs")
