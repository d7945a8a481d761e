"""A plugin may not end the process (issue 26, item 2).

``SystemExit`` (and any ``BaseException`` but ``KeyboardInterrupt``) raised by plugin code
— at its import, in a registration hook, in an observer — is a fault of that plugin like
any other: reported, the plugin left out, the command going on. The distributions are
written by hand (a package and its ``.dist-info``) into a folder on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mas.runtime import Runtime, hookimpl
from mas.runtime.events import Event
from mas.runtime.registry import KindRegistry

MAS_CTL = str(Path(sys.executable).with_name("mas-ctl"))


def write_plugin(site: Path, source: str) -> Path:
    """Distribution ``mas-exiting`` 1.0 with entry point ``exiting`` in ``site``."""
    package = site / "exiting_plugin"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(source)
    info = site / "mas_exiting-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mas-exiting\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[mas]\nexiting = exiting_plugin\n")
    return package / "__init__.py"


def mas_ctl(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """mas-ctl with ``site`` on PYTHONPATH, run from ``site``."""
    env = dict(os.environ)
    env.pop("MAS_CONFIG", None)
    env["PYTHONPATH"] = str(site) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([MAS_CTL, *args], env=env, cwd=site, capture_output=True, text=True,
                          timeout=120)


IMPORT_EXIT = "import sys\n\nsys.exit(0)\n"
HOOK_EXIT = (
    "from mas.runtime import hookimpl\n\n"
    "@hookimpl\n"
    "def mas_register_summarizers(registry):\n"
    "    raise SystemExit(3)\n"
)
OBSERVER_EXIT = (
    "from mas.runtime import hookimpl\n\n"
    "@hookimpl\n"
    "def mas_observe_event(event):\n"
    "    raise SystemExit(0)\n"
)


@pytest.mark.parametrize(("source", "stage", "line"), [
    (IMPORT_EXIT, "import", 3), (HOOK_EXIT, "hook", 5)], ids=["import", "hook"])
def test_system_exit_at_start_up_is_a_fault_of_its_plugin(
    tmp_path: Path, source: str, stage: str, line: int
) -> None:
    plugin_file = write_plugin(tmp_path, source)
    done = mas_ctl(tmp_path, "plugins")
    assert done.returncode == 1, done.stderr  # the listing says a plugin failed
    report = json.loads(done.stdout)
    assert "standard" in {p["name"] for p in report["plugins"]}
    [failure] = report["failed"]
    assert (failure["entry_point"], failure["stage"]) == ("exiting", stage)
    assert (failure["file"], failure["line"]) == (str(plugin_file), line)
    assert "SystemExit" in failure["error"]
    assert done.stderr.count("MAS_DISABLE_PLUGINS=exiting skips it") == 1


def test_an_observer_raising_system_exit_does_not_end_the_run(
    tmp_path: Path, offline_agent: Callable[[Path], Path]
) -> None:
    plugin_file = write_plugin(tmp_path, OBSERVER_EXIT)
    offline_agent(tmp_path)
    (tmp_path / "turns.jsonl").write_text('"My id is X-1."\n"What is my id?"\n')
    done = mas_ctl(tmp_path, "run", "agent.yaml", "--input", "turns.jsonl", "--out", "out")
    assert done.returncode == 3, done.stderr  # degraded: the plugin left out during the run
    assert done.stderr.strip().splitlines()[-1] == (
        f"degraded: plugin 'exiting' left out during the run, at {plugin_file}:5 (SystemExit)")
    transcript = json.loads((tmp_path / "out/transcript.json").read_text())
    assert [m["content"] for m in transcript["messages"] if m["role"] == "user"] == [
        "My id is X-1.", "What is my id?"]


def _plugin(**hooks: object) -> object:
    return type("Plugin", (), {name: staticmethod(hookimpl(f)) for name, f in hooks.items()})()


class Custom(BaseException):
    """A BaseException that is neither Exception nor an exit."""


@pytest.mark.parametrize("raised", [SystemExit(0), SystemExit(3), GeneratorExit(), Custom()],
                         ids=repr)
def test_any_base_exception_in_process_faults_only_its_plugin(raised: BaseException) -> None:
    def bad(registry: KindRegistry) -> None:
        raise raised

    def watch(event: Event) -> None:
        raise raised

    runtime = Runtime.create(entry_points=False, plugins=[
        ("bad", _plugin(mas_register_summarizers=bad)),
        ("watcher", _plugin(mas_observe_event=watch)),
    ])
    assert runtime.pm.failed_names() == ["bad"]
    runtime.emit(Event("llm.call", {}))
    assert runtime.pm.failed_names() == ["bad", "watcher"]
    assert runtime.pm.failures[1].stage == "call"


def test_keyboard_interrupt_from_a_plugin_still_stops_the_command() -> None:
    def interrupted(registry: KindRegistry) -> None:
        raise KeyboardInterrupt

    def watch(event: Event) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Runtime.create(entry_points=False,
                       plugins=[("ctrl_c", _plugin(mas_register_summarizers=interrupted))])
    runtime = Runtime.create(entry_points=False,
                             plugins=[("ctrl_c", _plugin(mas_observe_event=watch))])
    with pytest.raises(KeyboardInterrupt):
        runtime.emit(Event("llm.call", {}))
    assert runtime.pm.failed_names() == []
