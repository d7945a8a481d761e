"""``--json`` on the lab commands (issue 14.6): stdout is one JSON document, nothing else."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from mas.library.lab.cli import lab_group
from mas.runtime import Runtime
from mas.runtime.cli import CliState


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(lab_group, list(args), obj=CliState(Runtime.create()))


def test_run_report_and_ls_print_json(tiny: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    first = _invoke("run", str(tiny), "--flavour", "stack", "--limit", "1",
                    "--runs-dir", str(runs), "--json")
    assert first.exit_code == 0, first.output
    document = json.loads(first.stdout)
    assert document["ok"] is True and document["resumed"] is False
    assert document["steps"]["run_sessions"] == "ok"
    assert Path(document["report"]).is_file()
    assert document["results"], "results.json is carried whole"
    assert "sessions  ETA" in first.stderr, "progress still reaches the terminal"

    redo = _invoke("report", document["run"], "--json")
    assert redo.exit_code == 0, redo.output
    assert json.loads(redo.stdout)["run"] == document["run"]

    listing = _invoke("ls", "--runs-dir", str(runs), "--json")
    [row] = json.loads(listing.stdout)["runs"]
    assert (row["path"], row["status"], row["sessions"], row["expected"]) == (
        document["run"], "finished", 1, 1)


def test_bad_input_with_json_is_a_json_problem_list(tiny: Path, tmp_path: Path) -> None:
    done = _invoke("run", str(tiny), "--flavour", "nope", "--runs-dir", str(tmp_path / "runs"),
                   "--json")
    assert done.exit_code == 2
    [problem] = json.loads(done.stdout)["problems"]
    assert problem["location"] == "--flavour" and problem["value"] == "nope"
