"""The default executor: sessions on a thread pool of this process, written in place."""

from __future__ import annotations

import contextvars
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from mas.library.lab.executors import Play, SessionExecutor, SessionResult
from mas.library.lab.sessions import SessionJob


class LocalExecutor(SessionExecutor):
    """``max_concurrency`` threads, each playing one session into its run folder.

    Sessions spend their time waiting on model calls, so threads overlap them well; the
    driver and the sessions share one process, so playing in place is the driver writing.
    """

    def __init__(self, play: Play, max_concurrency: int) -> None:
        self.capacity = max_concurrency
        self._play = play
        self._pool = ThreadPoolExecutor(max_workers=max_concurrency,
                                        thread_name_prefix="lab-session")
        self._running: dict[Future[SessionResult], int] = {}

    def submit(self, key: int, job: SessionJob) -> None:
        """Queue ``job`` on the pool, in a copy of the caller's context: the session's spans
        go under the driver's current one (the lab run's), as they would in this thread."""
        context = contextvars.copy_context()
        self._running[self._pool.submit(context.run, self._timed, job)] = key

    def next_done(self) -> tuple[int, SessionResult]:
        """The first session to end; a bug in the runner itself propagates."""
        done, _ = wait(self._running, return_when=FIRST_COMPLETED)
        future = next(iter(done))
        return self._running.pop(future), future.result()

    def cancel(self) -> None:
        """Drop the queued sessions (running ones finish: a thread cannot be stopped)."""
        for future in self._running:
            future.cancel()

    def close(self) -> None:
        """Wait for the threads."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _timed(self, job: SessionJob) -> SessionResult:
        started = time.monotonic()
        error = self._play(job)
        return SessionResult(error, time.monotonic() - started)
