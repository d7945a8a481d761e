"""``run --json`` with the console OTel exporter keeps stdout one JSON document
(issue 26, item 12): the spans go to stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

MAS_CTL = str(Path(sys.executable).with_name("mas-ctl"))


def test_console_spans_go_to_stderr_with_json(
    tmp_path: Path, offline_agent: Callable[[Path], Path]
) -> None:
    offline_agent(tmp_path)
    (tmp_path / "turns.jsonl").write_text('"Hello."\n')
    env = dict(os.environ, OTEL_TRACES_EXPORTER="console")
    env.pop("MAS_CONFIG", None)
    done = subprocess.run(
        [MAS_CTL, "run", "agent.yaml", "--input", "turns.jsonl", "--out", "out", "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # the whole of stdout: one document
    assert isinstance(document, dict)
    assert '"trace_id"' in done.stderr, "the spans were printed, on stderr"
