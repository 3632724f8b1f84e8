import pytest
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


from tests.engine.book import make_book


@pytest.fixture(scope="session")
def cargo_target(tmp_path_factory):
    return tmp_path_factory.mktemp("cargo-target")


@pytest.fixture
def book(tmp_path, cargo_target, monkeypatch):
    monkeypatch.setenv("CARGO_TARGET_DIR", str(cargo_target))
    monkeypatch.delenv("BOOK_PLATFORM", raising=False)
    return make_book(tmp_path / "book")
