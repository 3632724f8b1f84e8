"""What a reader sees, in Chinese: the machinery's answers (English, for logs and the command line) turned
into the reader's words, and the two small nodes the pages need for that (a tooltip, a <details>).

- `reproduce(ident, key)`: the steps that capture an output again, from capture/identity.py's steps;
- `detail_words(detail)`: why a machine does not run something (capture/book.py, capture/regenerate.py);
- `reason(why)`: a verdict's reason (capture/query.py) as a sentence with formatted values;
- `figure_tip(...)`: the tooltip of a recorded figure: the machine, the device, what kind of figure;
- `titled` (an inline with a title attribute) and `details` / `summary` (a block opened by a click).

The machinery's own messages stay English; nothing here is read back by it.
"""

from __future__ import annotations

import re

from docutils import nodes

from capture.fmt import NBSP, fmt_value
from capture.query import Value

FRAMEWORKS = {"torch": "PyTorch", "burn": "burn", "candle": "candle"}
SIDES = {"cpu": "CPU 一侧", "gpu": "GPU 一侧"}


# -- nodes -------------------------------------------------------------------------------------
class titled(nodes.inline):  # noqa: N801 - a docutils node
    """An inline with a tooltip: HTML `<span title="…">` (other builders: a plain inline)."""


class details(nodes.General, nodes.Element):  # noqa: N801
    """`<details>`: its first child is a `summary`; the rest shows when the reader opens it."""


class summary(nodes.TextElement):  # noqa: N801
    pass


def visit_titled(self, node):
    attrs = {"title": node["title"]} if node.get("title") else {}
    if node.get("lang"):
        attrs["lang"] = node["lang"]
    attrs.update({f"data-{k}": v for k, v in (node.get("data") or {}).items()})
    self.body.append(self.starttag(node, "span", "", **attrs))


def depart_titled(self, node):
    self.body.append("</span>")


def visit_details(self, node):
    self.body.append(self.starttag(node, "details", ""))


def depart_details(self, node):
    self.body.append("</details>\n")


def visit_summary(self, node):
    self.body.append(self.starttag(node, "summary", ""))


def depart_summary(self, node):
    self.body.append("</summary>")


def _skip(self, node):
    pass


def setup_nodes(app) -> None:
    """Register the nodes once (the capture directives and the site's volumes both use them)."""
    from sphinx.util.docutils import is_node_registered

    if is_node_registered(titled):
        return
    app.add_node(titled, html=(visit_titled, depart_titled))
    app.add_node(details, html=(visit_details, depart_details), latex=(_skip, _skip), text=(_skip, _skip))
    app.add_node(summary, html=(visit_summary, depart_summary), latex=(_skip, _skip), text=(_skip, _skip))


def tip(text: str, title: str, classes=()) -> titled:
    node = titled("", text, classes=list(classes))
    if title and title != text:
        node["title"] = title
    return node


def data_label(label: str, classes=("book-cell-label",)) -> titled:
    """An empty span whose CSS shows `label` where needed (a phone's list layout), without adding to the text."""
    node = titled("", "", classes=list(classes))
    node["data"] = {"label": label}
    return node


def disclosure(label: str, children: list[nodes.Node], classes=()) -> details:
    """A closed <details> whose summary line is `label`."""
    box = details(classes=list(classes))
    box += summary("", label)
    box.extend(children)
    return box


# -- code in text --------------------------------------------------------------------------------
def with_code(text: str) -> list[nodes.Node]:
    """Text in which `…` spans are code (an experiment's title, a header): Text and literal nodes."""
    out: list[nodes.Node] = []
    for i, part in enumerate(text.split("`")):
        if part:
            out.append(nodes.literal(part, part) if i % 2 else nodes.Text(part))
    return out


def plain(text: str) -> str:
    return text.replace("`", "")


# -- reproduce ---------------------------------------------------------------------------------
def reproduce(ident, exp: str, role: str) -> nodes.paragraph:
    """「重现：在 … 上运行 `…`」 in the reader's words, one step per machine (capture/identity.py)."""
    para = nodes.paragraph()
    para += nodes.Text("重现：")
    steps = ident.regenerate_steps([exp], [role])
    for i, (where, cmd) in enumerate(steps):
        if where == "builder":
            para += nodes.Text("先在一台装了 cargo、能联网的 Linux x86_64 机器上运行 ")
        else:
            para += nodes.Text(("，再在 " if i else "在 ") + f"{ident.display_name} 上运行 ")
        para += nodes.literal(cmd, cmd)
    para += nodes.Text("。")
    return para


# -- why a machine does not run something ------------------------------------------------------------
_DETAILS = [
    (re.compile(r"^(?P<m>.+) has no GPU$"), lambda m: f"{m['m']} 没有 GPU"),
    (re.compile(r"^runs only on (?P<os>.+)$"), lambda m: f"只在 {m['os'].replace('macos', 'macOS').replace('linux', 'Linux')} 上运行"),
    (re.compile(r"^needs cargo\b.*none on PATH here$"),
     lambda m: "要用 cargo 读取固定版本的 crate 源码，这台机器上没有 cargo"),
    (re.compile(r"^needs (?P<tool>\S+)"), lambda m: f"要用 {m['tool']}，这台机器上没有"),
    (re.compile(r"^not built with (?P<what>.+)$"), lambda m: f"这台机器的程序没有编进 {m['what']}"),
]


def detail_words(detail: str) -> str:
    """A state's detail (English, capture/book.py and the skip records) in the reader's words."""
    text = (detail or "").strip()
    for pattern, words in _DETAILS:
        m = pattern.search(text)
        if m:
            return words(m)
    return "这台机器运行不了它（原因写在元数据里）" if text else "这台机器运行不了它"


# -- a verdict's reason as a sentence ----------------------------------------------------------------
_OPS = {"<": "小于", ">": "大于", "<=": "不大于", ">=": "不小于", "==": "等于", "!=": "不等于"}
_SIDE = re.compile(r"^(?P<expr>.*?) = (?P<val>'(?:[^'\\]|\\.)*'|(?P<n>[-+0-9.e]+)(?: (?P<unit>[A-Za-zµ]+))?)"
                   r"(?: \[(?P<lo>[-+0-9.e]+)–(?P<hi>[-+0-9.e]+)\])?$")
_CLAUSE = re.compile(r"^(?P<not>not \()?(?P<body>.+?)(?:：|: )(?P<word>是|否|说不清|yes|no|cannot tell)(?P<rest>.*?)\)?$")
_WORDS = {"yes": "是", "no": "否", "cannot tell": "说不清"}
_TAG = re.compile(r"^\{(?P<tags>[^}]*)\}: ")


def _num(text: str, unit: str | None, style: str = "") -> str:
    """A number of a verdict's why (12 digits: capture/query.py `exact`) rounded once, as a table cell shows it."""
    try:
        return fmt_value(Value(float(text), unit or ""), style=style)
    except ValueError:
        return text


def _side(text: str) -> tuple[str, bool]:
    """A comparison side as the reader's words: its value (and range); whether it was a recorded word."""
    m = _SIDE.match(text.strip())
    if not m:
        return "", False
    val = m["val"]
    if val.startswith("'"):
        return "", True
    style = "ratio" if " / " in m["expr"] and not m["unit"] else ""  # as {num}`a / b | ratio` shows it: 2.1 倍
    out = _num(m["n"], m["unit"], style)
    if m["lo"] is not None:
        out += f"（几次在 {_num(m['lo'], m['unit'])} 到 {_num(m['hi'], m['unit'])} 之间）"
    factor = re.match(r"^(?P<k>[0-9.]+) \* ", m["expr"])
    if factor:
        out += f"（已乘 {factor['k']}）"
    return out, False


def _clause(text: str) -> str:
    tags = _TAG.match(text)
    lead = ""
    if tags:
        rnd = re.search(r"round=(\d+)", tags["tags"])
        lead = f"第 {rnd.group(1)} 轮：" if rnd else ""
        text = text[tags.end():]
    m = _CLAUSE.match(text.strip())
    if not m:
        return ""
    word = _WORDS.get(m["word"], m["word"])
    body = m["body"]
    op = next((o for o in ("<=", ">=", "==", "!=", "<", ">") if f" {o} " in body), None)
    if op is None:
        return f"{lead}{word}"
    left, right = body.split(f" {op} ", 1)
    lv, lword = _side(left)
    rv, rword = _side(right)
    if lword or rword:  # a recorded word against the expected one
        equal = (word == "是") == (op == "==")
        sentence = "记录下的结果正是这一种" if equal else "记录下的是另一种结果"
    elif lv and rv:
        sentence = f"{lv} {_OPS[op]} {rv}？{word}"
        if m["rest"] and "not apart" in m["rest"]:
            sentence += "：两边的范围隔得不够开（不到两倍），在测量噪声以内"
    else:
        sentence = word
    if m["not"]:
        sentence = f"{sentence}（这里问的是它的反面）"
    return lead + sentence


def reason(why: str) -> str:
    """capture/query.py's `why` as sentences: values formatted, expressions left out."""
    text = (why or "").strip()
    if not text:
        return ""
    head = ""
    m = re.match(r"^(all|any)\(\)(?:：|: )(是|否|说不清|yes|no|cannot tell)(?: — )?", text)
    if m:
        word = _WORDS.get(m.group(2), m.group(2))
        head = {"all": {"是": "每一轮都成立。", "否": "有一轮不成立。", "说不清": "有的轮说不清。"},
                "any": {"是": "有一轮成立。", "否": "没有一轮成立。", "说不清": "有的轮说不清。"}}[m.group(1)][word]
        text = text[m.end():]
    clauses = [c for c in (_clause(part) for part in re.split(r"; (?=\{|[a-z(])", text) if part.strip()) if c]
    return head + "；".join(clauses)


# -- the tooltip of a recorded figure -------------------------------------------------------------------
_AGGREGATE = {"median": "几次重复的中位数", "min": "几次里最小的", "max": "几次里最大的", "range": "几次重复的范围",
              "mean": "几次的平均", "all": "每一项都要成立", "any": "有一项成立即可"}


def figure_kind(expr: str) -> str:
    m = re.match(r"^\s*(\w+)\(", expr)
    if " / " in expr:
        return "两个记录之比"
    if m and m.group(1) in _AGGREGATE:
        return _AGGREGATE[m.group(1)]
    return "一次运行记下的值"


def figure_tip(machine: str, device: str | None, expr: str) -> str:
    where = f"{machine}（设备 {device}）上" if device else f"{machine} 上"
    return f"在 {where}测得，{figure_kind(expr)}。点开是这次运行的记录。"


def load_words(before, after, cores) -> str:
    """The machine's load during the run, in words: the 1-minute load average against its cores."""
    if not before or not after:
        return ""
    peak = max(before[0], after[0])
    busy = peak / cores if cores else None
    word = "" if busy is None else "机器几乎空闲" if busy < 0.25 else "机器上还有别的工作" if busy < 0.75 else "机器很忙"
    detail = f"1{NBSP}分钟平均负载 {before[0]:.1f}→{after[0]:.1f}" + (f"，{cores}{NBSP}核" if cores else "")
    return f"测量时{word}（{detail}）" if word else f"测量时{detail}"
