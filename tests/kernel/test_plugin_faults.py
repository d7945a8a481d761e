"""One faulty plugin never takes mas-ctl down; params a plugin rejects (issue 14, items 1, 2, 4).

Each fault kind is a real distribution, built and installed by pip (``--target``) into a
folder put on ``PYTHONPATH`` of a ``mas-ctl`` subprocess: discovery goes through the
``.dist-info`` pip wrote, exactly as for a plugin in a venv, and the shared venv is never
touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mas.runtime import PluginLoadError, Runtime, hookimpl
from mas.runtime.errors import MasError, TypeClashError
from mas.runtime.events import Event
from mas.runtime.registry import KindRegistry

MAS_CTL = str(Path(sys.executable).with_name("mas-ctl"))
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_AGENT = ROOT / "library-standard/examples/agent/agent.yaml"

HEADER = "from mas.runtime import hookimpl\n\n"

FAULTS = {
    "hook_raises": (
        HEADER
        + "@hookimpl\n"
        + "def mas_register_summarizers(registry):\n"
        + "    registry.register('fine_one', lambda p, c: None)\n"
        + "    raise RuntimeError('bug in my hook')\n",
        "hook",
        6,
        "RuntimeError: bug in my hook",
    ),
    "bad_name": (
        HEADER
        + "@hookimpl\n"
        + "def mas_register_summarizers(registry):\n"
        + "    registry.register('NotSnake', lambda p, c: None)\n",
        "hook",
        5,
        "summarizer type name 'NotSnake' must be lower_snake_case",
    ),
    "params_without_schema": (
        HEADER
        + "from typing import Callable\nfrom pydantic import BaseModel\n\n"
        + "class P(BaseModel):\n    fn: Callable[[int], int] = abs\n\n"
        + "@hookimpl\n"
        + "def mas_register_summarizers(registry):\n"
        + "    registry.register('callable_params', lambda p, c: None, params=P)\n",
        "hook",
        11,
        "summarizer type 'callable_params': params model P has no JSON Schema",
    ),
    "misspelled_hook": (
        HEADER + "@hookimpl\ndef mas_register_summarisers(registry):\n    pass\n",
        "register",
        3,
        "unknown hook 'mas_register_summarisers' (did you mean 'mas_register_summarizers'?)",
    ),
    # Another plugin's name is a clash (below); the same plugin's, twice, is its own bug.
    "duplicate": (
        HEADER
        + "@hookimpl\n"
        + "def mas_register_context_managers(registry):\n"
        + "    registry.register('twice', lambda p, c: None)\n"
        + "    registry.register('twice', lambda p, c: None)\n",
        "hook",
        6,
        "context_manager type 'twice' registered twice",
    ),
    "import_fails": (
        "import os\n\nimport a_module_nobody_installed  # noqa\n",
        "import",
        3,
        "ModuleNotFoundError: No module named 'a_module_nobody_installed'",
    ),
    "syntax_error": (HEADER + "def broken(:\n", "import", 3, "SyntaxError"),
    "command_clash": (
        HEADER
        + "@hookimpl\n"
        + "def mas_register_cli_commands(registry):\n"
        + "    registry.register('plugins', lambda: None)\n",
        "command",
        5,
        "registers command 'plugins', which mas-ctl already has",
    ),
}


def install_faulty(site: Path, name: str, source: str, entry_point: str = "faulty") -> Path:
    """pip-install distribution ``mas-faulty-<name>`` 1.0, entry point ``entry_point``, into
    ``site``.

    The package is a source tree with a pyproject.toml, built and installed by pip as a
    plugin author's would be (offline: no index, no build isolation). Returns the
    installed ``plugin.py``.
    """
    project = site / f"source-of-{name}"  # a dashed name: never importable from ``site``
    package = project / "src" / f"faulty_{name}"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "plugin.py").write_text(source)
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "mas-faulty-{name}"\nversion = "1.0"\n'
        f'[project.entry-points.mas]\n{entry_point} = "faulty_{name}.plugin"\n'
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--no-compile", "--target", str(site), str(project)],
        check=True, capture_output=True, timeout=120,
        env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"),
    )
    installed = site / f"faulty_{name}" / "plugin.py"
    assert installed.read_text() == source
    return installed


def mas_ctl(site: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run mas-ctl with ``site`` on PYTHONPATH, from ``site`` so no config.yaml is read."""
    full = dict(os.environ, **env)
    full.pop("MAS_CONFIG", None)
    full["PYTHONPATH"] = str(site) + os.pathsep + full.get("PYTHONPATH", "")
    return subprocess.run(
        [MAS_CTL, *args], env=full, cwd=site, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("kind", sorted(FAULTS))
def test_a_faulty_plugin_is_reported_once_and_the_rest_keeps_working(
    tmp_path: Path, kind: str
) -> None:
    source, stage, line, message = FAULTS[kind]
    plugin_file = install_faulty(tmp_path, kind, source)

    for args in (["--help"], ["--version"], ["compile", "--json", str(EXAMPLE_AGENT)]):
        done = mas_ctl(tmp_path, *args)
        assert done.returncode == 0, (args, done.stderr)
        assert "Traceback" not in done.stderr
        assert done.stderr.count("MAS_DISABLE_PLUGINS=faulty skips it") == 1, done.stderr
        assert f"distribution mas-faulty-{kind} 1.0" in done.stderr

    listed = mas_ctl(tmp_path, "plugins")
    assert listed.returncode == 1
    report = json.loads(listed.stdout)
    assert "standard" in {p["name"] for p in report["plugins"]}
    assert "faulty" not in {p["name"] for p in report["plugins"]}
    [failure] = report["failed"]
    assert failure["entry_point"] == "faulty"
    assert failure["distribution"] == f"mas-faulty-{kind}"
    assert failure["version"] == "1.0"
    assert failure["stage"] == stage
    assert message in failure["error"]
    assert failure["file"] == str(plugin_file)
    assert failure["line"] == line
    assert f"{plugin_file}:{line}" in failure["error"]
    assert f"{plugin_file}:{line}" in listed.stderr

    skipped = mas_ctl(tmp_path, "plugins", MAS_DISABLE_PLUGINS="faulty")
    assert skipped.returncode == 0, skipped.stderr
    assert skipped.stderr == ""
    assert json.loads(skipped.stdout)["failed"] == []


def test_types_of_a_faulted_plugin_are_forgotten_and_named_when_bound(tmp_path: Path) -> None:
    install_faulty(tmp_path, "hook_raises", FAULTS["hook_raises"][0])
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        EXAMPLE_AGENT.read_text().replace("type: summarising", "type: fine_one", 1)
    )
    done = mas_ctl(tmp_path, "validate", str(agent))
    assert done.returncode == 2
    assert "unknown context_manager type 'fine_one'" in done.stderr
    assert "plugins that failed to load: faulty" in done.stderr
    assert "Traceback" not in done.stderr


def _raising(hook: str, arguments: str) -> str:
    return HEADER + f"@hookimpl\ndef {hook}({arguments}):\n    raise RuntimeError('bug in my hook')\n"


# Faults that show only once a command uses the plugin: the source, the command, the line.
LATE_FAULTS = {
    "mas_resolve_model_ref": (_raising("mas_resolve_model_ref", "ref, purpose, scope"), "run", 5),
    "mas_collect_context_parts": (
        _raising("mas_collect_context_parts", "agent_name, session_id"), "run", 5),
    "mas_observe_event": (_raising("mas_observe_event", "event"), "run", 5),
    "mas_check_manifests": (_raising("mas_check_manifests", "manifests"), "validate", 5),
    # Every provider is installed at the first model call, used or not.
    "model_provider_factory": (
        HEADER
        + "@hookimpl\n"
        + "def mas_register_model_providers(registry):\n"
        + "    def make():\n"
        + "        raise RuntimeError('bug in my hook')\n"
        + "    registry.register('my_provider', make)\n",
        "run",
        6,
    ),
    # Every ready-made metric is built to list or score the defaults, asked for or not.
    "eval_metric_factory": (
        HEADER
        + "@hookimpl\n"
        + "def mas_register_eval_metrics(registry):\n"
        + "    def make(params, ctx):\n"
        + "        raise RuntimeError('bug in my hook')\n"
        + "    registry.register('my_metric', make)\n",
        "eval",
        6,
    ),
}
SMALL_AGENT = """\
apiVersion: mas/v1
kind: Agent
metadata: {name: small}
spec:
  models: [{id: main, model: offline/default, context_window: 4000, max_tokens: 200}]
  context_manager: {type: summarising, params: {keep_turns: 2}}
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(LATE_FAULTS))
def test_a_hook_or_factory_raising_later_is_reported_once_and_the_run_goes_on(
    tmp_path: Path, kind: str
) -> None:
    source, command, line = LATE_FAULTS[kind]
    plugin_file = install_faulty(tmp_path, "behaviour", source)
    (tmp_path / "agent.yaml").write_text(SMALL_AGENT)
    (tmp_path / "turns.jsonl").write_text('"My id is X-1."\n"What is my id?"\n')
    args = {
        "run": ["agent.yaml", "--input", "turns.jsonl", "--out", "out"],
        "validate": ["agent.yaml"],
        "eval": ["--list-metrics"],
    }[command]

    done = mas_ctl(tmp_path, command, *args)
    # A run goes on to its end, and ends degraded: what ran after the fault ran without
    # the plugin. validate runs the other checks and says it is incomplete; a listing
    # reports the fault and lists the rest.
    assert done.returncode == (0 if command == "eval" else 3), done.stderr
    assert "Traceback" not in done.stderr
    degraded = (f"degraded: plugin 'faulty' left out during the run, at {plugin_file}:{line} "
                "(RuntimeError)")
    if command == "run":
        assert done.stderr.strip().splitlines()[-1] == degraded
    if command == "validate":
        assert degraded in done.stderr.splitlines()
        assert done.stderr.strip().splitlines()[-1] == (
            "incomplete: 1 document(s) passed the checks that ran (1 agent(s)); not every "
            "check ran")
        assert "ok:" not in done.stdout
        as_json = mas_ctl(tmp_path, "validate", "--json", *args)
        assert as_json.returncode == 3
        assert json.loads(as_json.stdout) == {"ok": False, "documents": 1, "agents": 1,
                                              "incomplete": [degraded.removeprefix("degraded: ")]}
    # Called for every event and turn, reported once: the plugin is left out after its fault.
    assert done.stderr.count("MAS_DISABLE_PLUGINS=faulty skips it") == 1, done.stderr
    assert (
        f'Error calling into plugin "faulty" (entry point group \'mas\', distribution '
        f"mas-faulty-behaviour 1.0) at {plugin_file}:{line}: RuntimeError: bug in my hook"
    ) in done.stderr
    if command == "run":
        transcript = json.loads((tmp_path / "out/transcript.json").read_text())
        assert [m["content"] for m in transcript["messages"] if m["role"] == "user"] == [
            "My id is X-1.", "What is my id?"]
        assert transcript["status"] == "ok", "a notice: the session may not have needed it"
        # The turn model is resolved when the session opens; the other faults come in a
        # turn, which counts them and keeps the reason in the run folder.
        counted = {} if kind == "mas_resolve_model_ref" else {"plugin_faults": 1}
        assert transcript["degradation"]["counts"] == counted
        if counted:
            assert (
                f"plugin_faults: 1 (last: plugin 'faulty' left out, at {plugin_file}:{line}: "
                "RuntimeError: bug in my hook)"
            ) in done.stderr


def _plugin(**hooks: object) -> object:
    return type("Plugin", (), {name: staticmethod(hookimpl(f)) for name, f in hooks.items()})()


def test_in_process_fault_takes_out_only_that_plugin() -> None:
    def good(registry: KindRegistry) -> None:
        registry.register("good_one", lambda p, c: None)

    def bad_cm(registry: KindRegistry) -> None:
        registry.register("half_done", lambda p, c: None)

    def bad(registry: KindRegistry) -> None:
        raise KeyError("oops")

    runtime = Runtime.create(
        entry_points=False,
        plugins=[
            ("good", _plugin(mas_register_summarizers=good)),
            ("bad", _plugin(mas_register_context_managers=bad_cm, mas_register_summarizers=bad)),
        ],
    )
    assert "good_one" in runtime.registries.summarizer
    assert "half_done" not in runtime.registries.context_manager, "earlier kinds are rolled back"
    assert not runtime.pm.has_plugin("bad")
    [fault] = runtime.pm.failures
    assert (fault.entry_point, fault.group, fault.stage) == ("bad", "in-process", "hook")
    assert fault.file == __file__


def test_a_user_error_from_a_resolver_propagates_but_an_observer_never_stops_a_run() -> None:
    def refuse(ref: str) -> None:
        raise MasError(f"no such model {ref!r}")

    def watch(event: Event) -> None:
        raise MasError("an observer's error is still a bug")

    runtime = Runtime.create(
        entry_points=False,
        plugins=[("picky", _plugin(mas_resolve_model_ref=refuse, mas_observe_event=watch))],
    )
    with pytest.raises(MasError, match="no such model 'x'"):
        runtime.call_hook("mas_resolve_model_ref", ref="x", purpose="turn", scope=None)
    assert runtime.pm.has_plugin("picky"), "a user error is not a fault"

    runtime.emit(Event("llm.call", {}))
    assert runtime.pm.failed_names() == ["picky"]
    assert runtime.pm.failures[0].stage == "call"


def test_strict_raises_the_first_fault() -> None:
    def bad(registry: KindRegistry) -> None:
        registry.register("Bad", lambda p, c: None)

    with pytest.raises(PluginLoadError, match="lower_snake_case") as info:
        Runtime.create(
            entry_points=False, strict=True, plugins=[("bad", _plugin(mas_register_summarizers=bad))]
        )
    assert isinstance(info.value.__cause__, ValueError)


def test_import_error_names_file_and_line_in_strict_mode(tmp_path: Path) -> None:
    plugin_file = install_faulty(tmp_path, "deep", "x = 1\n\n\nraise ImportError('no extra')\n")
    code = textwrap.dedent(
        """
        from mas.runtime import make_plugin_manager, PluginLoadError
        try:
            make_plugin_manager(strict=True)
        except PluginLoadError as exc:
            print(exc.file, exc.line)
        """
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == [str(plugin_file), "4"], done.stderr


def test_register_plugin_fixture_raises_the_fault_of_the_plugin_under_test(register_plugin) -> None:  # type: ignore[no-untyped-def]
    def bad(registry: KindRegistry) -> None:
        registry.register("first_words", lambda p, c: None)

    with pytest.raises(TypeClashError, match="'test_plugin:first_words' or 'mine:first_words'"):
        register_plugin(_plugin(mas_register_summarizers=bad), "mine")


PICKY = '''
from pydantic import BaseModel, ConfigDict
from mas.runtime import hookimpl


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    low: int = 1
    high: int = 2


class Picky:
    def __init__(self, params, ctx):
        if params.low >= params.high:
            raise ValueError(f"low ({params.low}) must be below high ({params.high})")
        if params.low < 0:
            raise TypeError("low must not be negative")


@hookimpl
def mas_register_summarizers(registry):
    registry.register("picky", Picky, params=Params)
'''


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("{low: 5, high: 3}", "picky: low (5) must be below high (3)"),
        ("{low: -3, high: 3}", "picky: low must not be negative"),
    ],
)
def test_params_rejected_by_the_factory_name_the_field_and_exit_2(
    tmp_path: Path, params: str, message: str
) -> None:
    install_faulty(tmp_path, "picky", PICKY)
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        EXAMPLE_AGENT.read_text().replace(
            "        type: llm\n        params:\n          model: summarizer   # a spec.models[].id\n",
            f"        type: picky\n        params: {params}\n",
        )
    )
    done = mas_ctl(tmp_path, "validate", str(agent))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"{agent}: spec.context_manager.params.summarizer.params: {message}"
    )


def test_verbose_adds_the_plugin_traceback(tmp_path: Path) -> None:
    plugin_file = install_faulty(tmp_path, "hook_raises", FAULTS["hook_raises"][0])
    done = mas_ctl(tmp_path, "-v", "--help")
    assert done.returncode == 0
    assert "Traceback (most recent call last)" in done.stderr
    assert f'File "{plugin_file}", line 6' in done.stderr


@pytest.mark.slow
def test_a_lab_campaign_whose_plugin_faulted_midway_ends_degraded(tmp_path: Path) -> None:
    source = LATE_FAULTS["mas_collect_context_parts"][0]
    plugin_file = install_faulty(tmp_path, "behaviour", source)
    experiment = ROOT / "library-lab/examples/context-ablation/experiment.yaml"
    done = mas_ctl(tmp_path, "lab", "run", str(experiment), "--limit", "2", "--flavour",
                   "summarising", "--runs-dir", str(tmp_path / "runs"))
    assert "Traceback" not in done.stderr
    assert done.returncode == 3, done.stderr
    assert f"degraded: plugin 'faulty' left out during the run, at {plugin_file}:5" in done.stderr
    assert "(plugin_faults); sessions after it ran without it" in done.stderr
    accepted = mas_ctl(tmp_path, "lab", "report", str(next((tmp_path / "runs").glob("*/*"))),
                       "--allow-degraded")
    assert accepted.returncode == 0, accepted.stderr


@pytest.mark.slow
def test_scoring_with_a_metric_plugin_that_faulted_ends_degraded(tmp_path: Path) -> None:
    plugin_file = install_faulty(tmp_path, "behaviour", LATE_FAULTS["eval_metric_factory"][0])
    (tmp_path / "agent.yaml").write_text(SMALL_AGENT)
    (tmp_path / "turns.jsonl").write_text('"My id is X-1."\n"What is my id?"\n')
    ran = mas_ctl(tmp_path, "run", "agent.yaml", "--input", "turns.jsonl", "--out", "out",
                  MAS_DISABLE_PLUGINS="faulty")
    assert ran.returncode == 0, ran.stderr
    scored = mas_ctl(tmp_path, "eval", "out")
    assert "Traceback" not in scored.stderr
    assert scored.returncode == 3, scored.stderr
    assert scored.stderr.strip().splitlines()[-1] == (
        f"degraded: plugin 'faulty' left out during the run, at {plugin_file}:6 (RuntimeError)")
    assert (tmp_path / "out/metrics.json").is_file(), "the other metrics were scored"


def _registering(*pairs: tuple[str, str]) -> str:
    # A plugin registering each (hook, name) pair with a factory that builds nothing.
    hooks: dict[str, list[str]] = {}
    for hook, name in pairs:
        hooks.setdefault(hook, []).append(name)
    return HEADER + "".join(
        f"@hookimpl\ndef {hook}(registry):\n"
        + "".join(f"    registry.register({name!r}, lambda p, c: None)\n" for name in names)
        + "\n"
        for hook, names in hooks.items()
    )


CLASHING = {
    # Against mas-library-standard: before issue 25 item 9 this left the standard out whole.
    "clash_a": _registering(("mas_register_summarizers", "drop"),
                            ("mas_register_summarizers", "only_a")),
    # Two third-party plugins: before, the one discovered later lost all of its types.
    "clash_b": _registering(("mas_register_context_managers", "shared_cm"),
                            ("mas_register_summarizers", "only_b")),
    "clash_c": _registering(("mas_register_context_managers", "shared_cm"),
                            ("mas_register_summarizers", "only_c")),
}


def test_a_name_clash_refuses_only_that_name_and_a_manifest_chooses(tmp_path: Path) -> None:
    for name, source in CLASHING.items():
        install_faulty(tmp_path, name, source, entry_point=name)

    listed = mas_ctl(tmp_path, "plugins")
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
    report = json.loads(listed.stdout)
    assert report["failed"] == [], "a clash is no plugin's fault"
    types = {p["name"]: p["types"] for p in report["plugins"]}
    assert "summarising" in types["standard"]["context_manager"]
    assert "drop" not in types["standard"]["summarizer"]
    assert types["clash_a"] == {"summarizer": ["only_a"]}
    assert types["clash_b"] == {"summarizer": ["only_b"]}
    assert types["clash_c"] == {"summarizer": ["only_c"]}
    clashes = {(c["kind"], c["name"]): c for c in report["clashes"]}
    assert sorted(clashes) == [("context_manager", "shared_cm"), ("summarizer", "drop")]
    assert sorted(clashes["summarizer", "drop"]["distributions"]) == [
        "mas-faulty-clash_a", "mas-library-standard"]
    assert sorted(clashes["context_manager", "shared_cm"]["choose"]) == [
        "clash_b:shared_cm", "clash_c:shared_cm"]
    # One line per clash, naming both distributions, the kind and the type.
    warnings = [line for line in listed.stderr.splitlines() if "is registered by both" in line]
    assert len(warnings) == 2, listed.stderr
    [drop] = [line for line in warnings if "summarizer type 'drop'" in line]
    assert "(mas-library-standard " in drop and "(mas-faulty-clash_a 1.0)" in drop
    [shared] = [line for line in warnings if "context_manager type 'shared_cm'" in line]
    assert "(mas-faulty-clash_b 1.0)" in shared and "(mas-faulty-clash_c 1.0)" in shared

    agent = tmp_path / "agent.yaml"
    drop_agent = EXAMPLE_AGENT.read_text().replace(
        "        type: llm\n        params:\n          model: summarizer   # a spec.models[].id\n",
        "        type: {choice}\n",
    )
    agent.write_text(drop_agent.format(choice="drop"))
    refused = mas_ctl(tmp_path, "validate", str(agent))
    assert refused.returncode == 2
    assert "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines()[-1].startswith(
        f"{agent}: spec.context_manager.params.summarizer.type: summarizer type 'drop' is "
        "registered by both")
    assert "write 'standard:drop' or 'clash_a:drop'" in refused.stderr

    agent.write_text(drop_agent.format(choice="standard:drop"))
    chosen = mas_ctl(tmp_path, "validate", str(agent))
    assert chosen.returncode == 0, chosen.stderr
    compiled = mas_ctl(tmp_path, "compile", "--json", str(agent))
    assert compiled.returncode == 0, compiled.stderr

    described = mas_ctl(tmp_path, "plugins", "shared_cm")
    assert described.returncode == 0, described.stderr
    assert sorted(t["plugin"] for t in json.loads(described.stdout)) == ["clash_b", "clash_c"]


FACTORY_FAULTS = {
    "RuntimeError": "raise RuntimeError('bug in my factory')",
    "SystemExit": "raise SystemExit(7)",
}


@pytest.mark.parametrize("raised", sorted(FACTORY_FAULTS))
def test_a_factory_raising_a_bug_at_bind_faults_its_plugin_without_a_traceback(
    tmp_path: Path, raised: str
) -> None:
    source = (
        HEADER
        + "def make(params, ctx):\n"
        + f"    {FACTORY_FAULTS[raised]}\n"
        + "\n"
        + "@hookimpl\n"
        + "def mas_register_summarizers(registry):\n"
        + "    registry.register('boom', make)\n"
    )
    plugin_file = install_faulty(tmp_path, "factory", source)
    agent = tmp_path / "agent.yaml"
    agent.write_text(EXAMPLE_AGENT.read_text().replace(
        "        type: llm\n        params:\n          model: summarizer   # a spec.models[].id\n",
        "        type: boom\n",
    ))
    done = mas_ctl(tmp_path, "validate", str(agent))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("MAS_DISABLE_PLUGINS=faulty skips it") == 1, done.stderr
    assert (
        f'Error building a type of plugin "faulty" (entry point group \'mas\', distribution '
        f"mas-faulty-factory 1.0) at {plugin_file}:4: {raised}"
    ) in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(
        f"{agent}: spec.context_manager.params.summarizer.type: unknown summarizer type "
        "'boom'; plugins that failed to load: faulty")
