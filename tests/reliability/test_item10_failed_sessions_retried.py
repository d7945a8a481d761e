"""Issue 13 item 10: a session that failed (a full disk, here) is retried by the next run
from its saved turns; until then the run exits non-zero and the table leaves it out."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mas.library.lab import run_experiment
from mas.library.lab.sessions import SessionJob, default_session_function
from mas.runtime import Runtime
from mas.runtime.errors import StorageError
from mas.runtime.session import load_state


def _disk_full_after_two_turns(job: SessionJob) -> None:
    """The kernel session of ``job``, cut off by a full disk after its second turn on item i1."""
    play = default_session_function()
    if job.item.id != "i1":
        play(job)
        return
    short = job.item.model_copy(update={"turns": job.item.turns[:2]})
    play(dataclasses.replace(job, item=short))
    (job.folder / "transcript.json").unlink()  # the disk filled before the last write
    raise StorageError(f"{job.folder / 'transcript.json'}: cannot write (No space left)")


def test_item10_a_failed_session_is_retried_and_left_out_until_then(
    tmp_path: Path, make_lab: Callable[..., Path], mas_ctl: Callable[..., Any],
    monkeypatch: Any,
) -> None:
    monkeypatch.chdir(tmp_path)
    experiment = make_lab(tmp_path / "exp", items=3, turns=5)
    runs = tmp_path / "runs"
    first = run_experiment(Runtime.create(), experiment, runs_root=runs, max_concurrency=1,
                           session_function=_disk_full_after_two_turns)
    run = first.run.path
    index = json.loads((run / "sessions.json").read_text())
    assert index["failed"] == 1
    results = json.loads((run / "results.json").read_text())
    assert results["sessions"]["plain"] == {"total": 3, "failed": 1, "degraded": 0}
    # The cut-off session is in no number of the table or the claims.
    assert results["metrics"]["plain"]["FactRecall"]["n"] == 2
    assert set(results["samples"]["plain"]["FactRecall"]) == {"i0#0", "i2#0"}
    report = mas_ctl("lab", "report", run)
    assert report.code == 1
    assert ("error: 1 of 3 sessions failed and are left out of the table and claims (see "
            "sessions.json); run the same command again to retry them") in report.err
    folder = run / "sessions" / "plain" / "i1" / "run-0"
    assert load_state(folder / "session.json")["turns"] == 2
    again = mas_ctl("lab", "run", experiment, "--runs-dir", runs)  # the disk is back
    assert again.code == 0, again.err
    assert f"resuming run folder {run}" in again.err
    index = json.loads((run / "sessions.json").read_text())
    assert index["failed"] == 0
    transcript = json.loads((folder / "transcript.json").read_text())
    users = [m["content"] for m in transcript["messages"] if m["role"] == "user"]
    item = json.loads((tmp_path / "exp" / "data.jsonl").read_text().splitlines()[1])
    assert users == item["turns"]  # the two saved turns kept, the other three played once
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    assert [e["turn"] for e in events if e["event"] == "session.turn"] == [1, 2, 3, 4, 5]
