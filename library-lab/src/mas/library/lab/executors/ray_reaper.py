"""Stop the local Ray instance a driver started once the driver ends, however it ends.

``ray.init`` stops the instance it started at exit and on SIGTERM, but nothing of the
driver runs on SIGKILL: the kernel's parent-death signal then ends Ray's GCS and raylet,
not the agents the raylet started (dashboard and runtime-env agents), which keep running.

:func:`start_reaper` starts a small process in its own session (so a signal to the driver's
process group does not reach it) holding the read end of a pipe whose write end only the
driver holds. It follows the instance's head processes (those below the driver naming a
Ray session on their command line) and every process they start; when the driver ends,
for any reason, the pipe reads end-of-file and the reaper ends them all.

This file runs as a script with the standard library only (``python -I ray_reaper.py``):
the reaper imports neither Ray nor the lab. Linux only (it reads ``/proc``); elsewhere
:func:`start_reaper` starts nothing.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

PROC = Path("/proc")

SESSION_FLAG = "--session-name="
"""How Ray's head processes (GCS, raylet) name their session on their command line."""

GRACE = 1.0
"""Seconds the instance's processes get to end on SIGTERM before SIGKILL."""

REFRESH = 1.0
"""Seconds between two looks for processes the head processes started meanwhile."""

Tracked = dict[int, int]
"""Processes by pid, each with its start time (so that a reused pid is never killed)."""


def process_table(proc: Path = PROC) -> dict[int, tuple[int, int]]:
    """``(parent pid, start time)`` of every process that can be read, by pid."""
    found = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        # The name in parentheses may hold spaces; the fields after it do not.
        fields = stat.rpartition(")")[2].split()
        found[int(entry.name)] = (int(fields[1]), int(fields[19]))
    return found


def below(roots: set[int], table: dict[int, tuple[int, int]]) -> set[int]:
    """``roots`` and every process below them in the process tree of ``table``."""
    children: dict[int, list[int]] = {}
    for child, (parent, _) in table.items():
        children.setdefault(parent, []).append(child)
    found = set(roots)
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def ray_heads(pid: int, proc: Path = PROC) -> set[int]:
    """The processes below ``pid`` that are heads of a Ray instance (they name its session)."""
    heads = set()
    for child in below({pid}, process_table(proc)) - {pid}:
        try:
            line = (proc / str(child) / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(word.startswith(SESSION_FLAG.encode()) for word in line):
            heads.add(child)
    return heads


def track(tracked: Tracked, proc: Path = PROC) -> Tracked:
    """``tracked`` with every process started below it since (the raylet's agents and
    workers change their command lines, so they are found by parentage, not by name)."""
    table = process_table(proc)
    alive = {pid for pid, start in tracked.items() if table.get(pid, (0, -1))[1] == start}
    return {**tracked, **{pid: table[pid][1] for pid in below(alive, table) if pid in table}}


def start_reaper() -> subprocess.Popen[bytes] | None:
    """A reaper for the Ray instance this process started (``None``: it started none, or
    this is not Linux). Closing its ``stdin`` (or ending this process) sets it off."""
    if not PROC.is_dir():
        return None
    heads = ray_heads(os.getpid())
    if not heads:
        return None
    return subprocess.Popen(
        [sys.executable, "-I", str(Path(__file__).resolve()), *map(str, sorted(heads))],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True)


def stop_reaper(reaper: subprocess.Popen[bytes] | None, timeout: float = 10.0) -> None:
    """Set ``reaper`` off now (the driver is closing) and wait for it."""
    if reaper is None:
        return
    if reaper.stdin is not None:
        reaper.stdin.close()
    # Past the timeout it goes on alone; the instance still ends.
    with contextlib.suppress(subprocess.TimeoutExpired):
        reaper.wait(timeout=timeout)


def reap(tracked: Tracked, proc: Path = PROC) -> None:
    """End every process of ``tracked`` still running: SIGTERM, then SIGKILL after
    :data:`GRACE`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = _running(tracked, proc)
        for pid in left:
            with contextlib.suppress(OSError):  # ended meanwhile
                os.kill(pid, sig)
        deadline = time.monotonic() + GRACE
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = _running(tracked, proc)
        if not left:
            return


def _running(tracked: Tracked, proc: Path) -> list[int]:
    """The processes of ``tracked`` that still run (a zombie has ended)."""
    left = []
    for pid, start in tracked.items():
        try:
            fields = (proc / str(pid) / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[19]) == start:
            left.append(pid)
    return left


def main(argv: list[str]) -> None:
    """Follow the head processes ``argv`` and what they start until stdin reads end-of-file
    (the driver has ended), then end them all."""
    table = process_table()
    tracked = {pid: table[pid][1] for pid in map(int, argv) if pid in table}
    stdin = sys.stdin.buffer.fileno()
    while True:
        readable, _, _ = select.select([stdin], [], [], REFRESH)
        if readable and not os.read(stdin, 4096):
            break
        tracked = track(tracked)
    reap(tracked)


if __name__ == "__main__":
    main(sys.argv[1:])
