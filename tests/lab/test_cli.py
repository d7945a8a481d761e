"""``mas-ctl lab run / report / ls`` through click's CliRunner, on real offline sessions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from mas.library.lab.cli import lab_group
from mas.runtime import Runtime, hookimpl
from mas.runtime.cli import CliState


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(lab_group, list(args), obj=CliState(Runtime.create()))


def test_lab_is_registered_as_a_mas_ctl_command() -> None:
    entry = Runtime.create().registries.cli_command.get("lab")
    assert entry.factory() is lab_group
    assert sorted(lab_group.commands) == ["ls", "report", "run"]


def test_run_resume_report_and_ls(tiny: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    first = _invoke("run", str(tiny), "--flavour", "stack", "--flavour", "sliding_window",
                    "--limit", "1", "--max-concurrency", "2", "--runs-dir", str(runs))
    assert first.exit_code == 0, first.output
    assert "new run folder" in first.output and "sessions  ETA" in first.output
    table = [line for line in first.output.splitlines() if line.startswith("FactRecall")]
    # sliding_window lost the fact, stack kept it (one session each: Wilson bounds around 0 and 1)
    assert table
    assert table[0].endswith("0 [0, 0.793]  1 [0.207, 1]")
    report = Path(first.output.rsplit("report: ", 1)[1].split()[0])
    assert report.is_file() and report.parent.parent == runs / "tiny"
    # the result sentences under the table, before the report's path (wrapped at 100 columns)
    result = first.output.split("\nresult:\n", 1)[1].split("report: ", 1)[0]
    assert result.startswith("  FactRecall ")
    assert "FactRecall (final answer) (higher is better): stack is best at 1, then " \
        "sliding_window at 0; only 1 paired session(s) in common with sliding_window, too few" \
        in " ".join(result.split())

    again = _invoke("run", str(tiny), "--flavour", "stack", "--flavour", "sliding_window",
                    "--limit", "1", "--runs-dir", str(runs))
    assert again.exit_code == 0
    assert "resuming run folder" in again.output and "skipped  run_sessions" in again.output
    assert "sessions  ETA" not in again.output

    redo = _invoke("report", str(report.parent))
    assert redo.exit_code == 0 and "ok  report" in redo.output and "FactRecall" in redo.output

    listing = _invoke("ls", "--runs-dir", str(runs))
    assert listing.exit_code == 0
    assert f"{report.parent}" in listing.output and "finished" in listing.output
    assert "sessions 2/2 (0 failed)" in listing.output
    assert "earlier pass" not in first.output + again.output + redo.output

    # A pass whose aggregate fails leaves the last table and report in place: shown, and
    # said to be an earlier pass's rather than passed off as this one's.
    (report.parent / "sessions.json").write_text("{torn")
    broken = _invoke("report", str(report.parent))
    assert broken.exit_code == 1
    assert "from an earlier pass (this one did not rewrite results.json):\nmetric" \
        in broken.output
    assert "\nresult (from an earlier pass):\n" in broken.output
    assert f"report: {report} (from an earlier pass)" in broken.output
    as_json = _invoke("report", str(report.parent), "--json")
    document = json.loads(as_json.stdout)
    assert document["from_earlier_pass"] == ["results.json", "report.html"]
    assert not document["ok"] and document["results"]["flavours"]


def test_bad_input_is_one_line_and_exit_2(tiny: Path, tmp_path: Path, make_experiment: Any) -> None:
    unknown = _invoke("run", str(tiny), "--flavour", "nope", "--runs-dir", str(tmp_path / "runs"))
    assert unknown.exit_code == 2
    assert unknown.output.strip() == (f"{tiny}: --flavour: unknown flavour; the experiment has "
                                      "summarising, sliding_window, stack (got 'nope')")
    assert not (tmp_path / "runs").exists()
    not_a_run = _invoke("report", str(tmp_path))
    assert not_a_run.exit_code == 2 and "not a lab run folder (no run.json)" in not_a_run.output
    empty = _invoke("ls", "--runs-dir", str(tmp_path / "none"))
    assert empty.exit_code == 0 and "no lab runs under" in empty.output


class Boom:
    """A step plugin whose step always fails."""

    @hookimpl
    def mas_register_lab_steps(self, registry: Any) -> None:
        registry.register("boom", BoomStep)


class BoomStep:
    """A step that always fails, to show the CLI reports a failed step and exits non-zero."""

    def __init__(self, params: Any, spec: Any) -> None:
        self.spec = spec

    def outputs(self, ctx: Any) -> list[str]:
        return []

    def run(self, ctx: Any) -> Any:
        raise RuntimeError("boom")


def test_a_failed_step_exits_1_and_blocks_its_dependents(tmp_path: Path, make_experiment: Any) -> None:
    post = "      - {type: boom}\n"
    path = make_experiment(tmp_path / "exp", post=post)
    runtime = Runtime.create(plugins=[("boom", Boom())])
    result = CliRunner().invoke(lab_group, ["run", str(path), "--flavour", "stack", "--limit", "1",
                                            "--runs-dir", str(tmp_path / "runs")], obj=CliState(runtime))
    assert result.exit_code == 1
    assert "failed  boom: RuntimeError: boom" in result.output
    assert "ok  eval_mce" in result.output and "blocked  aggregate" in result.output
    assert "error: step(s) did not finish: boom (failed), aggregate (blocked), report (blocked)" in result.output


def test_unknown_metric_ids_are_refused_before_any_session(tmp_path: Path, make_experiment: Any) -> None:
    post = "      - {type: eval_mce, config: {metrics: [NoSuchMetric]}}\n"
    path = make_experiment(tmp_path / "exp", post=post)
    result = _invoke("run", str(path), "--runs-dir", str(tmp_path / "runs"))
    assert result.exit_code == 2
    assert result.output.startswith(f"{path}: experiment.application.post[0].config.metrics[0]")
    assert "NoSuchMetric" in result.output and not (tmp_path / "runs").exists()
