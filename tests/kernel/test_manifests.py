"""Manifest models, loading, overlays and binding normalization (spec 000, DESIGN §3)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mas.runtime.errors import ManifestError
from mas.runtime.spec.binding import Binding
from mas.runtime.spec.loader import load_manifest_set
from mas.runtime.spec.overlay import deep_merge

AGENT_HEAD = """
apiVersion: mas/v1
kind: Agent
metadata: {name: a}
spec:
"""


def _agent(write: Callable[[str, str], Path], body: str, name: str = "agent.yaml") -> Path:
    indented = "\n".join("  " + line for line in body.strip("\n").splitlines())
    return write(name, AGENT_HEAD + indented + "\n")


BINDING_FORMS = {
    "full": "context_manager: {type: summarising, params: {keep_turns: 10, summarizer: {type: llm, params: {model: gpt-4o-mini}}}}",
    "shorthand": "context_manager: {type: summarising, params: {keep_turns: 10, summarizer: {type: llm, model: gpt-4o-mini}}}",
    "sugar": "working_memory: {compaction: {strategy: summarize, model: gpt-4o-mini, keep_turns: 10}}",
}


@pytest.mark.parametrize("form", sorted(BINDING_FORMS))
def test_every_binding_form_normalizes_to_the_same_binding(
    form: str, write: Callable[[str, str], Path]
) -> None:
    """DESIGN §3: all binding forms resolve to the same normalized binding."""
    loaded = load_manifest_set([_agent(write, BINDING_FORMS[form])]).agents[0]
    binding, _ = loaded.agent.spec.effective_context_manager()
    summarizer = Binding.model_validate(binding.params["summarizer"])
    assert binding.type == "summarising"
    assert binding.params["keep_turns"] == 10
    assert summarizer == Binding(type="llm", params={"model": "gpt-4o-mini"})


def test_bare_summarizer_string_is_a_binding() -> None:
    assert Binding.model_validate("drop") == Binding(type="drop", params={})


def test_context_manager_wins_over_compaction_sugar(write: Callable[[str, str], Path]) -> None:
    """Spec 000: if both context_manager and working_memory.compaction are set, context_manager wins."""
    path = _agent(write, "context_manager: {type: sliding_window}\nworking_memory: {compaction: {strategy: drop}}")
    binding, source = load_manifest_set([path]).agents[0].agent.spec.effective_context_manager()
    assert (binding.type, source) == ("sliding_window", "spec.context_manager")


def test_compaction_drop_strategy_binds_drop_summarizer(write: Callable[[str, str], Path]) -> None:
    path = _agent(write, "working_memory: {compaction: {strategy: drop}}")
    binding, source = load_manifest_set([path]).agents[0].agent.spec.effective_context_manager()
    assert source == "spec.working_memory.compaction"
    assert binding.params == {"summarizer": {"type": "drop", "params": {}}}


def test_default_context_manager_is_summarising(write: Callable[[str, str], Path]) -> None:
    binding, source = load_manifest_set([_agent(write, "instructions: hi")]).agents[0].agent.spec.effective_context_manager()
    assert (binding.type, source) == ("summarising", "default")


def test_overlay_patches_the_target_spec(write: Callable[[str, str], Path]) -> None:
    """Spec 000 "Overlay (per experiment / flavour)"."""
    agent = _agent(write, "models: [{id: main, model: gpt-4o}]\ncontext_manager: {type: summarising, params: {keep_turns: 3}}")
    overlay = write("cheap.yaml", """
        apiVersion: mas/v1
        kind: Overlay
        metadata: {name: cheap-summarizer}
        spec:
          target: {kind: Agent}
          patch:
            context_manager:
              type: summarising
              params:
                summarizer: {type: llm, params: {model: gpt-4o-mini}}
        """)
    spec = load_manifest_set([agent], overlays=[overlay]).agents[0].agent.spec
    assert spec.context_manager is not None
    assert spec.context_manager.params == {
        "keep_turns": 3,
        "summarizer": {"type": "llm", "params": {"model": "gpt-4o-mini"}},
    }


def test_overlay_in_the_same_multi_document_file(write: Callable[[str, str], Path]) -> None:
    path = write("both.yaml", """
        apiVersion: mas/v1
        kind: Agent
        metadata: {name: a}
        spec: {models: [{id: main, model: gpt-4o}]}
        ---
        apiVersion: mas/v1
        kind: Overlay
        metadata: {name: o}
        spec: {target: {kind: Agent, name: a}, patch: {models: [{id: main, max_tokens: 99}]}}
        """)
    row = load_manifest_set([path]).agents[0].agent.spec.models[0]
    assert (row.model, row.max_tokens) == ("gpt-4o", 99)


def test_deep_merge_semantics() -> None:
    target = {"a": {"b": 1, "c": 2}, "rows": [{"id": "x", "v": 1}], "plain": [1, 2], "gone": 1}
    patch = {"a": {"c": 3}, "rows": [{"id": "x", "w": 2}, {"id": "y"}], "plain": [3], "gone": None}
    assert deep_merge(target, patch) == {
        "a": {"b": 1, "c": 3},
        "rows": [{"id": "x", "v": 1, "w": 2}, {"id": "y"}],
        "plain": [3],
    }
    assert target["a"] == {"b": 1, "c": 2}, "the target is not modified"


def test_mas_agents_are_loaded_relative_to_the_mas_file(write: Callable[[str, str], Path]) -> None:
    _agent(write, "models: [{id: main, model: any}]", name="agents/worker.yaml")
    mas = write("mas.yaml", """
        apiVersion: mas/v1
        kind: MAS
        metadata: {name: team}
        spec:
          models: [{id: main, model: gpt-4o}]
          agents: [{name: worker, manifest: agents/worker.yaml}]
        """)
    loaded = load_manifest_set([mas])
    assert [a.agent.metadata.name for a in loaded.agents] == ["a"]
    assert loaded.agents[0].mas is not None and loaded.agents[0].mas.metadata.name == "team"


def test_experiment_file_loads_its_applications(write: Callable[[str, str], Path]) -> None:
    _agent(write, "models: [{id: main, model: any}]")
    path = write("experiment.yaml", """
        experiment:
          name: topology-ablation
          models: {main: gpt-4o, judge: gpt-4o-mini}
          applications: [{manifest: ./agent.yaml}]
          evaluation: {method: llm_judge}
          application:
            post:
              - {type: eval_mce, depends_on: [extract_trajectories]}
              - {type: eval_mce, name: eval_mce_strict, config: {model: gpt-4o}}
        """)
    loaded = load_manifest_set([path])
    assert loaded.experiment is not None
    body = loaded.experiment.experiment
    assert body.slot("main") == "gpt-4o" and body.slot("judge") == "gpt-4o-mini"
    assert [s.step_name for s in body.application.post] == ["eval_mce", "eval_mce_strict"]
    assert len(loaded.agents) == 1


def test_scalar_experiment_model_is_models_main(write: Callable[[str, str], Path]) -> None:
    path = write("e.yaml", "experiment: {name: x, model: gpt-4o}\n")
    body = load_manifest_set([path]).experiment.experiment  # type: ignore[union-attr]
    assert body.slot("main") == "gpt-4o"


def test_local_config_defaults(write: Callable[[str, str], Path]) -> None:
    config = write("config.yaml", "defaults: {model: gpt-4o-mini}\n")
    loaded = load_manifest_set([_agent(write, "instructions: x")], config=config)
    assert loaded.config.defaults.model == "gpt-4o-mini"


def test_all_problems_of_all_files_are_reported_together(write: Callable[[str, str], Path]) -> None:
    one = _agent(write, "models: [{id: main, max_tokens: -1}]", name="one.yaml")
    two = _agent(write, "budget: {max_llm_calls: 0}", name="two.yaml")
    with pytest.raises(ManifestError) as info:
        load_manifest_set([one, two])
    lines = str(info.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{one}: spec.models[0].max_tokens: ")
    assert lines[1].startswith(f"{two}: spec.budget.max_llm_calls: ")
