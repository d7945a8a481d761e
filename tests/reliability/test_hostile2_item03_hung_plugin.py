"""A plugin that hangs at start-up is left out and named (issue 26, item 3).

Its import and each of its registration hooks get ``load_timeout`` seconds (default 30,
docs/plugins.md); past it the plugin is faulted at the line where it hangs and every
other plugin loads. Each hang here waits on an event the test sets at the end, so the
abandoned thread finishes — and what it registers then is refused.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from mas.runtime import Runtime, hookimpl
from mas.runtime.errors import PluginTimeoutError
from mas.runtime.plugins import DEFAULT_LOAD_TIMEOUT
from mas.runtime.registry import KindRegistry

GATE_MODULE = "mas_test_hang_gate"


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """An event importable as ``mas_test_hang_gate.GATE``, set (releasing hangs) at the end."""
    event = threading.Event()
    module = types.ModuleType(GATE_MODULE)
    module.GATE = event  # type: ignore[attr-defined]
    sys.modules[GATE_MODULE] = module
    yield event
    event.set()
    del sys.modules[GATE_MODULE]


def _plugin(**hooks: object) -> object:
    return type("Plugin", (), {name: staticmethod(hookimpl(f)) for name, f in hooks.items()})()


def test_the_default_bound_is_documented() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs/plugins.md").read_text()
    assert f"{DEFAULT_LOAD_TIMEOUT:g} s" in docs


def test_a_hung_registration_hook_is_left_out_and_its_late_types_refused(
    gate: threading.Event,
) -> None:
    finished = threading.Event()
    late: list[BaseException] = []

    def hangs(registry: KindRegistry) -> None:
        gate.wait()
        try:
            registry.register("too_late", lambda p, c: None)
        except RuntimeError as exc:
            late.append(exc)
        finally:
            finished.set()

    def good(registry: KindRegistry) -> None:
        registry.register("good_one", lambda p, c: None)

    runtime = Runtime.create(entry_points=False, load_timeout=0.2, plugins=[
        ("hung", _plugin(mas_register_summarizers=hangs)),
        ("good", _plugin(mas_register_summarizers=good)),
    ])
    assert "good_one" in runtime.registries.summarizer
    [fault] = runtime.pm.failures
    assert (fault.entry_point, fault.stage) == ("hung", "hook")
    assert isinstance(fault.reason, PluginTimeoutError)
    assert "did not finish within 0.2 s" in str(fault)
    assert fault.file == __file__  # where it hangs: the gate.wait() line of hangs()
    assert fault.line == hangs.__code__.co_firstlineno + 1

    gate.set()
    assert finished.wait(10)
    assert "too_late" not in runtime.registries.summarizer
    assert [str(e) for e in late] == ["plugin 'hung' was left out; 'too_late' refused"]


def test_a_hung_import_is_left_out_and_named(tmp_path: Path, gate: threading.Event,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "hanging_plugin"
    package.mkdir()
    source = package / "__init__.py"
    source.write_text(f"import {GATE_MODULE}\n\n{GATE_MODULE}.GATE.wait()\n")
    info = tmp_path / "mas_hanging-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mas-hanging\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[mas]\nhanging = hanging_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    runtime = Runtime.create(load_timeout=0.5)
    assert "summarising" in runtime.registries.context_manager, "the other plugins load"
    [fault] = runtime.pm.failures
    assert (fault.entry_point, fault.stage, fault.distribution) == ("hanging", "import",
                                                                     "mas-hanging")
    assert (fault.file, fault.line) == (str(source), 3)
    assert "import of entry point 'hanging' did not finish within 0.5 s" in str(fault)
    gate.set()
