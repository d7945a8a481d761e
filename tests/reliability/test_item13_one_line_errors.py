"""Issue 13 item 13: faults that printed tracebacks are one line naming the file and what to
do, with an exit code per kind: 2 bad input, 4 provider failure, 5 storage (disk full).

Disk full is the kernel's own file-size limit (``RLIMIT_FSIZE``) in a child process: writes
past it fail with a real ``EFBIG``, as a full disk fails them with ``ENOSPC``.
"""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mas.runtime.cli._app import EXIT_PROVIDER, EXIT_STORAGE, EXIT_USER_ERROR

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {name: faulty}
spec:
  models: [{id: main, model: offline/default, context_window: 4000, max_tokens: 200}]
"""


def _small_disk(limit: int) -> Callable[[], None]:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def _mas_ctl(args: list[str], cwd: Path, limit: int) -> subprocess.CompletedProcess[str]:
    code = "import sys\nfrom mas.runtime.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, preexec_fn=_small_disk(limit))


def _one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr[-2000:]
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, stderr[-2000:]
    return lines[0]


def test_item13_disk_full_under_run_is_one_line_naming_the_file(
    tmp_path: Path, write: Callable[[str, str], Path]
) -> None:
    agent = write("agent.yaml", AGENT)
    turns = tmp_path / "turns.jsonl"
    turns.write_text("".join(json.dumps(f"turn {i}: " + "words " * 300) + "\n"
                             for i in range(40)))
    done = _mas_ctl(["run", str(agent), "--input", str(turns), "--out", "run"], tmp_path,
                    64 << 10)
    assert done.returncode == EXIT_STORAGE, done.stderr[-2000:]
    line = _one_error_line(done.stderr)
    assert "cannot write" in line and "run the same command again" in line
    assert any(name in line for name in ("session.json", "session.journal.jsonl", "events.jsonl",
                                         "transcript.json"))


def test_item13_disk_full_under_lab_run_is_one_line_naming_the_file(
    tmp_path: Path, make_lab: Callable[..., Path]
) -> None:
    experiment = make_lab(tmp_path / "exp", items=2, turns=6)
    done = _mas_ctl(["lab", "run", str(experiment), "--runs-dir", "runs"], tmp_path, 6 << 10)
    # Sessions that cannot be saved fail one by one (each named), the others go on; a step
    # that cannot write its file fails the pass. Either way: lines, not a traceback.
    assert done.returncode in (1, EXIT_STORAGE), done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert "sessions: 2 run" in done.stderr and "2 failed" in done.stderr
    assert done.stderr.rstrip().splitlines()[-1].startswith("error: ")


def test_item13_a_full_response_cache_is_one_line_naming_the_database(tmp_path: Path) -> None:
    code = """
import sys
from mas.runtime.engine import ResponseCache
from mas.runtime.errors import StorageError
from mas.runtime.protocols import ModelReply
cache = ResponseCache("cache.sqlite")
try:
    for i in range(1000):
        cache.put(f"k{i}", ModelReply(text="x" * 100_000, model="m"))
except StorageError as exc:
    print(exc)
    sys.exit(5)
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, preexec_fn=_small_disk(1 << 20))
    assert done.returncode == 5, done.stderr[-2000:]
    assert done.stdout.startswith("cache.sqlite: the response cache cannot store a reply (")
    assert "infra cache.enabled: false" in done.stdout


@pytest.mark.parametrize(("content", "message"), [
    (b'"fine"\n"caf\xe9"\n', "line 2: not UTF-8 text (byte 0xe9 at offset 11); save the file "
                            "as UTF-8"),
    # After a byte-order mark the offset is still the file's: 3 + 7 + 4.
    (b'\xef\xbb\xbf"fine"\n"caf\xe9"\n', "line 2: not UTF-8 text (byte 0xe9 at offset 14); "
                                        "save the file as UTF-8"),
    (b"[" * 200_000 + b"]" * 200_000 + b"\n", "line 1: nested more than 100 levels deep"),
    (b'"a lone \\ud800 surrogate"\n', "line 1: holds a lone surrogate (such as \\ud800), which "
                                     "is not Unicode text"),
])
def test_item13_bad_turn_files_are_one_line_and_exit_2(
    content: bytes, message: str, tmp_path: Path, write: Callable[[str, str], Path],
    mas_ctl: Callable[..., Any],
) -> None:
    agent = write("agent.yaml", AGENT)
    turns = tmp_path / "turns.jsonl"
    turns.write_bytes(content)
    result = mas_ctl("run", agent, "--input", turns, "--out", tmp_path / "run")
    assert result.code == EXIT_USER_ERROR and "Traceback" not in result.err
    assert result.err.strip() == f"{turns}: {message}"
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("line", ['{"id": "a", "turns": ["x"], "n": ' + "[" * 200_000 + "]" *
                                  200_000 + "}", '{"id": "a", "turns": ["\\udfff"]}'])
def test_item13_bad_dataset_lines_are_one_line(
    line: str, tmp_path: Path, make_lab: Callable[..., Path], mas_ctl: Callable[..., Any],
) -> None:
    experiment = make_lab(tmp_path / "exp")
    (tmp_path / "exp" / "data.jsonl").write_text(line + "\n")
    result = mas_ctl("lab", "run", experiment, "--runs-dir", tmp_path / "runs")
    assert result.code == EXIT_USER_ERROR and "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) == 1 and "line 1:" in result.err


def test_item13_provider_failure_has_its_own_exit_code() -> None:
    assert len({EXIT_USER_ERROR, EXIT_PROVIDER, EXIT_STORAGE, 1}) == 4
