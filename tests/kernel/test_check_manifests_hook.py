"""Issue 12, item 4: ``mas_check_manifests`` lets any plugin (the lab, or a third party)
add the checks its own command runs to ``mas-ctl validate``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from mas.runtime import hookimpl
from mas.runtime.cli._app import CliState
from mas.runtime.cli.compile_cmd import validate_command
from mas.runtime.errors import ManifestError, Problem
from mas.runtime.spec.loader import ManifestSet

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {name: shouty}
spec:
  instructions: ANSWER IN CAPITALS.
"""


class NoShouting:
    """A third-party check: refuses role prompts written in capitals."""

    @hookimpl
    def mas_check_manifests(self, manifests: ManifestSet) -> list[Problem]:
        return [Problem(a.source, "spec.instructions", "no shouting", a.agent.spec.instructions,
                        True)
                for a in manifests.agents if a.agent.spec.instructions.isupper()]


def _validate(runtime: Any, path: Path) -> Any:
    return CliRunner().invoke(validate_command, [str(path)], obj=CliState(runtime))


def test_validate_asks_mas_check_manifests_of_every_plugin(
    write: Callable[[str, str], Path], register_plugin: Callable[..., Any]
) -> None:
    path = write("agent.yaml", AGENT)
    runtime = register_plugin(NoShouting(), "no-shouting")
    result = _validate(runtime, path)
    assert isinstance(result.exception, ManifestError)
    assert [p.format() for p in result.exception.problems] == [
        f"{path}: spec.instructions: no shouting (got 'ANSWER IN CAPITALS.')"]
    calm = write("calm.yaml", AGENT.replace("ANSWER IN CAPITALS.", "Answer calmly."))
    ok = _validate(runtime, calm)
    assert ok.exit_code == 0 and ok.output.startswith("ok: 1 document(s) valid")
