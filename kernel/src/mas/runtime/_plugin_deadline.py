"""Running a plugin's start-up code (its import, a registration hook) with a deadline.

A plugin that hangs at start-up would block every command, so its code runs on a daemon
thread (:class:`~mas.runtime._deadline.Worker`) that the caller waits for at most
``seconds``. A hung one is abandoned, not stopped (a thread cannot be killed): it keeps
whatever it holds (an import lock, a socket) until the process exits, and what it
registers later is refused (its plugin is faulted by then).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from mas.runtime._deadline import Worker
from mas.runtime.errors import PluginTimeoutError

T = TypeVar("T")

DEFAULT_LOAD_TIMEOUT = 30.0
"""Seconds a plugin's import, and each of its registration hooks, may take (documented in
docs/plugins.md); ``make_plugin_manager(load_timeout=...)`` changes it."""


def call_with_deadline(fn: Callable[[], T], seconds: float, what: str) -> T:
    """``fn()`` on a daemon thread, waiting at most ``seconds`` for it.

    Whatever ``fn`` raises is raised here, with its own traceback (so the fault is
    located in the plugin's code); ``KeyboardInterrupt`` reaches the main thread as usual.

    :param what: what ``fn`` is, for the error (``"import of entry point 'x'"``).
    :raises PluginTimeoutError: ``fn`` was still running after ``seconds``, with where
        its thread was waiting.
    """
    worker = Worker(fn, f"mas-plugin: {what}")
    if not worker.wait(seconds):
        raise PluginTimeoutError(what, seconds, worker.stack())
    return worker.result()
