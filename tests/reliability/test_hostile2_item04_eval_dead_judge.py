"""``mas-ctl eval`` against a dead judge endpoint ends degraded (issue 26, item 4).

Every judge call fails (nothing listens on the Infra's ``api_base``), so every judge
metric is unscored: the command says so on stderr and exits 3 (``--allow-degraded``
accepts), and a rerun retries the unscored ids rather than skipping the folder.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from mas.library.eval import cli as eval_cli
from mas.runtime.degradation import EXIT_DEGRADED


def dead_base_url() -> str:
    """An http URL on 127.0.0.1 where nothing listens (a port bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_every_judge_call_failing_ends_degraded_and_a_rerun_retries(
    tmp_path: Path, stored_run: Callable[[Path], Path]
) -> None:
    folder = stored_run(tmp_path / "run")
    infra = tmp_path / "infra.yaml"
    infra.write_text(
        "apiVersion: mas/v1\nkind: Infra\nmetadata: {name: dead}\nspec:\n"
        f"  generation: {{api_base: '{dead_base_url()}', num_retries: 0, timeout: 5}}\n")
    args = [str(folder), "--infra", str(infra), "--model", "openai/judge",
            "-m", "GoalSuccessRate", "-m", "tokens"]

    done = CliRunner().invoke(eval_cli.eval_command, args)
    assert done.exit_code == EXIT_DEGRADED, done.output
    assert "\n1 scored\n" in done.output  # Tokens has a value: the folder is partial
    degraded = [line for line in done.output.splitlines() if line.startswith("degraded: ")]
    assert len(degraded) == 1, done.output
    assert "1 metric(s) unscored (run_quality=partial; first: GoalSuccessRate: " in degraded[0]
    document = json.loads((folder / "metrics.json").read_text())
    assert document["metrics"]["GoalSuccessRate"]["status"] == "unscored"
    assert document["metrics"]["Tokens"]["status"] == "scored"

    again = CliRunner().invoke(eval_cli.eval_command, [*args, "--json"])
    assert again.exit_code == EXIT_DEGRADED
    report = json.loads(again.output[: again.output.rindex("}") + 1])
    # The unscored id is retried, and comes back unscored again: this pass got no value.
    assert [r["status"] for r in report["runs"]] == ["unscored"]
    assert report["runs"][0]["scored"] == ["GoalSuccessRate"]

    accepted = CliRunner().invoke(eval_cli.eval_command, [*args, "--allow-degraded"])
    assert accepted.exit_code == 0, accepted.output
    assert "; accepted (--allow-degraded)" in accepted.output


def test_every_vote_unscored_says_unscored_not_scored(
    tmp_path: Path, stored_run: Callable[[Path], Path]
) -> None:
    # Only judge ids, every vote failed (issue 25 item 8): no folder got a value, so none is
    # reported "scored", and the command ends degraded.
    folders = [stored_run(tmp_path / "runs" / name) for name in ("a", "b")]
    infra = tmp_path / "infra.yaml"
    infra.write_text(
        "apiVersion: mas/v1\nkind: Infra\nmetadata: {name: dead}\nspec:\n"
        f"  generation: {{api_base: '{dead_base_url()}', num_retries: 0, timeout: 5}}\n")
    done = CliRunner().invoke(eval_cli.eval_command, [
        str(tmp_path / "runs"), "-r", "--infra", str(infra), "--model", "openai/judge",
        "-m", "GoalSuccessRate"])
    assert done.exit_code == EXIT_DEGRADED, done.output
    lines = done.output.splitlines()
    for folder in folders:
        assert f"unscored {folder}: 1 metric(s), none got a value, run_quality=unscored" in lines
    assert "0 scored, 2 unscored" in lines
    assert not [line for line in lines if line.startswith("scored ")]
    assert len([line for line in lines if line.startswith("degraded: ")]) == 2
