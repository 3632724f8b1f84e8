"""The book's view of its fragments: one answer to "this reference on this platform".

Pages, `status` and the claim checker all ask the same two questions, and get their answers
only from here:
- `state(platform, key)`: is the fragment there, fresh, stale, torn, corrupt, not applicable;
  what changed since it was captured; the command that regenerates it on the machine that must
  run it; whether a problem with it should fail a strict build on this machine.
- `answer(expr, platform)`: the value of an expression over records on one platform, with the
  states of every fragment it read.
Nothing here imports Sphinx; the directives only render what these return.

Severity rule (the one place it is decided): a problem is a *warning* (an error under -W) when
this machine can fix it — a stale, torn, corrupt or missing fragment of this machine's own
platform, a reference or expression that is wrong on the page, or data no platform has that
this machine could capture. A stale fragment of another machine is shown with a note that
names what changed and the command to run there; it does not fail this machine's build.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from capture.evidence import alike
from capture.evidence import runs as runsmod
from capture.machines import fingerprint as fpmod
from capture.machines import identity as identitymod
from capture.plan import inputs as inputsmod
from capture.plan import manifest as manifestmod
from capture.evidence import verdict as verdictmod
from capture.machines.roles import GPU_VARIANTS
from capture.storage.keys import FragmentKey, KeyError_, check_platform_key
from capture.storage.paths import Layout
from capture.evidence.query import Evaluator, MissingData, QueryError, check_syntax, parse_refs
from capture.storage.records import matches
from capture.storage.store import Fragment, Overlay, Store

OK, NOTE, WARN = "ok", "note", "warn"
USABLE = ("fresh", "stale")


@dataclass(frozen=True)
class FragmentState:
    platform: str
    key: FragmentKey
    state: str  # fresh | stale | missing | not-applicable | torn | corrupt | foreign (captured on another machine)
    fragment: Fragment | None = None
    detail: str = ""  # English, for build logs and status
    changed: tuple[str, ...] = ()  # for stale: the inputs that differ since the capture
    fix: str = ""  # the command that regenerates it, on the machine that must run it
    local: bool = False  # this machine's own platform
    severity: str = OK

    @property
    def usable(self) -> bool:
        return self.fragment is not None and self.state in USABLE

    @property
    def json_path(self) -> str:
        return f"{self.platform}/{self.key}.json"


@dataclass(frozen=True)
class Answer:
    platform: str
    expr: str
    value: object = None
    states: tuple[FragmentState, ...] = ()
    error: str = ""  # the expression or a record it names is wrong (fix the page or the data)
    severity: str = OK
    no_record: bool = False  # the error is a record the fragment does not have (not measured there)
    unlike: tuple[str, ...] = ()  # what the expression compares unlike (capture/evidence/alike.py): a page warning

    @property
    def ok(self) -> bool:
        return not self.error and all(s.usable for s in self.states)

    @property
    def stale(self) -> tuple[FragmentState, ...]:
        return tuple(s for s in self.states if s.state == "stale")

    @property
    def blocking(self) -> FragmentState | None:
        """The first fragment that keeps this from having a value."""
        return next((s for s in self.states if not s.usable), None)


def _worst(*sev: str) -> str:
    return WARN if WARN in sev else NOTE if NOTE in sev else OK


class Book:
    def __init__(self, root: Path, order: list[str] | None = None, local: identitymod.Identity | None = None,
                 reader=None):
        """`local`: this machine (identity.of_machine(detect())); None when nothing here can regenerate.

        `reader` (capture/machines/yours.py Reader): the reader's own machine, shown beside the book's platforms as
        「你的机器」 — its own folder under .capture/yours/, or the book platform this host is the machine of.
        Only the local site asks for it (BOOK_YOURS=1); the published book never has one."""
        self.layout = Layout(root)
        base = Store(self.layout.fragments)
        self.reader: str | None = None  # the reader's platform key, once it holds something
        self.reader_is_book = False  # the reader's machine is one of the book's own platforms
        extra = {}
        if reader is not None:
            if reader.book_platform:
                self.reader, self.reader_is_book = reader.key, True
            else:
                own = Store(reader.root)
                if reader.key in own.platforms() or reader.key in own.folder_problems():
                    extra = {reader.key: own}
                    self.reader = reader.key
        self.store = Overlay(base, extra) if extra else base
        self.order = [check_platform_key(p, "book_platforms entry") for p in (order or [])]
        self.local = local.key if local else None
        self._inputs: dict[FragmentKey, tuple[str, dict]] = {}
        self._frags: dict[tuple[str, FragmentKey], Fragment | None] = {}
        self._local = local
        self._ids: dict[str, identitymod.Identity] = {}
        # platform -> why its folder (capture/storage/store.py folder_problems) or its platform.json cannot be used
        self.broken: dict[str, str] = self.store.folder_problems()
        self._states: dict[tuple[str, FragmentKey], FragmentState] = {}
        self._runs: dict[str, dict[str, str]] = {}
        self._starts: dict[str, dict[str, str]] = {}
        # This host is the local platform's machine only if their fingerprints agree: a CI runner or
        # a new box that detects the same key is another machine, and the committed fragments are not its own.
        self.other_host = ""
        if local is not None and local.fingerprint is not None and local.key in self.store.platforms():
            stored = self.identity(local.key)
            if local.key not in self.broken and not fpmod.same(stored.host, local.host):
                self.other_host = "; ".join(fpmod.differences(stored.host, local.host))
                self.local = None

    @cached_property
    def manifest(self) -> manifestmod.Manifest:
        return manifestmod.load(self.layout.manifest)

    # -- platforms --------------------------------------------------------------------------
    def platforms(self) -> list[str]:
        """Captured platforms in the book's order: those conf.py's book_platforms names, in that order;
        then the rest with the author's kind of machine first (Apple silicon, then other GPU machines,
        then CPU-only boxes), each group by key."""
        stored = set(self.store.platforms())
        own = {self.reader} & stored if self.reader and not self.reader_is_book else set()
        rest = sorted(stored - set(self.order) - own, key=lambda p: (self._rank(p), p))
        return [p for p in self.order if p in stored and p not in own] + rest + sorted(own)  # the reader's last

    def book_platforms(self) -> list[str]:
        """The book's own platforms (platforms() without a reader's machine kept outside the book)."""
        return [p for p in self.platforms() if p != self.reader or self.reader_is_book]

    def folder(self, platform: str) -> Path:
        """The platform's folder of fragments: docs/_fragments/<key>/, or the reader's under .capture/yours/."""
        return self.store.folder(platform) if isinstance(self.store, Overlay) else self.layout.fragments / platform

    def _rank(self, platform: str) -> int:
        ident = self.identity(platform)
        return 0 if ident.gpu_vendor == "apple" else 1 if ident.has_gpu else 2

    def expect(self, platform: str) -> identitymod.Identity:
        """A machine to look at from here (status --platform): its stored identity once it has captured,
        before that the one its key implies (identity.planned), so its experiments read as waiting for it."""
        if platform not in self.store.platforms() and platform != self.local:
            self._ids[platform] = identitymod.planned(platform)
        return self.identity(platform)

    def identity(self, platform: str) -> identitymod.Identity:
        """The platform's stored identity; this machine's own until it has one; else rebuilt from metadata."""
        if platform not in self._ids:
            ident = None
            if platform in self.store.platforms():
                try:
                    ident = identitymod.read(self.folder(platform).parent, platform)
                except identitymod.IdentityError as e:  # shown as broken; the rest of the book goes on
                    self.broken[platform] = str(e)
            if ident is None and platform == self.local:
                ident = self._local
            if ident is None:
                metas = [f.meta for k in self.store.keys(platform) if (f := self.fragment(platform, FragmentKey.parse(k)))]
                ident = identitymod.from_metadata(platform, metas)
            if platform == self.reader:
                ident = _yours(ident, self.reader_is_book)
            self._ids[platform] = ident
        return self._ids[platform]

    def label(self, platform: str, role: str | None = None) -> str:
        ident = self.identity(platform)
        return ident.role_label(role) if role else ident.display_name

    def short_label(self, platform: str, role: str | None = None) -> str:
        """label() in a few characters ("H200 · CPU", "2 核 CPU"), unique among the captured platforms:
        where two machines would share a short name, the system is added, then the full name is used."""
        ident = self.identity(platform)
        if platform == self.reader:  # 「你的机器」, whatever machine it is
            return ident.role_short(role, YOURS) if role else YOURS
        others = [self.identity(p) for p in self.platforms() if p not in (platform, self.reader)]
        name = ident.short_name
        if any(o.short_name == name for o in others):
            system = {"macos": "macOS", "linux": "Linux"}.get(ident.os, ident.os)
            name = f"{name}（{system}）" if system else name
            if any(o.short_name == ident.short_name and o.os == ident.os for o in others):
                name = ident.display_name
        return ident.role_short(role, name) if role else name

    # -- fragments --------------------------------------------------------------------------
    def experiment(self, key: FragmentKey) -> manifestmod.Experiment:
        """The manifest entry, or ManifestError naming the known ids / roles (a page mistake)."""
        exp = self.manifest.get(key.exp)
        if key.role not in exp.roles:
            raise manifestmod.ManifestError(f"experiment {key.exp} has no role {key.role!r} (roles: {', '.join(exp.roles)})")
        return exp

    def fragment(self, platform: str, key: FragmentKey) -> Fragment | None:
        k = (platform, key)
        if k not in self._frags:
            self._frags[k] = self.store.read(platform, str(key))
        return self._frags[k]

    def corrupt(self, platform: str, key: FragmentKey, failure: Fragment | None = None) -> str | None:
        """Store.corrupt, reusing the fragment this book has read (and the failure record when given)."""
        for frag in (self.fragment(platform, key), failure if failure is not None else self.store.read(platform, str(key), True)):
            if frag is not None and frag.corrupt:
                return frag.corrupt
        return self.store.skip_problem(platform, str(key))

    def current(self, key: FragmentKey) -> tuple[str, dict]:
        if key not in self._inputs:
            rec = inputsmod.inputs(self.experiment(key), key.role, self.layout)
            self._inputs[key] = (inputsmod.digest(rec), rec)
        return self._inputs[key]

    def can_run(self, platform: str, key: FragmentKey) -> tuple[bool, str]:
        """Whether that machine can produce the fragment at all, from its identity and skip records."""
        exp = self.experiment(key)
        ident = self.identity(platform)
        if key.role == "gpu" and not ident.has_gpu:
            return False, f"{ident.display_name} has no GPU"
        if exp.platforms and ident.os and ident.os not in exp.platforms:
            return False, f"runs only on {', '.join(exp.platforms)}"
        if key.role == "gpu" and exp.gpu_device and ident.gpu_vendor and \
                exp.gpu_device not in GPU_VARIANTS.get(ident.gpu_vendor, {}).get(exp.framework, ()):
            return False, f"{exp.framework} is not built for {exp.gpu_device} on {ident.display_name}"
        reason = self.store.skip_reason(platform, str(key))
        if reason:
            return False, reason
        return True, ""

    def state(self, platform: str, key: FragmentKey) -> FragmentState:
        k = (platform, key)
        if k not in self._states:
            self._states[k] = self._state(platform, key)
        return self._states[k]

    def _state(self, platform: str, key: FragmentKey) -> FragmentState:
        st = self._state_of(platform, key)
        if platform == self.reader and not self.reader_is_book and st.severity == WARN:
            # the reader's machine never fails a build: what it lacks is said on its page, not fixed by the author
            from dataclasses import replace

            st = replace(st, severity=NOTE)
        return st

    def _state_of(self, platform: str, key: FragmentKey) -> FragmentState:
        local = platform == self.local
        ident = self.identity(platform)
        fix = ident.regenerate_command([key.exp], [key.role]) if not local else \
            f"nox -s regenerate -- --only {key.exp} --device {key.role}"
        frag = self.fragment(platform, key)
        if frag is not None and getattr(frag, "corrupt", None):
            return FragmentState(platform, key, "corrupt", None, frag.corrupt, fix=fix, local=local,
                                 severity=WARN if local else NOTE)
        if frag is None:
            able, why = self.can_run(platform, key)
            if not able:
                return FragmentState(platform, key, "not-applicable", None, why, local=local, severity=NOTE)
            failed = self.store.read(platform, str(key), True) if platform == self.reader else None
            if failed is not None and not failed.corrupt and failed.meta.get("failure"):
                return FragmentState(platform, key, "missing", None, f"the run failed there: {failed.meta['failure']}",
                                     fix=fix, local=local, severity=NOTE)
            return FragmentState(platform, key, "missing", None, f"never captured on {platform}", fix=fix, local=local,
                                 severity=WARN if local else NOTE)
        if frag.torn:
            return FragmentState(platform, key, "torn", frag, "text and metadata disagree (interrupted write)",
                                 fix=fix, local=local, severity=WARN if local else NOTE)
        host = fpmod.of_fragment(frag.meta)
        if host is not None and not fpmod.same(host, ident.host):
            adopt = f"{fix}, or make one host the platform's machine with `nox -s regenerate -- --adopt` there"
            return FragmentState(platform, key, "foreign", frag,
                                 f"captured on another machine ({fpmod.describe(host)}), not on {platform}'s "
                                 f"({fpmod.describe(ident.host)})", fix=adopt, local=local,
                                 severity=WARN if local else NOTE)
        try:
            want, rec = self.current(key)
        except (OSError, ValueError) as e:  # a source the manifest names is missing or outside the repository
            return FragmentState(platform, key, "stale", frag, f"its sources cannot be read: {e}", ("sources",), fix,
                                 local, WARN)
        if frag.inputs_hash != want:
            changed = tuple(changed_inputs(frag.meta.get("inputs") or {}, rec))
            return FragmentState(platform, key, "stale", frag, "changed since the capture: " + ", ".join(changed),
                                 changed, fix, local, WARN if local else NOTE)
        return FragmentState(platform, key, "fresh", frag, local=local)

    def holders(self, key: FragmentKey) -> list[str]:
        """Platforms (book order) that hold a fragment for the key, fresh or not."""
        return [p for p in self.platforms() if self.fragment(p, key) is not None]

    def absent_everywhere(self, key: FragmentKey) -> FragmentState | None:
        """When no captured platform has the fragment: a state saying whether that is a problem here.

        Missing everywhere is a warning when this machine could capture it (a new experiment not yet
        run); otherwise (a GPU role on a CPU-only machine, a macOS-only experiment before a Mac run)
        a note.
        """
        if self.holders(key):
            return None
        could = self.local is not None and self.can_run(self.local, key)[0]
        return FragmentState(self.local or "-", key, "missing", None, "no captured platform has it",
                             fix=f"nox -s regenerate -- --only {key.exp} --device {key.role}",
                             local=True, severity=WARN if could else NOTE)

    def awaiting(self, key: FragmentKey) -> str:
        """Which kind of machine a fragment no platform holds is waiting for: an OS the manifest
        restricts it to ("macos"), "gpu" for a GPU role, else "any"."""
        exp = self.experiment(key)
        if exp.platforms:
            return exp.platforms[0]
        return "gpu" if key.role == "gpu" else "any"

    # -- records ----------------------------------------------------------------------------
    def evaluator(self, platform: str, seen: dict | None = None) -> Evaluator:
        """An evaluator over one platform's records; `seen` collects ref -> the records it selected."""
        def fragment(ref):
            frag = self.fragment(platform, FragmentKey(ref.exp, ref.role))
            if frag is None:
                raise MissingData(ref.text, f"no fragment on {platform}")
            return frag

        def lookup(ref):
            frag = fragment(ref)
            recs = [r for r in frag.records if matches(r, ref.name, dict(ref.tags))]
            if not recs:
                names = sorted({r["name"] for r in frag.records})
                more = " ..." if len(names) > 12 else ""
                raise MissingData(ref.text, f"no such record on {platform} (records there: {', '.join(names[:12])}{more})")
            if seen is not None:
                seen[ref] = recs
            return recs

        return Evaluator(lookup, self.drifts.of_platform(platform, self.runs(platform), self.starts(platform)))

    def starts(self, platform: str) -> dict[str, str]:
        """fragment key -> when its capture started on that platform (the history's earlier captures are those
        before it)."""
        self.runs(platform)
        return self._starts[platform]

    def runs(self, platform: str) -> dict[str, str]:
        """fragment key -> the run it was captured in on that platform (capture/evidence/runs.py)."""
        if platform not in self._runs:
            metas = {}
            for key in self.store.keys(platform):
                try:
                    frag = self.fragment(platform, FragmentKey.parse(key))
                except ValueError:
                    continue
                if frag is not None and not frag.corrupt and isinstance(frag.meta, dict):
                    metas[key] = frag.meta
            self._runs[platform] = runsmod.label(metas)
            self._starts[platform] = {k: str(m.get("started") or "") for k, m in metas.items()}
        return self._runs[platform]

    @cached_property
    def drifts(self) -> verdictmod.Drifts:
        """The measured drift per platform and kind of figure (docs/drift.json, capture/evidence/drift.py)."""
        return verdictmod.Drifts.load(self.layout.root)

    def unlike(self, expr: str, platform: str, seen: dict, differs: tuple[str, ...] = ()) -> tuple[str, ...]:
        """What an evaluated expression compares unlike (capture/evidence/alike.py), from the records it read."""
        refs = parse_refs(expr)[1]
        conds = {}
        for ref, recs in seen.items():
            key = FragmentKey(ref.exp, ref.role)
            conds[ref] = alike.of_ref(ref, self.fragment(platform, key).meta, recs, self.experiment(key).env)
        out: list[str] = []
        for group in alike.groups(expr):
            per_ref = [(refs[i], conds[refs[i]]) for i in group if refs[i] in conds]
            out += [m for m in alike.mismatches(per_ref, differs) if m not in out]
        return tuple(out)

    def refs(self, expr: str) -> list[FragmentKey]:
        """The fragments an expression reads (a page mistake raises QueryError / ManifestError)."""
        check_syntax(expr)
        _, refs = parse_refs(expr)
        keys = []
        for r in refs:
            key = FragmentKey(r.exp, r.role)
            self.experiment(key)
            if key not in keys:
                keys.append(key)
        return keys

    def answer(self, expr: str, platform: str, differs: tuple[str, ...] = ()) -> Answer:
        try:
            keys = self.refs(expr)
        except (QueryError, manifestmod.ManifestError, KeyError_) as e:
            return Answer(platform, expr, error=str(e), severity=WARN)
        if not keys:
            return Answer(platform, expr, error=f"{expr!r} refers to no record", severity=WARN)
        states = tuple(self.state(platform, k) for k in keys)
        sev = _worst(*(s.severity for s in states))
        if not all(s.usable for s in states):
            return Answer(platform, expr, None, states, severity=sev)
        seen: dict = {}
        try:
            value = self.evaluator(platform, seen).eval(expr)
        except MissingData as e:
            # the fragment is there but lacks the record: the page and the data disagree, unless the
            # fragment is stale (its program changed since) and this machine cannot re-run it
            excusable = any(s.state == "stale" and not s.local for s in states)
            return Answer(platform, expr, None, states, str(e), NOTE if excusable else WARN, no_record=True)
        except QueryError as e:
            return Answer(platform, expr, None, states, str(e), WARN)
        unlike = self.unlike(expr, platform, seen, differs)
        strict = platform != self.reader or self.reader_is_book  # the reader's machine: said, never a build error
        return Answer(platform, expr, value, states, severity=WARN if unlike and strict else sev, unlike=unlike)

    def platforms_with(self, expr: str) -> list[str]:
        """Platforms (book order) that hold every fragment the expression reads."""
        keys = self.refs(expr)
        return [p for p in self.platforms() if all(self.fragment(p, k) is not None for k in keys)]

    def pending(self, expr: str) -> FragmentState | None:
        """For an expression no platform can answer: the worst 'absent everywhere' state, or None."""
        worst = None
        for k in self.refs(expr):
            st = self.absent_everywhere(k)
            if st and (worst is None or st.severity == WARN):
                worst = st
        return worst


YOURS = "你的机器"  # the reader's machine on every page (capture/machines/yours.py NAME)


def _yours(ident: identitymod.Identity, book_platform: bool) -> identitymod.Identity:
    """The reader's machine's identity as the pages name it: 「你的机器」 before what it is; its fragments are
    captured again with `nox -s yours` (unless it is one of the book's platforms, made the book's way)."""
    from dataclasses import replace

    if book_platform:
        return replace(ident, display_name=f"{YOURS}（本书的 {ident.display_name}）")
    return replace(ident, display_name=f"{YOURS}：{ident.display_name}", route="yours")


def changed_inputs(old: dict, new: dict) -> list[str]:
    """What differs between two inputs records, by name (files first)."""
    was, now = old.get("hash_version", 1), new.get("hash_version")
    if was != now:
        if isinstance(was, int) and isinstance(now, int) and was > now:  # captured by a newer checkout
            return [f"inputs-hash scheme {was} is newer than this checkout's {now} (update the checkout: git pull)"]
        return [f"inputs-hash scheme {was} -> {now} (run `python -m capture restamp`)"]
    of, nf = old.get("files", {}), new.get("files", {})
    names = sorted(k for k in set(of) | set(nf) if of.get(k) != nf.get(k))
    names += [k for k in sorted(set(old) | set(new)) if k != "files" and old.get(k) != new.get(k)]
    return names or ["(hash scheme)"]
