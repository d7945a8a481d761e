"""``mas-ctl run`` on a degraded session, end to end through LiteLLM's real call path
(issue 11 "Done when"): the example agent with its summarizer on a closed port, and on
the fake provider whose tokenizer counts each digit as a token."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mas.runtime.degradation import EXIT_DEGRADED
from mas.runtime.engine._window import CUT_MARK
from mas.runtime.fakeprovider import closed_base_url, serve

EXAMPLE = Path(__file__).resolve().parents[2] / "library-standard" / "examples" / "agent"


def _overlay(write: Callable[[str, str], Path], base: str, window: int) -> tuple[Path, Path]:
    infra = write("infra.yaml", f"""
        apiVersion: mas/v1
        kind: Infra
        metadata: {{name: local}}
        spec:
          generation: {{api_base: "{base}", timeout: 10, num_retries: 1}}
    """)
    overlay = write("summarizer.yaml", f"""
        apiVersion: mas/v1
        kind: Overlay
        metadata: {{name: local-summarizer}}
        spec:
          target: {{kind: Agent}}
          patch:
            models:
              - {{id: main, context_window: 3000}}
              - {{id: summarizer, model: openai/local, context_window: {window}}}
    """)
    return infra, overlay


def _turns(tmp_path: Path, count: int) -> Path:
    lines = (EXAMPLE / "turns.jsonl").read_text().splitlines()[:count]
    path = tmp_path / "turns.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_summarizer_on_a_closed_port_makes_the_run_degraded(
    write: Callable[[str, str], Path], mas_ctl: Callable[..., Any], tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    base = closed_base_url()
    infra, overlay = _overlay(write, base, 8192)
    out = tmp_path / "run"
    result = mas_ctl("run", EXAMPLE / "agent.yaml", "--infra", infra, "--overlay", overlay,
                     "--input", _turns(tmp_path, 30), "--out", out, "--quiet")
    assert result.code == EXIT_DEGRADED, result.err
    port = base.rsplit(":", 1)[1].split("/")[0]
    failed = [line for line in result.err.splitlines() if line.startswith("compaction_failures:")]
    assert len(failed) == 1 and f"127.0.0.1:{port}" in failed[0]
    assert "'openai/local'" in failed[0]
    assert "degraded: session" in result.err
    transcript = json.loads((out / "transcript.json").read_text())
    assert transcript["status"] == "degraded"
    counts = transcript["degradation"]["counts"]
    assert counts["compaction_failures"] >= 2
    # Backed off: fewer summary requests than failed compactions.
    assert counts.get("summarizer_backoffs", 0) >= 1
    view = json.loads(mas_ctl("inspect", out).out)
    assert view["status"] == "degraded"
    assert view["degradation"]["compaction_failures"] == counts["compaction_failures"]
    assert view["last_error_kinds"]["compaction_failures"] == "ModelCallError"
    assert view["compaction_in_progress"] is True
    # Resuming reads the crash marker and says so.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mas.runtime.session.agent"):
        resumed = mas_ctl("run", EXAMPLE / "agent.yaml", "--infra", infra, "--overlay",
                          overlay, "--input", _turns(tmp_path, 30), "--out", out, "--quiet")
    assert resumed.code == EXIT_DEGRADED
    assert any("its last compaction did not finish" in r.getMessage() for r in caplog.records)
    # Accepted on request: same run, exit 0, still said.
    again = mas_ctl("run", EXAMPLE / "agent.yaml", "--infra", infra, "--overlay", overlay,
                    "--input", _turns(tmp_path, 30), "--out", tmp_path / "run2", "--quiet",
                    "--allow-degraded")
    assert again.code == 0 and "accepted (--allow-degraded)" in again.err


def test_on_the_digit_tokenizer_no_summary_is_lost_to_a_window_overflow(
    write: Callable[[str, str], Path], mas_ctl: Callable[..., Any], tmp_path: Path,
) -> None:
    # Digit-dense turns: the estimate counts a quarter of what this server counts.
    turns = tmp_path / "digits.jsonl"
    turns.write_text("".join(
        json.dumps(f"Batch {t}: " + " ".join(f"{t * 1000 + n:07d}" for n in range(50))) + "\n"
        for t in range(30)))
    with serve(window=4096) as provider:
        infra, overlay = _overlay(write, provider.base_url, 4096)
        out = tmp_path / "run"
        result = mas_ctl("run", EXAMPLE / "agent.yaml", "--infra", infra, "--overlay", overlay,
                         "--input", turns, "--out", out, "--quiet")
    assert result.code == 0, result.err
    transcript = json.loads((out / "transcript.json").read_text())
    assert transcript["status"] == "ok"
    counts = transcript["degradation"]["counts"]
    assert "compaction_failures" not in counts
    assert provider.served, "the summarizer was called"
    events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]
    assert sum(e["event"] == "compaction.stop" and e.get("llm_called") for e in events) >= 1
    # The summarizer measured its chunks the way the engine expects this server to count
    # them (digit prior, then calibrated), so every summary request fitted the 4k window
    # as built: the server refused none and the engine had nothing to cut.
    assert provider.rejected == [], "no summary request was refused"
    assert max(provider.served) <= 4096
    mark = CUT_MARK.split("{n}")[0].strip()
    cut = sum(any(mark in str(m.get("content")) for m in r["messages"])
              for r in provider.requests)
    assert cut == 0 and counts.get("window_overflows_recovered", 0) == 0, counts


def test_a_model_looping_on_an_unknown_tool_is_degraded_with_a_clear_line(
    write: Callable[[str, str], Path], mas_ctl: Callable[..., Any], tmp_path: Path,
) -> None:
    """Issue 13 item 15: the loop burns every tool round; it is counted and named."""
    with serve() as provider:
        provider.tool_calls = ["lookup_order"]
        agent = write("agent.yaml", """
            apiVersion: mas/v1
            kind: Agent
            metadata: {name: looper}
            spec:
              models: [{id: main, model: openai/local, context_window: 8192}]
        """)
        infra = write("infra.yaml", f"""
            apiVersion: mas/v1
            kind: Infra
            metadata: {{name: local}}
            spec: {{generation: {{api_base: "{provider.base_url}", num_retries: 0}}}}
        """)
        turns = tmp_path / "turns.jsonl"
        turns.write_text('"Where is order 4471?"\n"And order 4472?"\n')
        result = mas_ctl("run", agent, "--infra", infra, "--input", turns,
                         "--out", tmp_path / "run", "--quiet")
    assert result.code == EXIT_DEGRADED, result.err
    line = next(x for x in result.err.splitlines() if x.startswith("tool_loops:"))
    assert line.startswith("tool_loops: 2 (last: turn 2: all 8 tool rounds used")
    assert "unknown tool(s) 'lookup_order'" in line
    assert len(provider.requests) == 16  # 8 rounds per turn, then the turn ends
