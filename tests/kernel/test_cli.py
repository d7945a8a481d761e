"""mas-ctl: compile, validate, plugins, schema, help — and litellm never imported by them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "library-standard" / "examples" / "agent" / "agent.yaml"


def test_compile_json_resolves_models_with_sources(mas_ctl: Callable[..., object]) -> None:
    result = mas_ctl("compile", "--json", EXAMPLE)
    assert result.code == 0, result.err  # type: ignore[attr-defined]
    (agent,) = json.loads(result.out)["agents"]  # type: ignore[attr-defined]
    assert agent["agent"] == "support-assistant"
    assert agent["turn_model"] == {"model": "offline/default", "source": "package.defaults.model"}
    assert agent["summarizer"] == {
        "type": "llm", "model": "offline/default", "source": "spec.models[id=summarizer]",
    }
    assert agent["context_manager"] == {"type": "summarising", "source": "spec.context_manager"}
    assert agent["window"] == {"value": 8000, "source": "spec.models[id=main].context_window", "warning": None}
    assert agent["reserve"] == {"value": 512, "source": "spec.models[id=main].max_tokens"}
    assert agent["margin"] == 800
    assert agent["hard_budget"] == 8000 - 512 - 800


def test_compile_yaml_keeps_auto_and_normalizes_bindings(
    write: Callable[[str, str], Path], mas_ctl: Callable[..., object]
) -> None:
    path = write("a.yaml", """
        apiVersion: mas/v1
        kind: Agent
        metadata: {name: a}
        spec:
          models: [{id: main, model: gpt-4o}]
          working_memory: {compaction: {strategy: summarize, model: gpt-4o-mini, keep_turns: 7}}
        """)
    result = mas_ctl("compile", path)
    assert result.code == 0, result.err  # type: ignore[attr-defined]
    document = yaml.safe_load(result.out)  # type: ignore[attr-defined]
    spec = document["spec"]
    assert spec["models"][0]["context_window"] == "auto"
    assert "working_memory" not in spec
    assert spec["context_manager"]["type"] == "summarising"
    assert spec["context_manager"]["params"]["keep_turns"] == 7
    summarizer = spec["context_manager"]["params"]["summarizer"]
    assert summarizer["type"] == "llm"
    assert summarizer["params"]["model"] == "gpt-4o-mini"
    # An unset param that does not accept `auto` is left out: `instructions: auto` would
    # load back as the literal prompt "auto" (issue 12, item 6).
    assert "instructions" not in summarizer["params"]
    assert spec["context_manager"]["params"]["trimmer"]["max_tokens"] == "auto"
    status = document["status"]
    assert status["summarizer"] == {"type": "llm", "model": "gpt-4o-mini", "source": "override"}
    assert status["window"]["source"] != "fallback"


def test_compile_unknown_model_window_warns_and_names_the_field(
    write: Callable[[str, str], Path], mas_ctl: Callable[..., object]
) -> None:
    path = write("a.yaml", """
        apiVersion: mas/v1
        kind: Agent
        metadata: {name: a}
        spec: {models: [{id: main, model: acme/unknown-model-7}]}
        """)
    result = mas_ctl("compile", "--json", path)
    (agent,) = json.loads(result.out)["agents"]  # type: ignore[attr-defined]
    assert agent["window"]["value"] == 128000
    assert agent["window"]["source"] == "fallback"
    assert "acme/unknown-model-7" in agent["window"]["warning"]
    assert "context_window" in agent["window"]["warning"]


def test_compile_with_infra_and_config(write: Callable[[str, str], Path], mas_ctl: Callable[..., object]) -> None:
    agent = write("a.yaml", """
        apiVersion: mas/v1
        kind: Agent
        metadata: {name: a}
        spec: {models: [{id: main, model: any}]}
        """)
    infra = write("infra.yaml", """
        apiVersion: mas/v1
        kind: Infra
        metadata: {name: local}
        spec: {generation: {context_window: 200000, max_tokens: 4000}}
        """)
    config = write("config.yaml", "defaults: {model: gpt-4o-mini}\n")
    result = mas_ctl("compile", "--json", agent, "--infra", infra, "--config", config)
    (resolved,) = json.loads(result.out)["agents"]  # type: ignore[attr-defined]
    assert resolved["turn_model"] == {"model": "gpt-4o-mini", "source": "defaults.model"}
    assert resolved["window"]["value"] == 200000
    assert resolved["window"]["source"] == "infra.generation.context_window"
    assert resolved["reserve"] == {"value": 4000, "source": "output_budget"}


def test_validate_ok(mas_ctl: Callable[..., object]) -> None:
    result = mas_ctl("validate", EXAMPLE)
    assert result.code == 0  # type: ignore[attr-defined]
    assert result.out.startswith("ok: 1 document(s) valid")  # type: ignore[attr-defined]


def test_plugins_lists_the_test_plugin_and_its_summarizer(mas_ctl: Callable[..., object]) -> None:
    result = mas_ctl("plugins")
    report = json.loads(result.out)  # type: ignore[attr-defined]
    by_name = {p["name"]: p for p in report["plugins"]}
    plugin = by_name["test_plugin"]
    assert plugin["distribution"] == "mas-test-plugin"
    assert plugin["version"] == "0.3.0"
    assert plugin["module"] == "mas_test_plugin.plugin"
    assert plugin["hooks"] == ["mas_register_summarizers"]
    assert plugin["types"] == {"summarizer": ["first_words"]}
    assert by_name["builtin"]["hooks"] == ["mas_resolve_model_ref"]
    assert report["failed"] == []


def test_third_party_summarizer_is_bindable_by_type_string(
    write: Callable[[str, str], Path], mas_ctl: Callable[..., object]
) -> None:
    path = write("a.yaml", """
        apiVersion: mas/v1
        kind: Agent
        metadata: {name: a}
        spec:
          context_manager:
            type: summarising
            params: {summarizer: {type: First-Words, params: {max_words: 3}}}
        """)
    result = mas_ctl("compile", "--json", path)
    assert result.code == 0, result.err  # type: ignore[attr-defined]
    (agent,) = json.loads(result.out)["agents"]  # type: ignore[attr-defined]
    assert agent["summarizer"] == {"type": "First-Words", "model": None, "source": None}


@pytest.mark.parametrize("kind", ["Agent", "MAS", "Infra", "Overlay", "Experiment", "Config", "agent"])
def test_schema_prints_json_schema(kind: str, mas_ctl: Callable[..., object]) -> None:
    result = mas_ctl("schema", kind)
    assert result.code == 0  # type: ignore[attr-defined]
    schema = json.loads(result.out)  # type: ignore[attr-defined]
    assert schema["type"] == "object" and schema["properties"]


def test_schema_documents_defaults(mas_ctl: Callable[..., object]) -> None:
    schema = json.loads(mas_ctl("schema", "Infra").out)  # type: ignore[attr-defined]
    generation = schema["$defs"]["Generation"]["properties"]
    assert generation["timeout"]["default"] == 60.0
    assert generation["num_retries"]["description"]


def test_help_lists_commands(mas_ctl: Callable[..., object]) -> None:
    result = mas_ctl("--help")
    for command in ("compile", "validate", "plugins", "schema"):
        assert command in result.out  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "args",
    [["compile", str(EXAMPLE)], ["validate", str(EXAMPLE)], ["plugins"], ["--help"], ["schema", "Agent"]],
)
def test_cli_never_imports_litellm(args: list[str]) -> None:
    """DESIGN/STYLE 14: compile, plugins and --help never import litellm."""
    code = (
        "import sys\nfrom mas.runtime.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print('LITELLM_IMPORTED' if 'litellm' in sys.modules else 'LITELLM_ABSENT', file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "LITELLM_ABSENT" in done.stderr
