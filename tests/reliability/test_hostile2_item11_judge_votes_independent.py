"""A run folder's scores do not depend on which folders were judged before it
(issue 26, item 11).

The offline judge caches prompt prefixes per conversation, like a real provider; with
every vote of the eval step one conversation, a folder's ``cached_tokens`` and cost
depended on the votes that ran before it (the order a Ray backend finishes sessions, a
kill that cut the step half-way and left the rest to a new process) and beside it (votes
run concurrently). Each vote, with its re-ask, is now a conversation of its own, so
scoring folders together, alone, or in another order gives the same ``metrics.json``: the
same for the local and the Ray backend, whose eval step both run this code in the
driver.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from mas.library.eval import cli as eval_cli

TIMING = {"seconds", "created", "duration", "ts", "elapsed", "started", "finished"}
ARGS = ["--model", "offline/judge", "-m", "GoalSuccessRate", "-m", "ContextPreservation"]


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _metrics(folder: Path) -> Any:
    return _strip(json.loads((folder / "metrics.json").read_text()))


def _score(*args: str) -> None:
    done = CliRunner().invoke(eval_cli.eval_command, [*args, *ARGS])
    assert done.exit_code == 0, done.output


def test_scores_do_not_depend_on_the_folders_judged_before(
    tmp_path: Path, stored_run: Callable[[Path], Path]
) -> None:
    together = [stored_run(tmp_path / "together" / name) for name in ("a", "b")]
    alone = stored_run(tmp_path / "alone" / "b")
    _score(str(tmp_path / "together"), "-r")
    _score(str(alone))
    assert _metrics(together[1]) == _metrics(alone)
    assert _metrics(together[0]) == _metrics(alone), "the same content scores the same"
    cached = [m["detail"]["tokens"]["cached_tokens"]
              for m in _metrics(alone)["metrics"].values()]
    assert cached == [0, 0], "no vote warms another"
