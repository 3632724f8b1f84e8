"""Progress on long work: one line per experiment; on a terminal also a live line while one runs."""

from __future__ import annotations

import sys
import threading
import time


LINE_MAX = 300  # characters of one echoed line; the whole text stays in the log or failure record


def cut(line: str, limit: int = LINE_MAX) -> str:
    """One line for the terminal: at most `limit` characters, saying how much was left out."""
    return line if len(line) <= limit else f"{line[:limit]} [... {len(line) - limit} more characters]"


class Progress:
    def __init__(self, total: int, out=sys.stderr):
        self.total, self.out, self.n = total, out, 0
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
        self.out.write(f"\r\033[K[{bar}] {done}/{self.total} running {key} {time.monotonic() - t0:5.0f}s{tick}")
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
        self.out.write(f"[{self.n:>3}/{self.total}] {status:<7} {t} {key}  {cut(first, 4 * LINE_MAX)}\n")
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
        self.out.write("regenerate: " + ", ".join(parts) + "\n")
        self.out.flush()
