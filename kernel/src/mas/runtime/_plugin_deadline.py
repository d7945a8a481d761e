"""Running a plugin's start-up code (its import, a registration hook) with a deadline.

A plugin that hangs at start-up would block every command, so its code runs on a daemon
thread that the caller waits for at most ``seconds``. Python cannot kill a thread: a hung
one is abandoned, not stopped; it keeps whatever it holds (an import lock, a socket) until
the process exits, and what it registers later is refused (its plugin is faulted by then).
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from typing import TypeVar

from mas.runtime.errors import PluginTimeoutError

T = TypeVar("T")

DEFAULT_LOAD_TIMEOUT = 30.0
"""Seconds a plugin's import, and each of its registration hooks, may take (documented in
docs/plugins.md); ``make_plugin_manager(load_timeout=...)`` changes it."""


def _stack_of(thread: threading.Thread) -> list[tuple[str, int, object]]:
    # Where a hung thread is waiting, outermost frame first: (file, line, module).
    frame = sys._current_frames().get(thread.ident or -1)
    if frame is None:
        return []
    stack = [(each.f_code.co_filename, lineno, each.f_globals.get("__name__"))
             for each, lineno in traceback.walk_stack(frame)]
    return stack[::-1]


def call_with_deadline(fn: Callable[[], T], seconds: float, what: str) -> T:
    """``fn()`` on a daemon thread, waiting at most ``seconds`` for it.

    Whatever ``fn`` raises is raised here, with its own traceback (so the fault is
    located in the plugin's code); ``KeyboardInterrupt`` reaches the main thread as usual.

    :param what: what ``fn`` is, for the error (``"import of entry point 'x'"``).
    :raises PluginTimeoutError: ``fn`` was still running after ``seconds``.
    """
    outcome: dict[str, object] = {}

    def work() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # handed to the caller, which decides what it is
            outcome["error"] = exc

    thread = threading.Thread(target=work, name=f"mas-plugin: {what}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise PluginTimeoutError(what, seconds, _stack_of(thread))
    error = outcome.get("error")
    if isinstance(error, BaseException):
        raise error
    return outcome["value"]  # type: ignore[return-value]
