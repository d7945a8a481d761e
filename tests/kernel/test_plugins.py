"""Plugin discovery, registries and load failures (DESIGN §3, STYLE 4–10)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pluggy
import pytest
from pydantic import BaseModel, ConfigDict

from mas.runtime import (
    DuplicateTypeError,
    PluginLoadError,
    Runtime,
    TypeClashError,
    UnknownTypeError,
    hookimpl,
    make_plugin_manager,
)
from mas.runtime.events import Event
from mas.runtime.registry import KindRegistry, fold_type_name

MAS_CTL = str(Path(sys.executable).with_name("mas-ctl"))


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int = 1


def _summarizer_plugin(name: str) -> SimpleNamespace:
    def mas_register_summarizers(registry: KindRegistry) -> None:
        registry.register(name, lambda params, ctx: ("built", params), params=_Params)

    return SimpleNamespace(mas_register_summarizers=hookimpl(mas_register_summarizers))


def test_entry_point_plugins_are_loaded_with_their_distribution() -> None:
    pm = make_plugin_manager()
    assert pm.info("test_plugin").distribution == "mas-test-plugin"
    assert pm.info("test_plugin").version == "0.3.0"
    assert pm.info("builtin").distribution == "mas-runtime"
    assert pm.failures == []


def test_each_call_builds_a_fresh_manager() -> None:
    assert make_plugin_manager() is not make_plugin_manager()


def test_third_party_summarizer_is_registered_with_its_provider() -> None:
    entry = Runtime.create().registries.summarizer.get("first_words")
    assert entry.provider.name == "test_plugin"
    assert entry.provider.distribution == "mas-test-plugin"
    assert entry.params.model_fields["max_words"].default == 8


@pytest.mark.parametrize("written", ["first_words", "First-Words", " FIRST_WORDS ", "first-words"])
def test_type_names_fold_case_and_dashes(written: str) -> None:
    assert Runtime.create().registries.summarizer.get(written).name == "first_words"
    assert fold_type_name(written) == "first_words"


def test_unknown_name_lists_available_and_closest_match() -> None:
    with pytest.raises(UnknownTypeError) as info:
        Runtime.create().registries.summarizer.get("first_word")
    message = str(info.value)
    assert "unknown summarizer type 'first_word'" in message
    assert "did you mean 'first_words'?" in message
    assert "available:" in message and "first_words" in message


def test_in_process_registration_via_fixture(register_plugin) -> None:  # type: ignore[no-untyped-def]
    runtime = register_plugin(_summarizer_plugin("tiny"), "tiny-plugin")
    entry = runtime.registries.summarizer.get("tiny")
    assert entry.provider.name == "tiny-plugin"
    assert entry.factory(_Params(size=3), None) == ("built", _Params(size=3))


def test_duplicate_name_names_both_providers() -> None:
    with pytest.raises(PluginLoadError) as info:
        Runtime.create(
            entry_points=False,
            strict=True,
            plugins=[("one", _summarizer_plugin("same")), ("two", _summarizer_plugin("same"))],
        )
    assert isinstance(info.value.__cause__, DuplicateTypeError)
    assert 'plugin "one"' in str(info.value) and 'plugin "two"' in str(info.value)


def test_a_name_two_plugins_register_is_refused_and_each_stays_choosable() -> None:
    runtime = Runtime.create(plugins=[("mine", _summarizer_plugin("first_words"))])
    assert runtime.pm.failures == [], "a clash is no plugin's fault"
    with pytest.raises(TypeClashError, match="'test_plugin:first_words' or 'mine:first_words'"):
        runtime.registries.summarizer.get("first_words")
    assert runtime.registries.summarizer.get("mine:first_words").provider.name == "mine"
    assert runtime.registries.summarizer.get("Test-Plugin:First-Words").provider.name == (
        "test_plugin")


def test_type_names_must_be_lower_snake_case() -> None:
    with pytest.raises(ValueError, match="lower_snake_case"):
        KindRegistry("summarizer").register("Bad-Name", lambda p, c: None)


def test_disable_env_skips_a_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAS_DISABLE_PLUGINS", "test_plugin, other")
    runtime = Runtime.create()
    assert not runtime.pm.has_plugin("test_plugin")
    assert "first_words" not in runtime.registries.summarizer


def test_misspelled_hook_fails_at_start_up() -> None:
    plugin = SimpleNamespace(mas_register_summarisers=hookimpl(lambda registry: None))
    with pytest.raises(PluginLoadError, match="mas_register_summarisers") as info:
        make_plugin_manager(entry_points=False, strict=True, plugins=[("typo", plugin)])
    assert isinstance(info.value.__cause__, pluggy.PluginValidationError)
    pm = make_plugin_manager(entry_points=False, plugins=[("typo", plugin)])
    assert pm.failed_names() == ["typo"] and not pm.has_plugin("typo")


def test_observer_failure_does_not_stop_others() -> None:
    seen: list[str] = []

    def broken(event: Event) -> None:
        raise RuntimeError("observer bug")

    def good(event: Event) -> None:
        seen.append(event.name)

    runtime = Runtime.create(
        entry_points=False,
        plugins=[
            ("broken", SimpleNamespace(mas_observe_event=hookimpl(broken))),
            ("good", SimpleNamespace(mas_observe_event=hookimpl(good))),
        ],
    )
    runtime.emit(Event("llm.call", {"n": 1}))
    # The broken observer is left out, and the others hear of it.
    assert seen == ["llm.call", "plugin.fault"]
    assert runtime.pm.failed_names() == ["broken"]
    runtime.emit(Event("llm.call", {"n": 2}))
    assert seen == ["llm.call", "plugin.fault", "llm.call"]


def test_listener_removal() -> None:
    runtime = Runtime.create(entry_points=False)
    got: list[Event] = []
    remove = runtime.add_listener(got.append)
    runtime.emit(Event("a"))
    remove()
    runtime.emit(Event("b"))
    assert [e.name for e in got] == ["a"]


def _broken_distribution(tmp_path: Path, failure: str) -> dict[str, str]:
    """A real installed-looking distribution whose entry point fails, on PYTHONPATH."""
    (tmp_path / "broken_pkg").mkdir()
    (tmp_path / "broken_pkg" / "__init__.py").write_text(failure)
    info = tmp_path / "mas_broken-9.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mas-broken\nVersion: 9.1\n")
    (info / "entry_points.txt").write_text("[mas]\nbroken = broken_pkg\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_plugin_import_failure_is_reported_and_others_still_load(tmp_path: Path) -> None:
    env = _broken_distribution(tmp_path, "raise ImportError('missing optional dep')\n")
    done = subprocess.run([MAS_CTL, "plugins"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert [f["entry_point"] for f in report["failed"]] == ["broken"]
    failure = report["failed"][0]
    assert failure["distribution"] == "mas-broken" and failure["version"] == "9.1"
    assert 'Error importing plugin "broken"' in failure["error"]
    assert "missing optional dep" in failure["error"]
    assert "test_plugin" in {p["name"] for p in report["plugins"]}
    assert 'Error importing plugin "broken"' in done.stderr


def test_strict_loading_raises_plugin_load_error(tmp_path: Path) -> None:
    env = _broken_distribution(tmp_path, "raise RuntimeError('boom')\n")
    code = textwrap.dedent(
        """
        from mas.runtime import make_plugin_manager, PluginLoadError
        try:
            make_plugin_manager(strict=True)
        except PluginLoadError as exc:
            print(type(exc.__cause__).__name__, exc.entry_point, exc.distribution)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["RuntimeError", "broken", "mas-broken"]


def test_unknown_type_mentions_plugins_that_failed(tmp_path: Path) -> None:
    env = _broken_distribution(tmp_path, "raise ImportError('nope')\n")
    code = (
        "from mas.runtime import Runtime\n"
        "try:\n    Runtime.create().registries.summarizer.get('broken_thing')\n"
        "except LookupError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert "plugins that failed to load: broken" in done.stdout


def test_trace_env_writes_hook_calls(tmp_path: Path) -> None:
    env = dict(os.environ, MAS_TRACE_PLUGINS="1")
    done = subprocess.run([MAS_CTL, "plugins"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert "mas_register_summarizers" in done.stderr


def test_plugin_load_error_message_names_everything() -> None:
    cause = ModuleNotFoundError("No module named 'x'")
    error = PluginLoadError("ep", "mas", "dist-a", "1.2", cause)
    assert str(error) == (
        "Error importing plugin \"ep\" (entry point group 'mas', distribution dist-a 1.2): "
        "ModuleNotFoundError: No module named 'x'"
    )


def test_the_registries_remember_each_type_handed_out_and_who_provided_it() -> None:
    from mas.runtime.registry import PluginInfo, Registries

    registries = Registries()
    summarizers = registries.summarizer
    summarizers.current = PluginInfo("third", "third-party-summaries", "1.2.0")
    summarizers.register("short", lambda p, c: None, aliases=["brief"])
    summarizers.register("long", lambda p, c: None)
    assert registries.used() == []
    summarizers.get("Brief")  # an alias, folded: the canonical entry is what was used
    (entry,) = registries.used()
    assert (entry.name, entry.provider.distribution, entry.provider.version) == (
        "short", "third-party-summaries", "1.2.0")
