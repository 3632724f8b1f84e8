import shutil

import pytest

from tests.faults.faultbook import make_template
from capture.storage.paths import Layout


@pytest.fixture(scope="session")
def fault_template(tmp_path_factory):
    return make_template(tmp_path_factory.mktemp("fault-template") / "book")


@pytest.fixture
def fb(fault_template, tmp_path, monkeypatch):
    """A fresh copy of the captured fault book (its fragments are fresh: the inputs hash sees relative paths)."""
    monkeypatch.delenv("BOOK_PLATFORM", raising=False)
    root = tmp_path / "book"
    shutil.copytree(fault_template.root, root, symlinks=True, ignore=shutil.ignore_patterns(".capture"))
    return Layout(root)
