"""A one-line progress bar with ETA for the session grid, on stderr.

On a terminal the line is redrawn in place; elsewhere (a log file, CI) a line is written
every tenth of the work, so logs stay short.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import IO


def format_eta(seconds: float | None) -> str:
    """``m:ss`` (or ``h:mm:ss``); ``--:--`` when unknown."""
    if seconds is None:
        return "--:--"
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Counts finished sessions and draws ``[#####.....] 12/48 sessions  ETA 0:41``.

    :param total: sessions in the grid.
    :param done: sessions already finished before this pass (resumed).
    :param failed: of those, how many failed.
    :param stream: where to draw; ``None`` draws nothing.
    :param clock: monotonic seconds (tests pass their own).
    """

    WIDTH = 28

    def __init__(self, total: int, *, done: int = 0, failed: int = 0, stream: IO[str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.done = done
        self.failed = failed
        self.degraded = 0
        self.resumed = done
        self.stream = stream
        self.clock = clock
        self.started = clock()
        self._last_bucket = -1
        self._tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())

    def eta(self) -> float | None:
        """Seconds left at the pace of this pass, ``None`` before the first session ends."""
        finished = self.done - self.resumed
        if finished <= 0:
            return None
        return (self.clock() - self.started) / finished * (self.total - self.done)

    def line(self) -> str:
        """The bar as text."""
        filled = self.WIDTH * self.done // self.total if self.total else self.WIDTH
        bar = "#" * filled + "." * (self.WIDTH - filled)
        failed = f"  {self.failed} failed" if self.failed else ""
        failed += f"  {self.degraded} degraded" if self.degraded else ""
        resumed = f"  ({self.resumed} resumed)" if self.resumed else ""
        return (f"[{bar}] {self.done}/{self.total} sessions  ETA {format_eta(self.eta())}"
                f"{failed}{resumed}")

    def advance(self, *, failed: bool = False, degraded: bool = False) -> None:
        """One more session finished (``degraded``: finished, but degraded)."""
        self.done += 1
        self.failed += int(failed)
        self.degraded += int(degraded)
        self.draw()

    def draw(self) -> None:
        """Redraw (terminal) or print at each tenth of the work (elsewhere)."""
        if self.stream is None:
            return
        if self._tty:
            self.stream.write("\r" + self.line())
        else:
            bucket = 10 * self.done // self.total if self.total else 10
            if bucket == self._last_bucket:
                return
            self._last_bucket = bucket
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def finish(self) -> None:
        """End the line and say how long the pass took."""
        if self.stream is None:
            return
        if self._tty:
            self.stream.write("\n")
        elapsed = format_eta(self.clock() - self.started)
        self.stream.write(f"sessions: {self.done - self.resumed} run in {elapsed}, "
                          f"{self.resumed} already done, {self.failed} failed"
                          + (f", {self.degraded} degraded" if self.degraded else "") + "\n")
        self.stream.flush()
