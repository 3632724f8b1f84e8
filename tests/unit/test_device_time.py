"""bookrec.device_time: CUDA is timed with events, MPS (and anything else) by sync + wall clock, never events.

A small fake `torch` stands in for the accelerator (this machine has none); it logs what the helper
asks of it, so the order of calls is what is checked.
"""

import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "snippets"))
import bookrec  # noqa: E402


class FakeTorch(types.ModuleType):
    def __init__(self, log):
        super().__init__("torch")
        self.log = log
        outer = self

        class Event:
            def __init__(self, enable_timing=False):
                assert enable_timing
                outer.log.append("Event")
                self.t = None

            def record(self):
                outer.log.append("record")
                self.t = len(outer.log)

            def synchronize(self):
                outer.log.append("event.synchronize")

            def elapsed_time(self, end):
                outer.log.append("elapsed_time")
                return 2.5  # milliseconds

        self.Event = Event
        self.accelerator = types.SimpleNamespace(synchronize=lambda: outer.log.append("sync"))


@pytest.fixture
def fake(monkeypatch):
    log = []
    monkeypatch.setitem(sys.modules, "torch", FakeTorch(log))
    return log


def work(log):
    return lambda: log.append("fn") or object()


def test_cuda_uses_events_around_the_call(fake):
    stats, timing = bookrec.device_time(work(fake), "cuda", warmup=1, repeats=3)
    assert timing == "device" and stats.n == 3 and stats.median == pytest.approx(2.5e-3)
    fake_rounds = fake[2:]  # after the warm-up call and its sync
    assert fake[:2] == ["fn", "sync"]
    assert fake_rounds == ["Event", "Event", "record", "fn", "record", "event.synchronize", "elapsed_time"] * 3


@pytest.mark.parametrize("dev", ["mps", "xpu"])
def test_other_accelerators_sync_before_and_after_and_never_use_events(fake, dev):
    stats, timing = bookrec.device_time(work(fake), dev, warmup=2, repeats=4)
    assert timing == "system" and stats.n == 4 and stats.min > 0
    assert "Event" not in fake and "elapsed_time" not in fake
    assert fake == ["fn", "sync"] * 2 + ["sync", "fn", "sync"] * 4


def test_cpu_needs_no_sync(fake):
    _, timing = bookrec.device_time(work(fake), "cpu", warmup=0, repeats=2)
    assert timing == "system" and fake == ["fn", "fn"]
    assert set(bookrec.TIMING_LABELS) == {"device", "system"}
