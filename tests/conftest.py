import locale
import os
import signal
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _ignore(signum, frame):
    """A handler that does nothing: to this process the signal stays ignored, but a handler (unlike SIG_IGN)
    is reset to the default by exec, so the processes the tests start see the default."""


def own_process_state() -> None:
    """Set the process state the tests rely on instead of inheriting it from whoever started pytest.

    - Signals: `nohup`, `cmd &` in a script and some CI runners start the suite with SIGINT, SIGQUIT or
      SIGHUP ignored, and exec passes "ignored" on: a regenerate the tests signal would then ignore
      SIGINT. A signal ignored here becomes a do-nothing handler (the suite itself stays immune, as
      whoever started it asked), so children start with the default; none is blocked.
    - umask 022, and the C.UTF-8 locale for the tools the tests run (their messages are compared).
    """
    for sig in signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP, signal.SIGPIPE, getattr(signal, "SIGXFSZ", 0)}:
        try:
            if signal.getsignal(sig) == signal.SIG_IGN:
                signal.signal(sig, _ignore)
        except (OSError, ValueError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    os.umask(0o022)
    for name in ("C.UTF-8", "C.utf8", "en_US.UTF-8"):
        try:
            locale.setlocale(locale.LC_ALL, name)
        except locale.Error:
            continue
        os.environ["LC_ALL"] = name
        os.environ.pop("LANGUAGE", None)
        break


own_process_state()


from tests.engine.book import make_book


@pytest.fixture(scope="session")
def cargo_target(tmp_path_factory):
    return tmp_path_factory.mktemp("cargo-target")


@pytest.fixture
def book(tmp_path, cargo_target, monkeypatch):
    monkeypatch.setenv("CARGO_TARGET_DIR", str(cargo_target))
    monkeypatch.delenv("BOOK_PLATFORM", raising=False)
    return make_book(tmp_path / "book")
