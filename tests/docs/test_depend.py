"""A page that draws on fragments is re-read when what decides its verdicts changes: the fragments, their
sources, the manifest, and the measured drift (docs/drift.json), which an incremental build would otherwise
leave stale (a {cmp} still saying 说不清 after the drift table decided it)."""

from pathlib import Path

from capture.evidence.book import Book
from capture.evidence.drift import DATA
from capture.sphinxext.common import depend

REPO = Path(__file__).resolve().parents[2]


class Env:
    def __init__(self):
        self.deps: list[str] = []

    def note_dependency(self, path: str) -> None:
        self.deps.append(path)


def test_a_page_with_fragments_depends_on_the_drift_table_and_the_manifest():
    env, book = Env(), Book(REPO)
    depend(env, book, ["candle-matmul@gpu"])
    assert str(REPO / DATA) in env.deps
    assert str(book.layout.manifest) in env.deps
    assert any(p.endswith("candle-matmul@gpu.json") for p in env.deps)
