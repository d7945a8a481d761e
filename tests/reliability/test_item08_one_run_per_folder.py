"""Issue 13 item 8: a session folder is locked while a run uses it, and a resume with an
input that does not match the saved turns is refused."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mas.runtime.session import load_state

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {name: locked}
spec:
  models: [{id: main, model: offline/default, context_window: 4000, max_tokens: 200}]
"""


def _turns(path: Path, texts: list[str]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in texts))
    return path


def test_item08_a_second_run_on_a_busy_folder_is_refused(
    tmp_path: Path, write: Callable[[str, str], Path], mas_ctl: Callable[..., Any]
) -> None:
    agent = write("agent.yaml", AGENT)
    turns = _turns(tmp_path / "turns.jsonl", ["one", "two"])
    out = tmp_path / "run"
    # Another process holds the folder exactly as a running `mas-ctl run` does.
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom mas.runtime.session.run_folder import "
         "lock_run_folder\nwith lock_run_folder(sys.argv[1]):\n    print('held', flush=True)"
         "\n    sys.stdin.read()", str(out)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    refused = mas_ctl("run", agent, "--input", turns, "--out", out)
    holder.communicate("", timeout=30)
    assert refused.code == 2, refused.err
    assert refused.err.strip() == (f"error: {out} is in use by mas-ctl run (pid {holder.pid}); "
                                   "wait for it to finish, or pass another --out")
    assert not (out / "session.json").exists()
    done = mas_ctl("run", agent, "--input", turns, "--out", out)  # the holder is gone
    assert done.code == 0 and load_state(out / "session.json")["turns"] == 2


def test_item08_resume_with_another_input_is_refused(
    tmp_path: Path, write: Callable[[str, str], Path], mas_ctl: Callable[..., Any]
) -> None:
    agent = write("agent.yaml", AGENT)
    out = tmp_path / "run"
    first = _turns(tmp_path / "a.jsonl", ["alpha one", "alpha two"])
    assert mas_ctl("run", agent, "--input", first, "--out", out).code == 0
    saved = (out / "session.json").read_bytes()
    other = _turns(tmp_path / "b.jsonl", ["beta one", "beta two", "beta three"])
    refused = mas_ctl("run", agent, "--input", other, "--out", out)
    assert refused.code == 2 and "Traceback" not in refused.err
    assert refused.err.strip() == (
        f"{other}: turn 1: differs from turn 1 saved in the run folder; resume with the same "
        "--input, or pass another --out for a new session")
    assert (out / "session.json").read_bytes() == saved
    longer = _turns(tmp_path / "c.jsonl", ["alpha one", "alpha two", "alpha three"])
    assert mas_ctl("run", agent, "--input", longer, "--out", out).code == 0  # a true resume
    assert load_state(out / "session.json")["turns"] == 3


def test_item08_bad_input_leaves_no_empty_run_folder(
    tmp_path: Path, write: Callable[[str, str], Path], mas_ctl: Callable[..., Any]
) -> None:
    bad = write("bad.yaml", AGENT.replace("models:", "modles:"))
    turns = _turns(tmp_path / "turns.jsonl", ["one"])
    refused = mas_ctl("run", bad, "--input", turns, "--out", tmp_path / "new" / "run")
    assert refused.code == 2 and "spec.modles" in refused.err
    assert not (tmp_path / "new").exists()  # the lock made both folders, and took them away
    # A folder the user already had stays, and so does what a run wrote before.
    (tmp_path / "mine").mkdir()
    assert mas_ctl("run", bad, "--input", turns, "--out", tmp_path / "mine").code == 2
    assert (tmp_path / "mine").is_dir()
    agent = write("agent.yaml", AGENT)
    assert mas_ctl("run", agent, "--input", turns, "--out", tmp_path / "kept").code == 0
    assert (tmp_path / "kept" / "session.json").exists()
