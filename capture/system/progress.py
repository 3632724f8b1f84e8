"""Progress on long work: one line per experiment; on a terminal also a live line while one runs."""

from __future__ import annotations

import sys
import threading
import time


LINE_MAX = 300  # characters of one echoed line; the whole text stays in the log or failure record


def cut(line: str, limit: int = LINE_MAX) -> str:
    """One line for the terminal: at most `limit` characters, saying how much was left out."""
    return line if len(line) <= limit else f"{line[:limit]} [... {len(line) - limit} more characters]"


class Estimate:
    """How long the rest of a batch will take: each job's expected seconds (what it took on another machine),
    scaled by how this machine has done against them so far, plus one-off costs not yet paid (a first build,
    paid by whichever of its jobs comes first)."""

    PACE = (0.3, 5.0)  # this machine against the expected seconds, at most this much faster or slower

    def __init__(self, seconds: dict[str, float], once: dict[str, tuple[float, frozenset]] | None = None):
        self.seconds = dict(seconds)
        self.once = dict(once or {})  # name -> (seconds, the jobs that need it)
        self.done: set[str] = set()
        self.paid: set[str] = set()
        self.spent = self.expected = 0.0

    def finished(self, key: str, wall: float | None) -> None:
        if key in self.done:
            return
        self.done.add(key)
        self.paid |= {name for name, (_, keys) in self.once.items() if key in keys}
        if key in self.seconds and wall:
            self.spent += wall
            self.expected += self.seconds[key]

    def left(self) -> float:
        pace = min(max(self.spent / self.expected, self.PACE[0]), self.PACE[1]) if self.expected > 5 else 1.0
        rest = sum(s for k, s in self.seconds.items() if k not in self.done) * pace
        return rest + sum(s for name, (s, keys) in self.once.items() if name not in self.paid and set(keys) - self.done)

    @staticmethod
    def words(seconds: float) -> str:
        if seconds < 90:
            return f"about {max(seconds, 1):.0f} s"
        return f"about {seconds / 60:.0f} min"


class Progress:
    def __init__(self, total: int, out=sys.stderr, estimate: Estimate | None = None):
        self.total, self.out, self.n = total, out, 0
        self.estimate = estimate
        self.t0 = time.monotonic()
        self.tty = hasattr(out, "isatty") and out.isatty()
        self._live: tuple[str, float] | None = None
        self._stop = threading.Event()
        self._thread = None
        self._last_tick = ""

    def _clear(self):
        if self.tty and self._live:
            self.out.write("\r\033[K")

    def _draw(self):
        if not (self.tty and self._live):
            return
        key, t0 = self._live
        done = self.n
        width = 20
        fill = int(width * done / max(self.total, 1))
        bar = "#" * fill + "-" * (width - fill)
        tick = f"  {self._last_tick[:50]}" if self._last_tick else ""
        left = f" ({Estimate.words(self.estimate.left())} left)" if self.estimate and self.estimate.left() > 0 else ""
        self.out.write(f"\r\033[K[{bar}] {done}/{self.total}{left} running {key} {time.monotonic() - t0:5.0f}s{tick}")
        self.out.flush()

    def _loop(self):
        while not self._stop.wait(0.5):
            self._draw()

    def start(self, key: str, device: str | None):
        self._live = (f"{key} ({device})", time.monotonic())
        self._last_tick = ""
        if self.tty and self._thread is None:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        self._draw()

    def tick(self, text: str):
        """A line of a long sub-step (e.g. cargo's 'Compiling x'): shown live on a terminal only."""
        self._last_tick = cut(text.strip())

    def note(self, text: str):
        self._clear()
        self.out.write(f"      {text}\n")
        self.out.flush()

    def line(self, key: str, status: str, message: str = "", wall: float | None = None):
        self.n += 1
        self._clear()
        self._live = None if status != "running" else self._live
        t = f"{wall:7.1f}s" if wall else " " * 8
        first, *rest = (message or "").splitlines() or [""]
        left = ""
        if self.estimate is not None and status != "running":
            self.estimate.finished(key, wall)
            more = self.estimate.left()
            left = f"  [{Estimate.words(more)} left]" if more > 0 and self.n < self.total else ""
        self.out.write(f"[{self.n:>3}/{self.total}] {status:<7} {t} {key}  {cut(first, 4 * LINE_MAX)}{left}\n")
        for r in rest:
            self.out.write(f"                          | {cut(r)}\n")
        self.out.flush()

    def summary(self, outcomes):
        self._stop.set()
        self._clear()
        counts = {}
        for o in outcomes:
            counts[o.status] = counts.get(o.status, 0) + 1
        parts = [f"{v} {k}" for k, v in sorted(counts.items())]
        took = f" in {Estimate.words(time.monotonic() - self.t0).removeprefix('about ')}" if self.estimate is not None else ""
        self.out.write("regenerate: " + ", ".join(parts) + took + "\n")
        self.out.flush()
