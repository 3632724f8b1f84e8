"""Claims: predicates over records, written in a page next to the sentence they support.

    :::{claim} median(burn-drop@gpu:drop.dropped_per_eval) < 0.1 * median(burn-drop@gpu:drop.kept.median)
    :where: cuda, vulkan
    丢掉的结果几乎不花时间。
    :::

A claim is evaluated on every captured platform that holds its fragments (inside a
`{per-platform}` block: only on the platforms of that block). `:where:` says where it is
*expected* to hold: `all` (the default), a device family (cpu, cuda, vulkan, metal, mps, wgpu,
or gpu for any of the GPU ones; a family matches when every fragment the claim reads ran on
such a device), a vendor (nvidia, apple), an OS (linux, macos) or platform keys. Where it is
expected and false, the docs build warns (an error under -W) and shows both sides of each
comparison; elsewhere the page shows the verdict for what it is, a difference between machines.
`python -m capture status` checks the same claims without Sphinx (this module has none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from capture.evidence.book import NOTE, OK, WARN, Answer, Book
from capture.machines.identity import Identity, family
from capture.storage.keys import PLATFORM_KEY
from capture.plan.manifest import ManifestError
from capture.evidence.query import QueryError
from capture.system import regular

FAMILIES = ("cpu", "cuda", "vulkan", "metal", "mps", "wgpu")
VENDORS = ("nvidia", "apple")
SYSTEMS = ("linux", "macos")
WORDS = ("all", "gpu", *FAMILIES, *VENDORS, *SYSTEMS)


class WhereError(ValueError):
    pass


def parse_where(text: str | None) -> tuple[str, ...]:
    """`cuda, vulkan` -> ("cuda", "vulkan"); unknown words that are not platform keys are an error."""
    if not text or not text.strip():
        return ("all",)
    tokens = tuple(t.strip() for t in re.split(r"[,\s]+", text.strip()) if t.strip())
    for t in tokens:
        if t not in WORDS and not PLATFORM_KEY.fullmatch(t):
            raise WhereError(f"{t!r} is not a place a claim can be scoped to: use {', '.join(WORDS)} or a platform key")
    return tokens


def device_matches(tokens: tuple[str, ...], ident: Identity, device: str | None) -> bool:
    fam = family(device)
    for t in tokens:
        if t in ("all", ident.key, ident.os, ident.gpu_vendor) or t == fam or (t == "gpu" and fam not in (None, "cpu")):
            return True
    return False


def platform_matches(tokens: tuple[str, ...], ident: Identity) -> bool:
    """A platform matches a family when any of its devices belongs to it (for {per-platform} blocks)."""
    devices = {d for fw in ident.roles.values() for d in (fw or {}).values()} or {None}
    return any(device_matches(tokens, ident, d) for d in devices)


@dataclass(frozen=True)
class Verdict:
    platform: str
    expected: bool
    holds: bool | None  # None: not evaluated there (see `evaluated`), or the data cannot tell
    answer: Answer
    devices: tuple[str, ...] = ()
    why: str = ""  # English: the comparison that decided (capture/evidence/query.py), or why it was not evaluated
    severity: str = OK
    evaluated: bool = True  # False: no usable data there (stale fragment without the record, a page mistake)

    @property
    def stale(self) -> bool:
        return bool(self.answer.stale)

    @property
    def undecided(self) -> bool:
        """Evaluated, and the measurements cannot tell yes from no (capture/evidence/verdict.py)."""
        return self.evaluated and self.holds is None


def check_known(tokens: tuple[str, ...], book: Book) -> None:
    """A platform key in a scope must name a captured platform (or this machine): a typo is an error."""
    known = set(book.platforms()) | ({book.local} if book.local else set())
    for t in tokens:
        if t not in WORDS and t not in known:
            raise WhereError(f"{t!r} is not a place a claim can be scoped to: use {', '.join(WORDS)} "
                             f"or a captured platform ({', '.join(sorted(known)) or 'none yet'})")


def judge(book: Book, expr: str, where: tuple[str, ...] = ("all",), within: tuple[str, ...] | None = None,
          differs: tuple[str, ...] = ()) -> list[Verdict]:
    """Evaluate a claim on each platform that holds its fragments (restricted to `within` platform filters)."""
    check_known(where, book)
    out = []
    for p in book.platforms_with(expr):
        ident = book.identity(p)
        if within is not None and not platform_matches(within, ident):
            continue
        ans = book.answer(expr, p, differs)
        devices = tuple(st.fragment.meta.get("device") or "" for st in ans.states if st.fragment is not None)
        expected = all(device_matches(where, ident, d) for d in devices) if devices else "all" in where
        if ans.error or not ans.ok:
            why = ans.error or (ans.blocking.detail if ans.blocking else "not evaluated")
            out.append(Verdict(p, expected, None, ans, devices, why, ans.severity if expected else NOTE, evaluated=False))
            continue
        val = getattr(ans.value, "v", ans.value)
        why = getattr(ans.value, "why", "")
        if val is None and why:  # the measurements cannot tell: reported, neither passed nor failed
            out.append(Verdict(p, expected, None, ans, devices, why, NOTE))
            continue
        if not isinstance(val, bool):
            out.append(Verdict(p, expected, None, ans, devices, f"the expression gives {val!r}, not true/false", WARN,
                               evaluated=False))
            continue
        strict = p != book.reader or book.reader_is_book  # the reader's machine: shown, never a build error
        out.append(Verdict(p, expected, val, ans, devices, why or ("false with the captured data" if not val else ""),
                           WARN if expected and not val and strict else OK))
    return out


@dataclass(frozen=True)
class ClaimSite:
    page: Path
    line: int
    expr: str
    where: str | None
    platform: str | None  # :platform: of the claim itself
    within: tuple[str, ...] | None  # filters of the enclosing {per-platform} blocks
    differs: str | None = None  # :differs: conditions compared unlike on purpose (capture/evidence/alike.py)


_OPEN = re.compile(r"^\s*(:{3,}|`{3,})\{([a-z][a-z-]*)\}\s*(.*?)\s*$")
_CLOSE = re.compile(r"^\s*(:{3,}|`{3,})\s*$")
_OPTION = re.compile(r"^\s*:([a-z-]+):\s*(.*?)\s*$")


def find_claims(docs: Path) -> list[ClaimSite]:
    """Every claim directive in the pages, with its options and enclosing {per-platform} filters."""
    out = []
    for page in sorted(docs.rglob("*.md")):
        if any(part.startswith("_") for part in page.relative_to(docs).parts):
            continue
        lines = regular.read_text(page).splitlines()
        stack: list[tuple[str, str, str]] = []  # (fence, directive, argument)
        for n, line in enumerate(lines, 1):
            m = _OPEN.match(line)
            if m:
                fence, name, arg = m.groups()
                stack.append((fence, name, arg))
                if name == "claim":
                    opts = {}
                    for nxt in lines[n:]:
                        om = _OPTION.match(nxt)
                        if not om:
                            break
                        opts[om.group(1)] = om.group(2)
                    blocks = [parse_where(a) for f, d, a in stack if d == "per-platform"]
                    within = tuple(t for b in blocks for t in b) if blocks else None
                    out.append(ClaimSite(page, n, arg, opts.get("where"), opts.get("platform"), within, opts.get("differs")))
                continue
            c = _CLOSE.match(line)
            if c:
                for i in range(len(stack) - 1, -1, -1):
                    if stack[i][0][0] == c.group(1)[0] and len(stack[i][0]) <= len(c.group(1)):
                        del stack[i:]
                        break
    return out


def failing_claims(book: Book, undecided: list | None = None) -> list[dict]:
    """Claims that do not hold where they are expected to (for `status`), as plain dicts.

    `undecided`, when given, collects the claims the data cannot decide where they are expected (reported, not failing).
    """
    out = []
    for site in find_claims(book.layout.root / "docs"):
        where = f"{book.layout.rel(site.page)}:{site.line}"
        try:
            tokens = parse_where(site.where)
            within = (site.platform,) if site.platform else site.within
            differs = tuple(w for w in (site.differs or "").replace(",", " ").split() if w)
            verdicts = judge(book, site.expr, tokens, within, differs)
            pending = None if verdicts else book.pending(site.expr)
        except (WhereError, QueryError, ManifestError) as e:
            out.append({"platform": "-", "where": where, "text": site.expr, "why": str(e)})
            continue
        if pending is not None and pending.severity == WARN:
            out.append({"platform": "-", "where": where, "text": site.expr, "why": "no captured platform has its data"})
        for v in verdicts:
            for u in v.answer.unlike:
                out.append({"platform": v.platform, "where": where, "text": site.expr, "why": f"compares unlike things: {u}"})
            if v.severity == WARN and not v.answer.unlike:
                out.append({"platform": v.platform, "where": where, "text": site.expr, "why": v.why or "false"})
            elif v.undecided and v.expected and undecided is not None:
                undecided.append({"platform": v.platform, "where": where, "text": site.expr, "why": v.why})
    return out
