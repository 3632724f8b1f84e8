"""Shared plumbing for the fragment directives: the Book of this build, scope, warnings, notices, tabs.

The decisions (which platform, fresh or stale, warning or note, which command fixes it) are
made by capture.evidence.book / capture.evidence.claims; this module only turns their answers into nodes and
log lines, the same way for every directive.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx.util import logging

from capture.toolchains import cudacompiler
from capture.evidence.book import NOTE, WARN, Answer, Book, FragmentState
from capture.storage.keys import FragmentKey
from capture.sphinxext.freshness import book_root, note_page

logger = logging.getLogger("capture")

STATE_TEXT = {
    "foreign": "是在另一台机器上捕获的，不算这台机器的结果",
    "stale": "来自这段代码较早的版本",
    "missing": "尚未捕获",
    "torn": "文件不完整（写入时被打断）",
    "corrupt": "文件已损坏",
    "not-applicable": "这台机器不运行它",
}


def book(env) -> Book:
    if env.temp_data.get("docname"):
        note_page(env)
    app = env.app
    if getattr(app, "_capture_book", None) is None:
        b = Book(book_root(app), list(app.config.book_platforms), _local(app), _reader(app))
        _drift_table(app, b)
        app._capture_book = b
    return app._capture_book


# -- docs/drift.json: read and checked once per build (capture/evidence/driftfile.py) -----------------------
DRIFT_PROBLEM = "_capture_drift_problem"  # on the app: the one line that said the drift table is bad


def check_drift_file(app) -> None:
    """builder-inited: a bad docs/drift.json (not a regular file, not JSON, a drift that is not a finite factor >= 1,
    a newer format...) is one warning, an error under -W, naming the file, its line and the command that rebuilds
    it; the pages are then built with the default drift (every kind DEFAULT), never a crash."""
    from capture.evidence import driftfile
    from capture.storage.datafile import DataFileError

    try:
        driftfile.read(book_root(app))
    except DataFileError as e:
        _drift_warning(app, e)


def _drift_warning(app, e) -> None:
    setattr(app, DRIFT_PROBLEM, str(e))
    tail = "; until then every timing verdict uses the default drift"
    if e.line:  # Sphinx prints the location before the message
        logger.warning(f"{e.why}; {e.fix}{tail}", location=f"{e.path}:{e.line}", type="capture", subtype="drift")
    else:
        logger.warning(f"{e}{tail}", location=str(e.path), type="capture", subtype="drift")


def _drift_table(app, b: Book) -> None:
    """The book's drift table, or the default one where docs/drift.json is bad (said once, by check_drift_file)."""
    from capture.evidence.verdict import Drifts
    from capture.storage.datafile import DataFileError

    if getattr(app, DRIFT_PROBLEM, None) is None:
        try:
            b.drifts  # noqa: B018 - read and checked now, not inside a directive
            return
        except DataFileError as e:
            _drift_warning(app, e)
    b.drifts = Drifts()


def _local(app):
    """This machine, whose own stale or missing fragments fail a strict build ("none": no machine)."""
    from capture.machines.identity import Identity, of_machine
    from capture.machines.platform import detect, machine_record

    key = app.config.book_local_platform
    if key == "none":
        return None
    here = detect()
    if key and key != here.key:
        return Identity(key=key, display_name=key)
    return of_machine(here, machine_record(here))


def _reader(app):
    """The reader's own machine (capture/machines/yours.py), in the local site `nox -s yours` builds; else None."""
    if not getattr(app.config, "book_yours", False):
        return None
    from capture.machines import yours
    from capture.storage.paths import Layout

    return yours.find(Layout(book_root(app)), yours.here())


# -- scope: which platform a figure in running text comes from ---------------------------------
SCOPE = "book_scope"


def scope(env) -> str | None:
    """The platform named by the enclosing block ({per-platform}, a claim's :platform:) or the page."""
    stack = env.temp_data.get(SCOPE) or []
    if stack:
        return stack[-1]
    return page_platform(env)


def page_platform(env) -> str | None:
    """`book_platform:` in the page's front matter (read from the source: env.metadata is filled
    only after the page has been parsed, too late for the roles in it)."""
    cache = env.temp_data.setdefault("book_page_platform", {})
    if env.docname not in cache:
        value = None
        try:
            lines = Path(env.doc2path(env.docname)).read_text(encoding="utf-8").splitlines()
        except OSError:
            lines = []
        if lines and lines[0].strip() == "---":
            for line in lines[1:]:
                if line.strip() == "---":
                    break
                key, _, val = line.partition(":")
                if key.strip() == "book_platform":
                    value = val.strip().strip("'\"") or None
        cache[env.docname] = value
    return cache[env.docname]


class scoped:
    """with scoped(env, platform): nested_parse(...) -- figures inside come from that platform."""

    def __init__(self, env, platform: str | None):
        self.env, self.platform = env, platform

    def __enter__(self):
        if self.platform:
            self.env.temp_data.setdefault(SCOPE, []).append(self.platform)

    def __exit__(self, *exc):
        if self.platform:
            self.env.temp_data[SCOPE].pop()


# -- dependencies ----------------------------------------------------------------------------
def depend(env, b: Book, keys, platforms=None) -> None:
    """Re-read the page when these fragments (on any platform) or their sources change, or the measured drift
    that decides its verdicts (docs/drift.json)."""
    from capture.evidence.drift import DATA
    from capture.plan.inputs import source_files

    env.note_dependency(str(b.layout.manifest))
    env.note_dependency(str(b.layout.root / DATA))
    for key in keys:
        key = key if isinstance(key, FragmentKey) else FragmentKey.parse(key)
        try:
            for f in source_files(b.experiment(key), b.layout):
                env.note_dependency(str(f))
        except Exception:  # noqa: BLE001 - a missing source is reported by the directive itself
            pass
        for plat in platforms or b.platforms():
            for suffix in (".json", ".txt"):
                p = b.folder(plat) / f"{key}{suffix}"
                if p.exists():
                    env.note_dependency(str(p))


# -- warnings and notices -------------------------------------------------------------------
def warn(msg: str, location, subtype: str) -> None:
    logger.warning(msg, location=location, type="capture", subtype=subtype)


def report_state(st: FragmentState, location, what: str) -> None:
    """Log a fragment problem: a warning when this machine can fix it, an info line otherwise."""
    if st.severity == WARN:
        warn(f"{what}: fragment {st.key} on {st.platform} is {st.state} ({st.detail}); "
             f"regenerate it with: {st.fix or 'nox -s regenerate'}", location, st.state)
    elif st.severity == NOTE and st.state in ("stale", "torn", "corrupt"):
        logger.info(f"{what}: fragment {st.key} on {st.platform} is {st.state} ({st.detail}); "
                    f"it is re-made on that machine with: {st.fix}", location=location)


def differs_option(text: str | None) -> tuple[str, ...]:
    """`:differs: threads, caches` -> ("threads", "caches"); an unknown condition is a ValueError."""
    from capture.evidence.alike import CONDITIONS

    words = tuple(w.strip() for w in (text or "").replace(",", " ").split() if w.strip())
    bad = [w for w in words if w not in CONDITIONS]
    if bad:
        raise ValueError(f"differs: {', '.join(bad)} is not a condition (one of {', '.join(CONDITIONS)})")
    return words


def report_answer(ans: Answer, location, what: str) -> None:
    for u in ans.unlike:
        if ans.severity != WARN:  # on the reader's machine (capture/evidence/book.py): said in the log only
            logger.info(f"{what} on {ans.platform}: compares unlike things: {u}", location=location)
            continue
        warn(f"{what} on {ans.platform}: compares unlike things: {u} — make the experiments' conditions agree, or "
             "say how they differ in the text and add `:differs: CONDITION` (`| differs=CONDITION` in {num})",
             location, "unlike")
    if ans.error:
        if ans.severity == WARN:
            warn(f"{what}: {ans.error} — fix the expression in the page or the record name", location, "query")
        return
    for st in ans.states:
        if not st.usable or st.state == "stale":
            report_state(st, location, what)


def reader_why(why: str, env=None) -> str:
    """A verdict's reason (capture/evidence/query.py, English) as the reader's sentence (capture/sphinxext/reader.py);
    with `env`, recorded words (outcomes) are said in conf.py's `book_recorded_words`."""
    from capture.sphinxext.reader import reason

    text = reason(why, env.app.config.book_recorded_words if env is not None else None)
    return f"依据：{text}" if text else ""


def notice(kind: str, text: str, command: str = "") -> nodes.Element:
    """A visible notice on the page; a command that fixes it goes in its closed 「来历」, as a literal to copy."""
    box = nodes.container(classes=["book-notice", f"book-notice-{kind}"])
    box += nodes.paragraph(text=text)
    if command:
        para = nodes.paragraph("", "运行 ")
        para += nodes.literal(command, command)
        box += provenance([para])
    return box


WAITING_FOR = {"macos": "Mac", "linux": "Linux 机器", "gpu": "有 GPU 的机器", "any": "能运行它的机器"}


def provenance(children: list[nodes.Node]) -> nodes.Node:
    """「来历」: a closed fold for the machinery's side (commands, files) behind an icon; the reading path never
    shows a command."""
    from capture.sphinxext.reader import provenance_fold

    return provenance_fold(children, ["book-output-more", "book-no-search"])


def awaiting_notice(b: Book, key) -> nodes.Element:
    """For a fragment no captured platform holds yet: which machine it waits for; the command there in 「来历」.
    Generated from the state, so it disappears when that machine's fragment arrives."""
    from capture.sphinxext.reader import padded

    who = WAITING_FOR.get(b.awaiting(key), b.awaiting(key))
    box = notice("awaiting", f"等 {who} 捕获：这一项还没有在{padded(who)}上运行过。")
    command = f"nox -s regenerate -- --only {key.exp} --device {key.role}"
    para = nodes.paragraph("", f"在{padded(who)}上运行 ")
    para += nodes.literal(command, command)
    box += provenance([para])
    box["classes"].append("book-awaiting")
    return box


FAILED_THERE = "the run failed there:"  # capture/evidence/book.py: a missing fragment whose last run failed


def state_notice(b: Book, st: FragmentState) -> nodes.Element | None:
    """What a reader sees for a fragment that is not fresh (None when fresh)."""
    if st.state == "fresh":
        return None
    from capture.sphinxext.reader import detail_words, reproduce

    where = b.label(st.platform) if st.platform in b.platforms() else st.platform
    rows: list[nodes.Node] = []
    if st.state == "stale":
        box = notice("stale", f"这段输出是在 {where} 上用这段代码较早的版本捕获的，之后代码改过。")
        rows.append(nodes.paragraph("", f"捕获之后改动了：{'、'.join(st.changed)}。"))
    elif st.state == "not-applicable":
        return notice("na", f"{where} 不运行这一项：{detail_words(st.detail)}。")
    elif st.state == "missing" and st.detail.startswith(FAILED_THERE):  # the reader's machine: its run failed
        failure = st.detail[len(FAILED_THERE):].strip()
        box = notice("missing", f"{where} 上运行这一项失败了，没有输出。")
        rows.append(nodes.paragraph("", "失败的原因：", nodes.literal(failure, failure)))
    else:
        box = notice(st.state, f"{where} 上的这段输出{STATE_TEXT.get(st.state, st.state)}。")
    if st.platform in b.platforms() or st.platform == b.local:
        rows.append(reproduce(b.identity(st.platform), st.key.exp, st.key.role))
    if rows:
        box += provenance(rows)
    return box


def stale_mark(b: Book, states) -> nodes.Node | None:
    """A small mark after a figure that comes from a stale fragment; its title says what changed."""
    stale = [s for s in states if s.state == "stale"]
    if not stale:
        return None
    from capture.sphinxext.reader import tip

    where = "、".join(dict.fromkeys(b.label(s.platform) for s in stale))
    return tip("（旧）", f"这个数来自这段代码较早的版本：在 {where} 上捕获之后，代码改动过", ["book-stale-mark"])


def fragment_href(env, platform: str, key, ext: str = "json") -> str:
    """A link from the current page to the published fragment file (see provenance.py)."""
    depth = env.docname.count("/")
    return "../" * depth + f"_fragments/{platform}/{key}.{ext}"


def value_node(env, b: Book, ans: Answer, text: str, rawtext: str = "") -> nodes.Node:
    """A recorded figure: a link to its fragment, tagged with the platform it came from."""
    from capture.sphinxext.reader import figure_tip

    st = ans.states[0]
    devices = sorted({s.fragment.meta.get("device") for s in ans.states if s.fragment is not None} - {None})
    title = figure_tip(b.label(ans.platform), "、".join(devices) or None, ans.expr)
    raw = getattr(ans.value, "v", ans.value)
    # a recorded text (an error message, a word) is shown as the program wrote it: code
    child = nodes.literal(text, text) if isinstance(raw, str) and raw == text else nodes.Text(text)
    classes = ["book-num", f"book-plat-{ans.platform}"] + (["book-measured"] if measured(ans.value) else [])
    ref = nodes.reference(rawtext, "", child, refuri=fragment_href(env, ans.platform, st.key), reftitle=title,
                          classes=classes)
    ref["support_smartquotes"] = False  # data shows as recorded: "x" stays "x", not “x”
    return ref


def measured(value) -> bool:
    """A figure that carries measurement drift (a timing, a rate, a ratio of them): the kind {cmp} compares, and
    the kind the word checks (words.py) will not let a sentence compare by hand."""
    from capture.evidence.query import Range, is_measured

    if isinstance(value, Range):
        return is_measured(value.unit)
    return bool(getattr(value, "drift", 0))  # capture/evidence/query.py: a measured value carries the drift it may move by


# -- tabs, one per platform ------------------------------------------------------------------
PLATFORM_OPTIONS = ("platform", "except")


def platform_choice(options: dict) -> tuple[str | None, tuple[str, ...]]:
    """`:platform: KEY` (that machine only: the one shown in the reading path) and `:except: KEY[, KEY]` (every
    machine but those: the others, in the section's {evidence} fold), checked; both at once is an error."""
    from capture.storage.keys import KeyError_, check_platform_key

    only = check_platform_key(options["platform"].strip(), ":platform:") if options.get("platform") else None
    others = tuple(check_platform_key(k.strip(), ":except:") for k in (options.get("except") or "").split(",") if k.strip())
    if only and others:
        raise KeyError_(":platform: and :except: together: name the one machine, or the machines to leave out")
    return only, others


def with_reader(b: Book, only: str | None, others: tuple[str, ...], plats: list[str], keys) -> list[str]:
    """The machines a block of outputs shows, with the reader's own machine (capture/machines/yours.py) beside the
    book's: next to the one machine of the reading path (`:platform:`), left out of the fold of the others
    (`:except:`, the block that follows the reading path's), and in a block of every machine also where it holds
    none of the fragments but could run them (its tab says why they are not there: no cargo, a failed run)."""
    mine = b.reader
    if not mine:
        return plats
    if others:
        return [p for p in plats if p != mine]
    if mine in plats:
        return plats
    if any(b.fragment(mine, k) is not None for k in keys) or could_run(b, mine, keys):
        return plats + [mine]
    return plats


def could_run(b: Book, platform: str, keys) -> bool:
    """Whether the machine is of a kind that runs any of these fragments (a GPU role needs a GPU, an experiment for
    one system needs that system); whether it did is its state."""
    ident = b.identity(platform)
    for k in keys:
        exp = b.experiment(k)
        if k.role == "gpu" and not ident.has_gpu:
            continue
        if exp.platforms and ident.os and ident.os not in exp.platforms:
            continue
        return True
    return False


def platform_tabs(items: list[tuple], classes=()) -> nodes.Node:
    """A sphinx-design tab set, one tab per (platform, label, content[, full name]), synchronised across the page.
    The label is the machine's short name; the full one is its tooltip."""
    from sphinx_design.shared import create_component

    from capture.sphinxext.reader import tip

    tab_set = create_component("tab-set", classes=["sd-tab-set", "book-platform-tabs", *classes])
    for plat, label, content, *full in items:
        rubric = nodes.rubric(label, "", tip(label, full[0] if full else ""), classes=["sd-tab-label"])
        rubric["sync_group"] = "platform"
        rubric["sync_id"] = plat
        body = create_component("tab-content", children=content, classes=["sd-tab-content"])
        tab_set += create_component("tab-item", children=[rubric, body], classes=["sd-tab-item"])
    return tab_set


def compiler_words(meta: dict) -> str:
    """For burn on CUDA: which compiler made the kernels (build record, capture/toolchains/cudacompiler.py), or ''."""
    if meta.get("framework") != "burn" or meta.get("device") != "cuda":
        return ""
    compiler = ((meta.get("versions") or {}).get("rust_build") or {}).get(cudacompiler.KEY)
    return f"CubeCL 内核编译：{cudacompiler.WORDS.get(compiler, compiler)}" if compiler else ""
