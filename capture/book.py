"""The book's view of its fragments for pages: which platform shows what, staleness, record lookup.

Pages name a list of platforms in order of preference (conf.py `book_platforms`); an output
is shown from the first platform that has it. The docs build needs no GPU and runs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from capture import inputs as inputsmod
from capture import manifest as manifestmod
from capture.paths import Layout
from capture.query import Evaluator, MissingData, QueryError, Ref, parse_refs
from capture.records import matches
from capture.status import platform_has_gpu
from capture.store import Fragment, Store


@dataclass(frozen=True)
class Lookup:
    exp: str
    role: str
    platform: str | None  # where it was found, or None
    fragment: Fragment | None
    state: str  # fresh | stale | missing | torn | not-applicable
    detail: str = ""

    @property
    def regen_command(self) -> str:
        return f"nox -s regenerate -- --only {self.exp} --device {self.role}"


class Book:
    def __init__(self, root: Path, platforms: list[str]):
        self.layout = Layout(root)
        self.store = Store(self.layout.fragments)
        self.platforms = list(platforms)
        self._hash: dict[str, str] = {}
        self._frags: dict[tuple[str, str], Fragment | None] = {}

    @cached_property
    def manifest(self) -> manifestmod.Manifest:
        return manifestmod.load(self.layout.manifest)

    def current_hash(self, exp_id: str, role: str) -> str:
        key = f"{exp_id}@{role}"
        if key not in self._hash:
            self._hash[key] = inputsmod.inputs_hash(self.manifest.get(exp_id), role, self.layout)
        return self._hash[key]

    def fragment(self, platform: str, key: str) -> Fragment | None:
        if (platform, key) not in self._frags:
            self._frags[(platform, key)] = self.store.read(platform, key)
        return self._frags[(platform, key)]

    def captured_platforms(self) -> list[str]:
        stored = self.store.platforms()
        return [p for p in self.platforms if p in stored] + [p for p in stored if p not in self.platforms]

    def find(self, exp_id: str, role: str, platform: str | None = None) -> Lookup:
        """The fragment to show for (experiment, role): on `platform`, or the first preferred one that has it."""
        exp = self.manifest.get(exp_id)  # raises for an unknown id
        if role not in exp.roles:
            raise manifestmod.ManifestError(f"experiment {exp_id} has no role {role!r} (roles: {', '.join(exp.roles)})")
        key = exp.key(role)
        candidates = [platform] if platform else self.captured_platforms()
        for plat in candidates:
            frag = self.fragment(plat, key)
            if frag is None:
                continue
            if frag.torn:
                return Lookup(exp_id, role, plat, frag, "torn", frag.corrupt or "text and metadata disagree (interrupted write)")
            if frag.inputs_hash != self.current_hash(exp_id, role):
                return Lookup(exp_id, role, plat, frag, "stale", "inputs changed since capture")
            return Lookup(exp_id, role, plat, frag, "fresh")
        if platform and role == "gpu" and not platform_has_gpu(platform):
            return Lookup(exp_id, role, None, None, "not-applicable", f"{platform} has no GPU")
        for plat in candidates:
            reason = self.store.skip_reason(plat, key)
            if reason:
                return Lookup(exp_id, role, None, None, "not-applicable", f"{plat}: {reason}")
        return Lookup(exp_id, role, None, None, "missing", "never captured on " + (platform or "any listed platform"))

    def expected_absent(self, exp_id: str, role: str) -> bool:
        """True when no captured platform could have run it (e.g. a macOS-only experiment, no Mac captured yet)."""
        exp = self.manifest.get(exp_id)
        captured = self.captured_platforms()
        able = [p for p in captured if not (role == "gpu" and not platform_has_gpu(p))]
        if not [p for p in able if not self.store.skip_reason(p, exp.key(role))]:
            return True
        if not exp.platforms:
            return False
        return not any(p.split("-")[0] in exp.platforms for p in captured)

    # -- records -------------------------------------------------------------------------
    def evaluator(self, platform: str) -> Evaluator:
        def lookup(ref: Ref):
            frag = self.fragment(platform, f"{ref.exp}@{ref.role}")
            if frag is None:
                raise MissingData(ref.text, f"no fragment on {platform}")
            recs = [r for r in frag.records if matches(r, ref.name, dict(ref.tags))]
            if not recs:
                names = sorted({r["name"] for r in frag.records})
                raise MissingData(ref.text, f"no such record on {platform} (records there: {', '.join(names[:12])}{' ...' if len(names) > 12 else ''})")
            return recs

        return Evaluator(lookup)

    def evaluate(self, expr: str, platform: str):
        return self.evaluator(platform).eval(expr)

    def platforms_with(self, expr: str) -> list[str]:
        """Platforms (in preference order) that hold every fragment the expression refers to."""
        _, refs = parse_refs(expr)
        if not refs:
            raise QueryError(f"{expr!r} refers to no record")
        return [p for p in self.captured_platforms() if all(self.fragment(p, r.key) is not None for r in refs)]
