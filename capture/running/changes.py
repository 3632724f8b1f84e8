"""What changed between two captures of the same experiments: outputs, figures, verdicts, numbers, sentences.

`compare(old, new, keys)` reads two sides, each a book (a checkout, capture/evidence/book.py) and a platform
key in it, and answers, as plain data (JSON), what an upgrade report shows:

- outputs that changed shape: the skeleton of the text (capture/running/normalize.py: durations, addresses,
  pids masked) differs, or a recorded text or flag differs (a new error message, another backend name);
- figures: every timing figure (capture/evidence/drift.py `figures`: a record over its repeats) old -> new,
  how far it moved beyond its repeats (drift.move) and whether that is beyond the drift measured for it
  (its own, or its kind's on the platform: docs/drift.json), with its history on the platform's own machine
  grouped by the version of the upgraded package;
- verdicts: every claim, verdict-matrix row, chart branch, {cmp} and table verdict of the pages
  (share.verdict_expressions), answered on both sides by the one rule (yes, no, about the same, cannot tell);
- claims that the pages expect to hold and that fail on the new side;
- numbers: every {num} and {meta} the pages show, formatted as the pages format them;
- sentences: the page lines that show any of those.

Both ways an upgrade runs (a platform's own machine, or this host running both pins) come through here the same
way: only the two (book, platform) pairs differ.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

from capture.evidence import drift as driftmod
from capture.evidence.book import Book
from capture.evidence.fmt import fmt_value
from capture.evidence.query import parse_refs
from capture.evidence.share import evaluate, verdict_expressions
from capture.running.normalize import diff, skeleton
from capture.storage.keys import FragmentKey

_NUM = re.compile(r"\{num\}`([^`]+)`")
_META = re.compile(r"\{meta\}`([^`]+)`")
REPORT_PAGES = "upgrades"  # docs/dev/upgrades/: the reports themselves are not pages of the book to compare


@dataclass
class Side:
    book: Book
    platform: str  # its key in that book
    label: str  # how the report names it ("0.11.0, committed", "0.11.1, this host")


def pages(docs: Path) -> list[Path]:
    return [p for p in sorted(docs.rglob("*.md"))
            if not any(part.startswith("_") for part in p.relative_to(docs).parts)
            and REPORT_PAGES not in p.relative_to(docs).parts]


class Lines:
    """Page lines by page name and number, for the sentences a change reaches."""

    def __init__(self, docs: Path):
        self.docs = docs
        self.by_name: dict[str, list[Path]] = {}
        self._text: dict[Path, list[str]] = {}
        for p in pages(docs):
            self.by_name.setdefault(p.name, []).append(p)

    def lines(self, page: Path) -> list[str]:
        if page not in self._text:
            self._text[page] = page.read_text(encoding="utf-8").splitlines()
        return self._text[page]

    def locate(self, where: str, hint: str = "") -> tuple[str, int, str]:
        """("dev/x.md", line, the sentence) for a `name.md:N ...` location (verdict_expressions' form)."""
        m = re.match(r"([^:]+):(\d+)", where)
        if not m:
            return where, 0, ""
        name, n = m.group(1), int(m.group(2))
        cands = self.by_name.get(name, [])
        page = next((p for p in cands if hint and len(self.lines(p)) >= n and hint in self.lines(p)[n - 1]), None)
        page = page or (cands[0] if cands else None)
        if page is None:
            return name, n, ""
        return page.relative_to(self.docs).as_posix(), n, self.sentence(page, n)

    def section(self, page: str, n: int) -> str:
        """The heading of the section that holds line n of a page (docs-relative path): where the prose around a
        changed value is, which no expression reads."""
        lines = self.lines(self.docs / page) if (self.docs / page).is_file() else []
        fence = False
        heading = ""
        for line in lines[:n]:
            if re.match(r"^\s*(```|~~~)", line):
                fence = not fence
            m = None if fence else re.match(r"^(#{1,6})\s+(.*)$", line)
            if m:
                heading = m.group(2).strip()
        return heading

    def sentence(self, page: Path, n: int) -> str:
        """The line, or for a directive (a claim) the text it holds."""
        lines = self.lines(page)
        if not 0 < n <= len(lines):
            return ""
        line = lines[n - 1].strip()
        if re.match(r"^(:{3,}|`{3,})\{", line):
            body = []
            for nxt in lines[n:]:
                s = nxt.strip()
                if re.match(r"^(:{3,}|`{3,})", s):
                    break
                if s.startswith(":") and not body:
                    continue
                if s:
                    body.append(s)
            return " ".join(body) if body else line
        return line

    def showing(self, key: str, records: list[str]) -> list[tuple[str, int, str]]:
        """The page lines that show a fragment's output ({output} KEY, a KEY line of {outputs}) or read one of these
        records of it (KEY:record)."""
        exp, _, role = key.partition("@")
        keyrx = rf"{re.escape(exp)}@(?:{re.escape(role)}|\{{role\}})"
        shows = re.compile(rf"^\s*(?:(?::{{3,}}|`{{3,}})\{{output\}}\s+)?{keyrx}\s*(?:\|.*)?$")
        reads = re.compile(rf"(?<![a-z0-9._-]){keyrx}:(?:{'|'.join(re.escape(r) for r in records) or '(?!)'})(?![a-z0-9_.])")
        out = []
        for names in self.by_name.values():
            for p in names:
                for i, line in enumerate(self.lines(p), 1):
                    if shows.match(line) or reads.search(line):
                        out.append((p.relative_to(self.docs).as_posix(), i, self.sentence(p, i)))
        return out

    def using(self, key: str) -> list[tuple[str, int, str]]:
        """Every page line that reads a fragment (experiment@role, or experiment@{role} in a template)."""
        exp, _, role = key.partition("@")
        pat = re.compile(rf"(?<![a-z0-9._-]){re.escape(exp)}@(?:{re.escape(role)}|\{{role\}})(?![a-z0-9_-])")
        out = []
        for names in self.by_name.values():
            for p in names:
                for i, line in enumerate(self.lines(p), 1):
                    if pat.search(line):
                        out.append((p.relative_to(self.docs).as_posix(), i, self.sentence(p, i)))
        return out


def answer_text(o) -> str:
    """One verdict's answer in words: yes, no, about the same (within xk), cannot tell; '-' where not evaluated."""
    if o is None:
        return "-"
    if o.v is True:
        return "yes"
    if o.v is False:
        return "no"
    if o.same is not None:
        return f"about the same (within x{o.same:g})"
    return "cannot tell"


def verdicts(old: Side, new: Side, exprs: list[tuple[str, str]], lines: Lines) -> list[dict]:
    """Every verdict whose answer differs between the sides (or that one side cannot evaluate)."""
    a = evaluate(old.book, exprs, old.platform)
    b = evaluate(new.book, exprs, new.platform)
    text = dict(exprs)
    out = []
    for where in sorted(set(a) | set(b), key=_where_order):
        x, y = a.get(where), b.get(where)
        if answer_text(x) == answer_text(y):
            continue
        refs = parse_refs(text[where])[1]
        page, n, sentence = lines.locate(where, refs[0].key if refs else "")
        out.append({"where": where, "page": page, "line": n, "sentence": sentence, "expr": text[where],
                    "old": answer_text(x), "new": answer_text(y), "old_why": getattr(x, "why", ""),
                    "new_why": getattr(y, "why", ""), "timed": bool((x and x.timed) or (y and y.timed)),
                    "claim": where.count(" ") == 0})
    return out


def _where_order(where: str):
    m = re.match(r"([^:]+):(\d+)(.*)", where)
    return (m.group(1), int(m.group(2)), m.group(3)) if m else (where, 0, "")


def claims_failing(side: Side) -> list[dict]:
    """Claims the pages expect to hold on the side's platform and that do not (capture/evidence/claims.py)."""
    from capture.evidence.claims import failing_claims

    return [c for c in failing_claims(side.book) if c["platform"] == side.platform]


def _style(text: str) -> tuple[str, dict]:
    expr, _, style = text.partition("|")
    opts = {}
    for s in style.split(","):
        k, _, v = s.strip().partition("=")
        if k:
            opts[k.strip()] = v.strip() or True
    return expr.strip(), opts


def show_number(book: Book, text: str, platform: str) -> str | None:
    """A {num} as the pages show it on the platform (fmt_value with its style), or None where it has no value there."""
    expr, opts = _style(text)
    try:
        keys = book.refs(expr)
    except Exception:  # noqa: BLE001 -- a page mistake is the build's to report
        return None
    if not all(book.fragment(platform, k) is not None for k in keys):
        return None
    ans = book.answer(expr, platform)
    if ans.error or not ans.ok:
        return None
    if getattr(ans.value, "v", 0) is None and getattr(ans.value, "why", ""):
        return "说不清"
    style = "ratio" if opts.get("ratio") else "percent" if opts.get("percent") else "decimal" if opts.get("decimal") else ""
    digits = int(opts.get("digits", 3 if not opts.get("ratio") else 2))
    shown = fmt_value(ans.value, digits=digits, style=style).replace("\u00a0", " ")
    return ("约 " + shown) if opts.get("approx") else shown


def show_meta(book: Book, text: str, platform: str) -> str | None:
    key, _, path = text.strip().partition(":")
    try:
        frag = book.fragment(platform, FragmentKey.parse(key))
    except ValueError:
        return None
    if frag is None or frag.corrupt:
        return None
    node: object = frag.meta
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return json.dumps(node, ensure_ascii=False) if isinstance(node, (dict, list)) else str(node)


def numbers(old: Side, new: Side, lines: Lines, keys: set[str]) -> list[dict]:
    """The {num} and {meta} values of the pages that read a compared fragment and show something else now."""
    out = []
    for names in lines.by_name.values():
        for p in names:
            for i, line in enumerate(lines.lines(p), 1):
                for role, rx, show in (("num", _NUM, show_number), ("meta", _META, show_meta)):
                    for m in rx.finditer(line):
                        text = m.group(1)
                        refs = {r.key for r in parse_refs(_style(text)[0])[1]} if role == "num" else \
                            {text.partition(":")[0].strip()}
                        if not refs & keys:
                            continue
                        a, b = show(old.book, text, old.platform), show(new.book, text, new.platform)
                        if a == b or (a is None and b is None):
                            continue
                        out.append({"role": role, "text": text, "page": p.relative_to(lines.docs).as_posix(),
                                    "line": i, "sentence": lines.sentence(p, i), "old": a, "new": b})
    return out


def shape(old_frag, new_frag, mask) -> dict | None:
    """How an output changed shape: its skeleton's diff and the recorded texts and flags that differ."""
    a, b = skeleton(old_frag.text, mask), skeleton(new_frag.text, mask)
    lines = diff(a, b).splitlines()[2:60] if a != b else []
    recs = []
    olds = {_rid(r): r for r in old_frag.records}
    news = {_rid(r): r for r in new_frag.records}
    for rid in sorted(set(olds) | set(news), key=str):
        x, y = olds.get(rid), news.get(rid)
        xv, yv = (x or {}).get("value"), (y or {}).get("value")
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (xv, yv))
        if x is None or y is None:
            recs.append({"record": _label(rid), "old": "absent" if x is None else repr(xv),
                         "new": "absent" if y is None else repr(yv)})
        elif not numeric and xv != yv:
            recs.append({"record": _label(rid), "old": repr(xv), "new": repr(yv)})
    if not lines and not recs:
        return None
    return {"diff": lines, "records": recs}


MATCH_IGNORES = ("version",)  # tags that name the version that ran (candle-source's): the upgrade changes them by design


def _rid(r: dict):
    return (r["name"], tuple(sorted((k, str(v)) for k, v in (r.get("tags") or {}).items() if k not in MATCH_IGNORES)))


def _label(rid) -> str:
    name, tags = rid
    return name + ("{" + ",".join(f"{k}={v}" for k, v in tags) + "}" if tags else "")


def figures(old: Side, new: Side, key: str, drift_book: Book, drift_platform: str) -> list[dict]:
    """Each timing figure of a fragment on both sides: medians, the move beyond the repeats (drift.move), the drift it
    is measured against (its own on the platform, else its kind's: docs/drift.json) and whether it moved beyond."""
    fk = FragmentKey.parse(key)
    a, b = old.book.fragment(old.platform, fk), new.book.fragment(new.platform, fk)
    if a is None or b is None or a.corrupt or b.corrupt:
        return []
    fa, fb = driftmod.figures(a.records), driftmod.figures(b.records)
    drifts = drift_book.drifts
    out = []
    for fig in sorted(fa.keys() & fb.keys(), key=str):
        name, tags = fig
        label = driftmod.figure_label(key, name, tags)
        kind = driftmod.kind(name, dict(tags))
        own = drifts.own(drift_platform, label)
        factor = own or drifts.factor(drift_platform, kind)
        moved = driftmod.move(fa[fig], fb[fig])
        ratio = statistics.median(fb[fig]) / statistics.median(fa[fig])
        out.append({"key": key, "figure": label, "kind": kind, "unit": _unit(a.records, name),
                    "old": sorted(fa[fig]), "new": sorted(fb[fig]), "ratio": ratio,
                    "move": math.exp(moved), "drift": factor, "own_drift": own is not None,
                    "beyond": moved > math.log(factor) + 1e-12})
    return out


def _unit(records: list[dict], name: str) -> str:
    return next((r.get("unit") or "" for r in records if r.get("name") == name), "")


def version_of(meta: dict, package: str, at_commit: str = "") -> str:
    """The version of `package` a fragment was captured with: from its metadata (Cargo.lock's burn / candle-core /
    candle-nn / cubecl, torch), else the lock of the commit that holds it (`at_commit`, a version string or ''), or '?'."""
    versions = meta.get("versions") or {}
    if package in versions:
        return str(versions[package])
    if package == "torch" and versions.get("torch"):
        return str(versions["torch"]).split("+")[0]
    return at_commit or "?"


def lock_version_at(root: Path, commit: str, package: str, cache: dict) -> str:
    """The version(s) of `package` that crates/Cargo.lock or uv.lock pin at a commit ('' when neither names it)."""
    import subprocess
    import tomllib

    if (commit, package) not in cache:
        found = ""
        for rel in ("crates/Cargo.lock", "uv.lock"):
            try:
                r = subprocess.run(["git", "show", f"{commit}:{rel}"], cwd=root, capture_output=True, text=True, timeout=60)
                pkgs = tomllib.loads(r.stdout).get("package", []) if r.returncode == 0 else []
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pkgs = []
            versions = sorted({str(p.get("version")) for p in pkgs if isinstance(p, dict) and p.get("name") == package})
            if versions:
                found = "/".join(versions)
                break
        cache[(commit, package)] = found
    return cache[(commit, package)]


def history(root: Path, platform: str, keys: set[str], package: str) -> dict[str, list[dict]]:
    """figure label -> its captures on the platform's own machine in the git history, oldest first, each with the
    version of `package` it ran with: the figure across versions."""
    try:
        host = driftmod.platform_host(root, platform)
        snaps = driftmod.snapshots(root, platform)
    except Exception:  # noqa: BLE001 -- no history (no git, a shallow clone): the report says none
        return {}
    seen: set[tuple[str, str]] = set()
    out: dict[str, list[dict]] = {}
    locks: dict = {}
    for snap in snaps:
        for key, meta in snap.metas.items():
            if key not in keys or not isinstance(meta, dict) or not meta.get("started"):
                continue
            if (key, meta["started"]) in seen or not driftmod.own_host(meta, host):
                continue
            seen.add((key, meta["started"]))
            version = version_of(meta, package, "" if package in (meta.get("versions") or {}) else
                                 lock_version_at(root, snap.commit, package, locks))
            for (name, tags), vs in driftmod.figures(list(meta.get("records") or [])).items():
                out.setdefault(driftmod.figure_label(key, name, tags), []).append(
                    {"started": meta["started"], "version": version, "median": statistics.median(vs),
                     "min": min(vs), "max": max(vs)})
    for caps in out.values():
        caps.sort(key=lambda c: c["started"])
    return out


def compare(old: Side, new: Side, keys: list[str], drift_platform: str, package: str = "",
            history_root: Path | None = None, history_platform: str = "") -> dict:
    """Everything that changed between the two sides for these experiment@role keys (see the module doc)."""
    docs = new.book.layout.root / "docs"
    lines = Lines(docs)
    exprs = verdict_expressions(docs)
    exprs = [(w, e) for w, e in exprs if REPORT_PAGES not in w]
    manifest = new.book.manifest
    fragments, outputs, figs = {}, [], []
    for key in keys:
        fk = FragmentKey.parse(key)
        a, b = old.book.fragment(old.platform, fk), new.book.fragment(new.platform, fk)
        sa = old.book.state(old.platform, fk).state if a is not None else "missing"
        sb = new.book.state(new.platform, fk).state if b is not None else "missing"
        failed = new.book.store.read(new.platform, key, True)
        fragments[key] = {"old": sa, "new": sb,
                          "failed": (failed.meta.get("failure") or failed.text.splitlines()[0] if failed.text else "failed")
                          if failed is not None and not failed.corrupt else ""}
        if fragments[key]["failed"]:  # the pages that read it: what the upgrade leaves them without
            fragments[key]["pages"] = [list(x) for x in lines.using(key)]
        if a is None or b is None or a.corrupt or b.corrupt:
            continue
        try:
            mask = manifest.get(fk.exp).mask
        except Exception:  # noqa: BLE001
            mask = ()
        got = shape(a, b, mask)
        if got:
            names = [r["record"].split("{")[0] for r in got["records"]]
            outputs.append({"key": key, **got, "pages": [list(x) for x in lines.showing(key, names)]})
        figs += figures(old, new, key, old.book, drift_platform)
    hist = history(history_root, history_platform, set(keys), package) if history_root and history_platform else {}
    for f in figs:
        f["history"] = hist.get(f["figure"], [])
    changed = verdicts(old, new, exprs, lines)
    nums = numbers(old, new, lines, set(keys))
    return {
        "old": {"platform": old.platform, "label": old.label},
        "new": {"platform": new.platform, "label": new.label},
        "drift_platform": drift_platform,
        "fragments": fragments,
        "outputs": outputs,
        "figures": figs,
        "verdicts": changed,
        "numbers": nums,
        "claims_failing": {"old": claims_failing(old), "new": claims_failing(new)},
    }


def sentences(result: dict, docs: Path | None = None) -> list[dict]:
    """The page sentences a comparison reaches: each page line once, with what reached it (and, given the pages,
    the heading of its section: the prose around it says the same things in words no expression checks)."""
    out: dict[tuple[str, int], dict] = {}

    def add(page, line, sentence, why):
        if not page or not line:
            return
        item = out.setdefault((page, line), {"page": page, "line": line, "sentence": sentence, "why": []})
        if why not in item["why"]:
            item["why"].append(why)

    for v in result["verdicts"]:
        add(v["page"], v["line"], v["sentence"], f"verdict {v['old']} -> {v['new']}")
    for n in result["numbers"]:
        add(n["page"], n["line"], n["sentence"], f"{n['role']} {n['old']} -> {n['new']}")
    for o in result["outputs"]:
        for page, line, sentence in o["pages"]:
            add(page, line, sentence, f"output {o['key']} changed shape")
    for key, f in result["fragments"].items():
        for page, line, sentence in f.get("pages") or []:
            add(page, line, sentence, f"{key} fails with the new pins: {f['failed'][:80]}")
    if docs is not None:
        lines = Lines(docs)
        for item in out.values():
            item["section"] = lines.section(item["page"], item["line"])
    return sorted(out.values(), key=lambda x: (x["page"], x["line"]))
