"""What a reader sees, in Chinese: the machinery's answers (English, for logs and the command line) turned
into the reader's words, and the two small nodes the pages need for that (a tooltip, a <details>).

- `reproduce(ident, key)`: the steps that capture an output again, from capture/machines/identity.py's steps;
- `detail_words(detail)`: why a machine does not run something (capture/evidence/book.py, capture/running/regenerate.py);
- `reason(why)`: a verdict's reason (capture/evidence/query.py) as a sentence with formatted values;
- `figure_tip(...)`: the tooltip of a recorded figure: the machine, the device, what kind of figure;
- `titled` (an inline with a title attribute) and `details` / `summary` (a block opened by a click);
- `provenance_fold` / `claim_fold`: the machinery's side of a block behind a small icon (`icon_disclosure`).

The machinery's own messages stay English; nothing here is read back by it.
"""

from __future__ import annotations

import re

from docutils import nodes

from capture.evidence.fmt import NBSP, fmt_value
from capture.evidence.query import (ABOUT_SAME, HISTORY_AGAINST, HISTORY_AGREE, HISTORY_BOUND, REPEATS_OVERLAP,
                                    REPEATS_SAY, Value)

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
    # a summary that shows only an icon names itself: its tooltip, and its accessible name for a screen reader
    attrs = {"title": node["title"]} if node.get("title") else {}
    if node.get("aria_label"):
        attrs["aria-label"] = node["aria_label"]
    self.body.append(self.starttag(node, "summary", "", **attrs))


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


# The machinery's side of a block (an output's provenance, a claim's check on each machine) is one click away
# behind a small icon, not a labelled line between the reader's sentences: the icon is the <summary> (a real
# disclosure, keyboard-reachable), its name is its tooltip and what a screen reader says.
INFO_MARK = "ⓘ"
PROVENANCE = "来历"
PROVENANCE_TIP = "来历：在哪台机器上、用什么版本、什么时候捕获的，怎样重现"
CHECKS = "核对"  # a claim checked against each machine's data; also the word in an {evidence} fold's title


def icon_disclosure(name: str, children: list[nodes.Node], classes=()) -> details:
    """A closed <details> whose summary is the info icon, named `name` (tooltip and accessible name)."""
    box = details(classes=[*classes, "book-icon-fold"])
    head = summary("", INFO_MARK, classes=["book-info-mark"])
    head["title"] = head["aria_label"] = name
    box += head
    box.extend(children)
    return box


def provenance_fold(children: list[nodes.Node], classes=()) -> details:
    """「来历」 behind the info icon: where and how a block was made, and how to make it again."""
    return icon_disclosure(PROVENANCE_TIP, children, classes)


def claim_fold(marks: str, children: list[nodes.Node], classes=()) -> details:
    """A claim's check behind the info icon at the end of its sentence: the marks (「✓ H200、2 核 CPU」) are its
    tooltip and the first line inside, each machine's reasons follow."""
    lead = nodes.paragraph("", f"{CHECKS}：{marks}", classes=["book-claim-summary"])
    return icon_disclosure(f"按各台机器的数据{CHECKS}这句话：{marks}。点开看依据", [lead, *children], classes)


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
    """「重现：在 … 上运行 `…`」 in the reader's words, one step per machine (capture/machines/identity.py)."""
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
    """A state's detail (English, capture/evidence/book.py and the skip records) in the reader's words."""
    text = (detail or "").strip()
    for pattern, words in _DETAILS:
        m = pattern.search(text)
        if m:
            return words(m)
    return "这台机器运行不了它（原因写在元数据里）" if text else "这台机器运行不了它"


# -- a verdict's reason as a sentence ----------------------------------------------------------------
# What the data say, stated as a fact a person would write ("3.66 ms 超过 14.6 ms 的四分之一"), not as the question
# the claim asked and its answer ("3.66 ms 小于 916 µs（已乘 0.25）？否（这里问的是它的反面）"): the fact reads the
# same whichever way round the claim was put, so `not (...)` needs no words of its own.
_SIDE = re.compile(r"^(?P<expr>.*?) = (?P<val>'(?:[^'\\]|\\.)*'|(?P<n>[-+0-9.e]+)(?: (?P<unit>[A-Za-zµ/]+))?)"
                   r"(?: \[(?P<lo>[-+0-9.e]+)–(?P<hi>[-+0-9.e]+)\])?$")
_CLAUSE = re.compile(r"^(?P<not>not \()?(?P<body>.+?)(?:：|: )(?P<word>是|否|说不清|yes|no|cannot tell)(?P<rest>.*?)\)?$")
_WORDS = {"yes": "是", "no": "否", "cannot tell": "说不清"}
_TAG = re.compile(r"^\{(?P<tags>[^}]*)\}: ")
_FACTOR = re.compile(r"^(?P<k>[0-9.]+(?:e[-+]?[0-9]+)?) \* |(?: \* (?P<k2>[0-9.]+(?:e[-+]?[0-9]+)?))$")
_FRACTIONS = {0.5: "一半", 0.25: "四分之一", 0.2: "五分之一", 0.1: "十分之一", 0.01: "百分之一", 2.0: "两倍"}
_MARGIN = re.compile(r"more than (?P<m>[0-9.]+)x")
_DRIFTS = re.compile(r"\(x([0-9.]+)\)")  # the factors a cannot tell's why says each side was widened by


def _num(text: str, unit: str | None, style: str = "") -> str:
    """A number of a verdict's why (12 digits: capture/evidence/query.py `exact`) rounded once, as a table cell shows it."""
    try:
        return fmt_value(Value(float(text), unit or ""), style=style)
    except ValueError:
        return text


def _times(k: float) -> str:
    """A factor in words: 0.25 -> 四分之一, 3 -> 3 倍."""
    for value, words in _FRACTIONS.items():
        if abs(k - value) < 1e-9:
            return words
    return f" {k:g}{NBSP}倍"  # a number: spaced from the Chinese before it


def _side(text: str) -> tuple[str, bool]:
    """A comparison side in the reader's words: its value (and range), a factor said as such ("14.6 ms 的四分之一");
    whether it was a recorded word. A constant is itself."""
    text = text.strip()
    m = _SIDE.match(text)
    if not m:
        try:
            return _num(str(float(text)), ""), False  # a constant: 1, 0.5
        except ValueError:
            return "", False
    if m["val"].startswith("'"):
        return "", True
    factor = _FACTOR.search(m["expr"])
    k = float(factor["k"] or factor["k2"]) if factor else 1.0
    style = "ratio" if " / " in m["expr"] and not m["unit"] else ""  # as {num}`a / b | ratio` shows it: 2.1 倍
    value = float(m["n"]) / k  # the recorded value before the claim scaled it: the figure a table shows
    out = _num(repr(value), m["unit"], style)
    if m["lo"] is not None:
        lo, hi = _num(repr(float(m["lo"]) / k), m["unit"], style), _num(repr(float(m["hi"]) / k), m["unit"], style)
        if lo != hi:
            out += f"（几次在 {lo} 到 {hi} 之间）"
    if k != 1.0:
        out += f" 的{_times(k)}"
    return out, False


def _constant(text: str) -> bool:
    return _SIDE.match(text.strip()) is None


_AGREE = re.compile(r"\[(?P<by>decided by the history|history): (?P<n>\d+) captures? " + re.escape(HISTORY_AGREE)
                    + r"(?:, the closest x(?P<gap>[0-9.e+]+))?\]")
_AGAINST = re.compile(re.escape(HISTORY_AGAINST) + r" (?P<when>.+?) ordered them the other way")
_FEW = re.compile(r"\[history: (?P<n>\d+) captures in one sitting agreed(?:, the closest x(?P<gap>[0-9.e+]+))?: too few")
_SAME = re.compile(r"(?P<how>" + re.escape(ABOUT_SAME) + "|" + re.escape(HISTORY_BOUND) + r") x(?P<k>[0-9.]+)")


def _when(started: str) -> str:
    """A capture's start as a reader reads it: 2026-12-01T17:52:49+00:00 -> 2026-12-01 17:52（世界时）."""
    m = re.match(r"^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})", started)
    return f"{m.group(1)} {m.group(2)}（世界时）" if m else started


def _history(rest: str, scaled: bool = False) -> str:
    """The history behind a decided comparison, in words: how many captures in one sitting, the closest gap. With a
    factor in the claim (A < 0.25 * B) the gap is to the line it draws, not between the two figures."""
    m = _AGREE.search(rest or "")
    if not m:
        return ""
    what = "离这个界限最近的一次也隔着" if scaled else "两者之比最小的一次也有"
    gap = f"，{what} {float(m['gap']):.3g}{NBSP}倍" if m["gap"] else ""
    return f"这台机器上 {m['n']} 次捕获（每次两边都在同一次运行里）都是这样{gap}"


def _same(rest: str) -> str:
    m = _SAME.search(rest or "")
    if not m:
        return ""
    how = "同一次运行里两边一起捕获的几次，两者之比（连同按它们推算的下一次）" if m["how"] == HISTORY_BOUND \
        else "两边各按前后两次捕获之间挪动过的倍数放宽以后，两者之比"
    return f"两者差不多：{how}都在 {float(m['k']):g}{NBSP}倍以内"


def _fact(op: str, word: str, left: str, right: str, rest: str, constant: bool = False, scaled: bool = False) -> str:
    """What the data say about `left op right`, whichever answer the claim wanted."""
    against = _AGAINST.search(rest or "")
    if word == "说不清" and against:
        when = "这次" if against["when"] == "this capture" else f"{_when(against['when'])} 那次"
        same = _same(rest)
        return f"{left} 和 {right}：{when}捕获里两者的先后和其余几次相反，说不清哪个大" + (f"；{same}" if same else "")
    if word == "说不清" and _same(rest):
        return f"{left} 和 {right} 说不清哪个大；{_same(rest)}"
    if word == "说不清" and (few := _FEW.search(rest or "")):
        what = "离这个界限最近的一次只隔着" if scaled else "两者之比最小的一次只有"
        gap = f"，{what} {float(few['gap']):.4g}{NBSP}倍" if few["gap"] else ""
        return (f"{left} 和 {right}：这台机器上 {few['n']} 次捕获（每次两边在同一次运行里）先后一样{gap}，"
                f"但次数太少或比值起伏太大，推算不出下一次的先后；放宽漂移以后又重叠，说不清哪个大")
    history = _history(rest, scaled)
    if history and word != "说不清":
        base = _fact(op, word, left, right, "", constant)
        if _AGREE.search(rest)["by"].startswith("decided"):
            return f"{base}：两边各按挪动过的倍数放宽以后会重叠，但{history}，按这几次的比值推算，下一次也会是这样"
        return f"{base}；{history}"
    if word == "说不清":
        margin = _MARGIN.search(rest or "")
        if margin:
            return f"{left} 和 {right} 隔得不够开（要隔开 {margin['m']} 倍以上才分得出），说不清哪个大"
        if REPEATS_SAY in (rest or ""):  # apart in this capture; the drift between captures keeps it open
            drifts = "、".join(f"×{f}" for f in _DRIFTS.findall(rest))
            by = f"（{drifts}）" if drifts else ""
            return (f"{left} 和 {right} 这次捕获里隔得开，但两边各按这台机器上前后两次捕获之间挪动过的倍数{by}"
                    "放宽以后重叠，说不清哪个大")
        if REPEATS_OVERLAP in (rest or ""):
            return f"{left} 和 {right} 的几次重复本身就有重叠，说不清哪个大"
        return f"{left} 和 {right} 隔得不够开（在测量的波动以内），说不清哪个大"
    holds = word == "是"
    if op in ("==", "!="):
        equal = holds == (op == "==")
        if constant:
            return f"记下的是 {left}" if equal else f"记下的是 {left}，不是 {right}"
        return f"{left} 和 {right} {'相等' if equal else '不相等'}"
    smaller = holds == (op in ("<", "<="))
    return f"{left} 不到 {right}" if smaller else f"{left} 超过 {right}"


def _word(side: str, words: dict[str, str] | None) -> str | None:
    """A recorded word of a clause's side ('silent: read 0') as the reader reads it (conf.py's book_recorded_words);
    None for a text not listed there (an error message: quoted as the program wrote it only in the record)."""
    m = _SIDE.match(side.strip())
    raw = m["val"][1:-1].replace("\\'", "'") if m else side.strip().strip("'")
    return (words or {}).get(raw)


def _scaled(side: str) -> bool:
    """Whether a clause's side carries a factor (0.25 * median(...)): the claim compares against a line, not a figure."""
    m = _SIDE.match(side.strip())
    return bool(m and _FACTOR.search(m["expr"]))


def _clause(text: str, words: dict[str, str] | None = None) -> str:
    tags = _TAG.match(text)
    lead = ""
    if tags:
        rnd = re.search(r"round=(\d+)", tags["tags"])
        lead = f"第 {rnd.group(1)} 轮：" if rnd else ""
        text = text[tags.end():]
    flag = re.match(r"^(?P<expr>\S+) = (?P<v>True|False|None)$", text.strip())
    if flag:  # a recorded yes/no
        return lead + {"True": "记录里是「是」", "False": "记录里是「否」", "None": "记录里是「说不清」"}[flag["v"]]
    m = _CLAUSE.match(text.strip())
    if not m:
        return ""
    word = _WORDS.get(m["word"], m["word"])
    body = m["body"]
    op = next((o for o in ("<=", ">=", "==", "!=", "<", ">") if f" {o} " in body), None)
    if op is None:
        return f"{lead}{'成立' if word == '是' else '不成立' if word == '否' else '说不清'}"
    left, right = body.split(f" {op} ", 1)
    lv, lword = _side(left)
    rv, rword = _side(right)
    if lword or rword:  # a recorded word against a listed one: say which was recorded, in the reader's words
        recorded, listed = (_word(left, words), _word(right, words)) if lword else (_word(right, words), _word(left, words))
        equal = (word == "是") == (op == "==")
        if recorded is None or listed is None:  # an error message, not a word: the program's text stays in the record
            sentence = "记录下的结果正是这一种" if equal else "记录下的是另一种结果"
        else:
            sentence = f"记下的是「{recorded}」" if equal else f"记下的是「{recorded}」，不是「{listed}」"
    elif lv and rv:
        sentence = re.sub(r"([）」，])\s+", r"\1", _fact(op, word, lv, rv, m["rest"], _constant(right),
                                                          _scaled(left) or _scaled(right)))
    else:
        sentence = {"是": "成立", "否": "不成立"}.get(word, word)
    return lead + sentence


def reason(why: str, words: dict[str, str] | None = None) -> str:
    """capture/evidence/query.py's `why` as sentences: values formatted, expressions left out; recorded words
    (outcomes) in the reader's words from `words`. Clauses that say the same thing are said once."""
    text = (why or "").strip()
    if not text:
        return ""
    # `all(…) and all(…)` gives one head per all(): each starts its own sentence with its own clauses
    heads = list(_ROUNDS.finditer(text))
    starts = [0] + [m.start() for m in heads if m.start()]
    parts = [text[i:j].removeprefix("; ") for i, j in zip(starts, starts[1:] + [len(text)])]
    return "。".join(s for s in (_sentence(p, words) for p in parts) if s)


_ROUNDS = re.compile(r"(?:^|; )(all|any)\(\)(?:：|: )(是|否|说不清|yes|no|cannot tell)(?: — )?")
_ROUND_HEADS = {"all": {"是": "每一轮都成立。", "否": "有一轮不成立。", "说不清": "有的轮说不清。"},
                "any": {"是": "有一轮成立。", "否": "没有一轮成立。", "说不清": "有的轮说不清。"}}


def _sentence(text: str, words: dict[str, str] | None) -> str:
    head = ""
    if m := _ROUNDS.match(text):
        head = _ROUND_HEADS[m.group(1)][_WORDS.get(m.group(2), m.group(2))]
        text = text[m.end():]
    clauses = [c for c in (_clause(part, words) for part in re.split(r"; (?=\{|[a-z(])", text) if part.strip()) if c]
    return head + "；".join(_merged(clauses))


def _merged(clauses: list[str]) -> list[str]:
    """Each clause once; 「记下的是「A」，不是「x」」 clauses about one recorded A become one: 不是「x」「y」中的任何一种."""
    out: list[str] = []
    nots: dict[str, list[str]] = {}
    for c in clauses:
        m = re.fullmatch(r"(?P<lead>(?:第 \d+ 轮：)?记下的是「[^」]*」)，不是「(?P<x>[^」]*)」", c)
        if m and m["lead"] in nots:
            nots[m["lead"]].append(m["x"])
            continue
        if m:
            nots[m["lead"]] = [m["x"]]
        if c not in out:
            out.append(c)
    for lead, xs in nots.items():
        if len(xs) > 1:
            i = out.index(f"{lead}，不是「{xs[0]}」")
            out[i] = f"{lead}，不是" + "".join(f"「{x}」" for x in xs) + "中的任何一种"
    return out


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


# a device as a reader would say where the work ran (the device names themselves are the machinery's)
_RAN_ON = {"cpu": "跑在 CPU 上", "flex": "跑在 CPU 上", "cuda": "用 CUDA 跑在 GPU 上", "vulkan": "用 Vulkan 跑在 GPU 上",
           "metal": "用 Metal 跑在 GPU 上", "mps": "用 MPS 跑在 GPU 上", "wgpu": "用 wgpu 跑在 GPU 上"}


def ran_on(devices: str | None) -> str:
    """`cpu、flex` -> 跑在 CPU 上; `cpu、cuda` -> 一边跑在 CPU 上，一边用 CUDA 跑在 GPU 上."""
    words = list(dict.fromkeys(_RAN_ON.get(d.strip(), f"用 {d.strip()} 运行") for d in (devices or "").split("、") if d.strip()))
    return "，一边".join(words) if len(words) < 2 else "一边" + "，一边".join(words)


def figure_tip(machine: str, device: str | None, expr: str) -> str:
    """The tooltip of a recorded figure: what kind of figure, the machine, where it ran."""
    where = ran_on(device)
    return f"{figure_kind(expr)}，在{padded(machine)}上测得" + (f"，{where}" if where else "") + "。点开是这次运行的记录。"


def padded(word: str) -> str:
    """A name inside Chinese text: spaced where it starts or ends in Latin letters (在 Mac 上, 在有 GPU 的机器上)."""
    return (" " if word[:1].isascii() else "") + word + (" " if word[-1:].isascii() else "")


def load_words(before, after, cores) -> str:
    """The machine's load during the run, in words: the 1-minute load average against its cores."""
    if not before or not after:
        return ""
    peak = max(before[0], after[0])
    busy = peak / cores if cores else None
    word = "" if busy is None else "机器几乎空闲" if busy < 0.25 else "机器上还有别的工作" if busy < 0.75 else "机器很忙"
    detail = f"1{NBSP}分钟平均负载 {before[0]:.1f}→{after[0]:.1f}" + (f"，{cores}{NBSP}核" if cores else "")
    return f"测量时{word}（{detail}）" if word else f"测量时{detail}"
