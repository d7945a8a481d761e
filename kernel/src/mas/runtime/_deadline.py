"""Calling code that may hang on a daemon thread, so the caller can stop waiting for it.

Python cannot kill a thread: one the caller stops waiting for is abandoned, not stopped.
It keeps what it holds until it returns or the process exits. Used for a plugin's start-up
code (``_plugin_deadline``) and for one model-call attempt (``engine._retry``).
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Worker(Generic[T]):
    """``fn()`` started on a daemon thread named ``name``; its result or error kept.

    :param also_set: an event set too once ``fn`` has returned or raised.
    :ivar thread: the thread running ``fn``.
    """

    def __init__(
        self, fn: Callable[[], T], name: str, *, also_set: threading.Event | None = None
    ) -> None:
        self._outcome: dict[str, Any] = {}
        self._finished = threading.Event()
        self._also_set = also_set
        self.thread = threading.Thread(target=self._run, args=(fn,), name=name, daemon=True)
        self.thread.start()

    def _run(self, fn: Callable[[], T]) -> None:
        try:
            self._outcome["value"] = fn()
        except BaseException as exc:  # handed to the caller by result()
            self._outcome["error"] = exc
        finally:
            self._finished.set()
            if self._also_set is not None:  # a caller waiting for "this, or something else"
                self._also_set.set()

    def wait(self, seconds: float) -> bool:
        """Wait at most ``seconds`` for ``fn`` to return; whether it has."""
        return self._finished.wait(max(seconds, 0.0))

    def result(self) -> T:
        """What ``fn`` returned, or raise what it raised (with its own traceback)."""
        if "error" in self._outcome:
            raise self._outcome["error"]
        value: T = self._outcome["value"]
        return value

    def stack(self) -> list[tuple[str, int, object]]:
        """Where the thread is now, outermost frame first: ``(file, line, module)``."""
        frame = sys._current_frames().get(self.thread.ident or -1)
        if frame is None:
            return []
        stack = [(each.f_code.co_filename, lineno, each.f_globals.get("__name__"))
                 for each, lineno in traceback.walk_stack(frame)]
        return stack[::-1]
