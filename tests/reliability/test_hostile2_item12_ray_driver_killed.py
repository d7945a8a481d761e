"""Issue 26 item 12 (Ray part): a killed driver does not leave the Ray instance it started.

Ray's head processes stand in here as processes naming a Ray session on their command line
(``--session-name=...``), one of them with a child as the raylet has its agents; the real
instance is killed the same way in ``tests/lab/ray_cases.py``. The driver is SIGKILLed:
none of its own code runs after that.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from mas.library.lab.executors.ray_reaper import ray_heads, start_reaper, stop_reaper

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="the reaper reads /proc")

SLEEP = "import time; time.sleep(300)"

DRIVER = textwrap.dedent("""
    import subprocess, sys, time
    from mas.library.lab.executors.ray_reaper import start_reaper
    flag = "--session-name=" + sys.argv[1]
    # A head process with a child of its own, as the raylet starts its agents.
    head = subprocess.Popen([sys.executable, "-c",
                             "import subprocess, sys, time; "
                             f"subprocess.Popen([sys.executable, '-c', {SLEEP!r}, sys.argv[1]]);"
                             " time.sleep(300)", flag])
    other = subprocess.Popen([sys.executable, "-c", {SLEEP!r}, flag])
    while len(subprocess.run(["pgrep", "-f", "--", flag], capture_output=True,
                             text=True).stdout.split()) < 3:
        time.sleep(0.05)
    reaper = start_reaper()
    print("ready", reaper.pid if reaper else "none", flush=True)
    if sys.argv[2] == "close":
        from mas.library.lab.executors.ray_reaper import stop_reaper
        stop_reaper(reaper)
        print("closed", flush=True)
    time.sleep(300)
""").replace("{SLEEP!r}", repr(SLEEP))


def session_processes(names: set[str]) -> list[int]:
    """The running processes naming one of ``names`` as their Ray session."""
    flags = {f"--session-name={name}".encode() for name in names}
    found = []
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:  # not a process, or ended meanwhile
            continue
        if state != "Z" and flags & set(words):
            found.append(int(entry.name))
    return found


def _gone(sessions: set[str], within: float = 60.0) -> bool:
    """Whether every process of ``sessions`` has ended, waiting at most ``within`` s (a
    bound on a failure, not a timing assertion)."""
    deadline = time.monotonic() + within
    while session_processes(sessions):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _start(tmp_path: Path, how: str) -> tuple[subprocess.Popen[str], str]:
    name = f"session_test_{uuid.uuid4().hex}"
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    driver = subprocess.Popen([sys.executable, str(script), name, how],
                              stdout=subprocess.PIPE, text=True)
    assert driver.stdout is not None
    line = driver.stdout.readline()
    assert line.startswith("ready ") and line.split()[1] != "none", line
    assert len(session_processes({name})) == 3
    return driver, name


def test_hostile2_item12_a_killed_driver_takes_its_ray_instance_along(tmp_path: Path) -> None:
    driver, name = _start(tmp_path, "run")
    try:
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        assert _gone({name}), session_processes({name})
    finally:
        for pid in session_processes({name}):
            os.kill(pid, signal.SIGKILL)


def test_hostile2_item12_a_closing_driver_stops_its_instance_at_once(tmp_path: Path) -> None:
    driver, name = _start(tmp_path, "close")
    try:
        assert driver.stdout is not None and driver.stdout.readline() == "closed\n"
        assert session_processes({name}) == [] and driver.poll() is None
    finally:
        driver.kill()
        driver.wait()
        for pid in session_processes({name}):
            os.kill(pid, signal.SIGKILL)


def test_hostile2_item12_a_driver_that_started_no_instance_gets_no_reaper() -> None:
    # This test process has started no Ray head: nothing to reap, no process started.
    assert ray_heads(os.getpid()) == set()
    assert start_reaper() is None
    stop_reaper(None)
