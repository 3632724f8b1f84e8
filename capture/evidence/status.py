"""Status: for every captured platform (and this machine), the state of each experiment and role.

States come from Book.state, the same answer the pages render: fresh, stale (with what changed),
missing, failed (a failure record for the current inputs), torn, corrupt, n/a (the machine cannot
run it). Each problem names the command that fixes it, on the machine that must run it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from capture.evidence.book import Book
from capture.storage.keys import FragmentKey


PROBLEMS = ("stale", "missing", "failed", "torn", "corrupt", "foreign")


@dataclass(frozen=True)
class Entry:
    platform: str
    key: str
    state: str  # fresh | stale | missing | failed | torn | corrupt | foreign | n/a
    detail: str = ""
    fix: str = ""
    local: bool = False

    @property
    def blocks_check(self) -> bool:
        """What `status --check` fails on: this machine's own problems (another machine's stale is not)."""
        return self.state in ("failed", "torn", "corrupt") or (self.local and self.state in ("stale", "missing", "foreign"))


def collect(book: Book, platforms: list[str]) -> list[Entry]:
    out = []
    for plat in platforms:
        for exp in book.manifest.experiments:
            for role in exp.roles:
                key = FragmentKey(exp.id, role)
                st = book.state(plat, key)
                fail = book.store.read(plat, str(key), failed=True)
                corrupt = book.corrupt(plat, key, fail)
                if corrupt:  # a file that cannot be used; the next regenerate on that platform overwrites it
                    out.append(Entry(plat, str(key), "corrupt", corrupt, st.fix, st.local))
                elif st.state == "not-applicable":
                    out.append(Entry(plat, str(key), "n/a", st.detail, local=st.local))
                elif fail is not None and not getattr(fail, "corrupt", None) and \
                        (st.fragment is None or fail.meta.get("inputs_hash") == book.current(key)[0]):
                    out.append(Entry(plat, str(key), "failed", fail.meta.get("failure", ""), st.fix, st.local))
                elif st.state == "fresh":
                    out.append(Entry(plat, str(key), "fresh", st.fragment.meta.get("started", ""), local=st.local))
                else:
                    detail = st.detail
                    if st.state == "missing" and exp.platforms:  # e.g. the Mac-only experiments
                        detail += f" (only {', '.join(exp.platforms)} machines run it)"
                    out.append(Entry(plat, str(key), st.state, detail, st.fix, st.local))
    return out


def as_json(entries: list[Entry]) -> list[dict]:
    return [asdict(e) for e in entries]


def render(entries: list[Entry], book: Book | None = None) -> str:
    lines = []
    by_plat: dict[str, list[Entry]] = {}
    for e in entries:
        by_plat.setdefault(e.platform, []).append(e)
    for plat, es in by_plat.items():
        counts: dict[str, int] = {}
        for e in es:
            counts[e.state] = counts.get(e.state, 0) + 1
        name = f" ({book.label(plat)})" if book else ""
        here = ", this machine" if es and es[0].local else ""
        lines.append(f"{plat}{name}{here}: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
        if book is not None and plat in book.broken:
            lines.append(f"  broken   {book.broken[plat]}")
        for e in es:
            if e.state != "n/a":
                lines.append(f"  {e.state:<8} {e.key:<32} {e.detail}")
        todo = sorted({e.key.split("@")[0] for e in es if e.state in PROBLEMS})
        if todo and book is not None:
            cmd = f"nox -s regenerate -- --only {' '.join(todo)}" if es[0].local else book.identity(plat).regenerate_command(todo)
            lines.append(f"  to regenerate: {cmd}")
    for plat, why in (book.broken.items() if book is not None else ()):
        if plat not in by_plat:  # its folder cannot be used: said, not left out
            lines.append(f"{plat}: broken: {why}")
    return "\n".join(lines)


def host_note(book: Book, key: str, platform=None, own_key: str = "") -> str:
    """A line for status when this host detects `key` but is not that platform's machine ('' otherwise).

    `platform` (this host, detected) and `own_key` (the key suggested for it): `--adopt` is suggested only where
    it would be accepted, not where this host cannot run a role the platform holds (capture.machines.hosts)."""
    from capture.machines import hosts

    if not book.other_host:
        return ""
    note = (f"this host is not {key}'s machine ({book.other_host}); its fragments are another machine's, "
            "and `capture check` compares skeletons only. ")
    lost = hosts.lost_roles(book.store, key, platform) if platform is not None else []
    if lost:
        return note + (f"This host cannot be made that machine (it cannot run {'; '.join(lost)}); to capture it as a "
                       f"platform of its own: BOOK_PLATFORM={own_key or '<a key of its own>'} nox -s regenerate")
    return note + "To make this host that machine: nox -s regenerate -- --adopt"


def problems(entries: list[Entry], claims: list[dict], book: Book | None = None) -> list[str]:
    """What `status --check` reports (and exits 1 on)."""
    out = [f"{e.platform}: {e.key} is {e.state}: {e.detail}" for e in entries if e.blocks_check]
    if book is not None:
        out += [f"{p}: platform.json is broken: {why}" for p, why in book.broken.items() if p == book.local]
    out += [f"claim fails on {c['platform']}: {c['where']}" for c in claims]
    return out

