"""``mas-ctl lab run`` with a degraded flavour, end to end through LiteLLM's real call path
(issue 11 "Done when"): the ablation's cheap summarizer pointed at a closed port."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from mas.runtime.degradation import EXIT_DEGRADED
from mas.runtime.fakeprovider import closed_base_url

EXAMPLE = Path(__file__).resolve().parents[2] / "library-lab" / "examples" / "context-ablation"


def _ablation(tmp_path: Path, base: str) -> Path:
    """The example, with its Infra on ``base`` and the cheap summarizer served there."""
    folder = tmp_path / "ablation"
    shutil.copytree(EXAMPLE, folder)
    infra = yaml.safe_load((folder / "infra.yaml").read_text())
    infra["spec"]["generation"].update(api_base=base, timeout=5, num_retries=0)
    (folder / "infra.yaml").write_text(yaml.safe_dump(infra))
    overlay = yaml.safe_load((folder / "overlays" / "cheap_summarizer.yaml").read_text())
    overlay["spec"]["patch"]["context_manager"]["params"]["summarizer"]["params"]["model"] = (
        "openai/local")
    (folder / "overlays" / "cheap_summarizer.yaml").write_text(yaml.safe_dump(overlay))
    experiment = yaml.safe_load((folder / "experiment.yaml").read_text())
    experiment["experiment"]["application"]["post"][1]["config"]["compare"] = [
        {"metric": "PromptTokens", "better": "summarising_cheap", "than": "summarising",
         "direction": "lower"}]
    (folder / "experiment.yaml").write_text(yaml.safe_dump(experiment))
    return folder / "experiment.yaml"


def test_a_summarizer_on_a_closed_port_marks_its_flavour_degraded(
    mas_ctl: Callable[..., Any], tmp_path: Path,
) -> None:
    base = closed_base_url()
    port = base.rsplit(":", 1)[1].split("/")[0]
    experiment = _ablation(tmp_path, base)
    args = ("lab", "run", experiment, "--limit", "2", "--flavour", "summarising",
            "--flavour", "summarising_cheap", "--runs-dir", tmp_path / "runs")
    result = mas_ctl(*args)
    assert result.code == EXIT_DEGRADED, result.err
    lines = [x for x in result.err.splitlines() if x.startswith("degraded: flavour")]
    assert len(lines) == 1 and "'summarising_cheap': 2 of 2 session(s)" in lines[0]
    assert "compaction_failures (last: ModelCallError" in lines[0]
    assert f"127.0.0.1:{port}" in lines[0] and "'openai/local'" in lines[0]
    # The table: a row of degraded sessions and one per kind, per flavour.
    table = result.out
    # On a terminal the table comes in blocks of flavour columns that fit 100 columns,
    # each with its own rows: the flavours' cells read across the blocks, in order.
    degraded_rows = [x for x in table.splitlines() if x.startswith("sessions degraded")]
    cells = [cell for row in degraded_rows for cell in row.split()[2:]]
    assert cells == ["0", "of", "2", "2", "of", "2"]
    assert any(x.strip().startswith("compaction_failures") for x in table.splitlines())
    # The claim over the degraded flavour is unreliable, never "holds".
    claim = next(x for x in table.splitlines() if x.startswith("* summarising_cheap"))
    assert "unreliable" in claim and "holds" not in claim
    run = next((tmp_path / "runs").glob("*/*"))
    results = json.loads((run / "results.json").read_text())
    assert results["sessions"]["summarising_cheap"]["degraded"] == 2
    assert results["sessions"]["summarising"]["degraded"] == 0
    assert results["claims"][0]["reliable"] is False
    assert "unreliable" in (run / "report.html").read_text()
    sessions = json.loads((run / "sessions.json").read_text())
    assert sessions["degraded"] == 2
    # A rerun retries the degraded sessions (the server is still down: degraded again),
    # and --allow-degraded accepts them.
    again = mas_ctl(*args, "--allow-degraded")
    assert again.code == 0, again.err
    assert "2 session(s)" in again.err or "degraded: flavour" in again.err
    rerun = json.loads((run / "sessions.json").read_text())
    cheap = [r for r in rerun["sessions"] if r["flavour"] == "summarising_cheap"]
    assert all(r["seconds"] is not None for r in cheap), "the degraded sessions ran again"


def test_a_judge_behind_api_base_passes_the_key_check_and_unscored_votes_degrade(
    mas_ctl: Callable[..., Any], tmp_path: Path, monkeypatch: Any,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    experiment = _ablation(tmp_path, closed_base_url())
    document = yaml.safe_load(experiment.read_text())
    document["experiment"]["models"]["judge"] = "openai/local"
    experiment.write_text(yaml.safe_dump(document))
    result = mas_ctl("lab", "run", experiment, "--limit", "1", "--flavour", "summarising",
                     "--runs-dir", tmp_path / "runs")
    assert "no key configured" not in result.err
    assert result.code == EXIT_DEGRADED, result.err
    assert "unscored_votes" in result.out and "sessions degraded" in result.out
    run = next((tmp_path / "runs").glob("*/*"))
    results = json.loads((run / "results.json").read_text())
    assert results["degradation"]["summarising"]["counts"]["unscored_votes"] >= 1


def test_the_runner_line_counts_degraded_sessions() -> None:
    import io

    from mas.library.lab.progress import Progress

    stream = io.StringIO()
    now = [0.0]
    progress = Progress(2, stream=stream, clock=lambda: now[0])
    now[0] = 4.0
    progress.advance(degraded=True)
    progress.advance()
    progress.finish()
    assert "1 degraded" in stream.getvalue().splitlines()[-2]
    assert stream.getvalue().endswith("sessions: 2 run in 0:04, 0 already done, 0 failed, "
                                      "1 degraded\n")
