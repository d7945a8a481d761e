"""docs/getting-started.md, steps 1 to 5, run as written (issue 14.5).

The agent file of step 1 is written where the page says, and each ``mas-ctl`` command of
the steps runs (in-process, through ``main``) from a folder that sees the checkout's
examples, as a reader's would.
The install and demo steps are ``make`` targets, checked by test_install_split.py.
"""

from __future__ import annotations

import io
import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs/getting-started.md"


def page_parts() -> tuple[str, list[str]]:
    """The agent file of step 1 and the ``mas-ctl`` commands of the later steps, in order."""
    text = PAGE.read_text(encoding="utf-8")
    agent = re.search(r"```yaml\n# agent.yaml\n(.*?)```", text, re.S)
    assert agent is not None
    commands = [
        line.strip()
        for block in re.findall(r"```bash\n(.*?)```", text, re.S)
        for line in block.splitlines()
        if line.strip().startswith("mas-ctl ")
    ]
    return agent[1], commands


@pytest.mark.slow
def test_the_getting_started_steps_work_as_written(
    tmp_path: Path, mas_ctl, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    agent, commands = page_parts()
    assert [c.split()[1] for c in commands] == ["--version", "compile", "run", "inspect", "chat"]
    (tmp_path / "agent.yaml").write_text(agent)
    (tmp_path / "library-standard").symlink_to(ROOT / "library-standard")
    for command in commands:
        if command.startswith("mas-ctl chat"):
            # Typed at the prompt; piped, as the chat reads lines the same way.
            monkeypatch.setattr(sys, "stdin", io.StringIO("What is my order number?\n/inspect\n/exit\n"))
        done = mas_ctl(*shlex.split(command)[1:])
        assert done.code == 0, (command, done.err[-2000:])
    assert (tmp_path / "runs/demo/transcript.json").is_file()
    [chat_folder] = (tmp_path / "runs/support-assistant").iterdir()
    assert (chat_folder / "session.json").is_file()
    assert "window       " in done.out, "/inspect answered in the chat"
