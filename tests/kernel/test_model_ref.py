"""Model-reference resolution: the turn, summarizer and judge chains of spec 000."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas.runtime import hookimpl
from mas.runtime.errors import MasError
from mas.runtime.spec.model_ref import (
    JUDGE_STEPS,
    JudgeScope,
    ModelChoice,
    ModelResolutionError,
    ModelRow,
    ModelScope,
    is_inherit,
    map_model,
    package_default_model,
    resolve_builtin,
    resolve_model,
)


def scope(**fields: Any) -> ModelScope:
    agent = fields.pop("agent", ())
    mas = fields.pop("mas", ())
    return ModelScope.build(agent, mas, **fields)


# -- basics ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, "", "  ", "any", "ANY", " Any "])
def test_inherit_values(value: str | None) -> None:
    assert is_inherit(value)


@pytest.mark.parametrize("value", ["gpt-4o", "anything", "main"])
def test_concrete_values_do_not_inherit(value: str) -> None:
    assert not is_inherit(value)


def test_package_default_is_the_offline_model() -> None:
    assert package_default_model() == "offline/default"
    assert ModelScope().package_default == "offline/default"
    assert JudgeScope().package_default == "offline/default"


def test_build_accepts_rows_or_id_maps() -> None:
    rows = [ModelRow("main", "gpt-4o"), ModelRow("summarizer", "gpt-4o-mini")]
    by_list = ModelScope.build(rows)
    by_map = ModelScope.build({row.id: row for row in rows})
    assert by_list == by_map
    assert set(by_list.agent_models) == {"main", "summarizer"}


def test_map_model_is_one_exact_hop() -> None:
    mappings = {"gpt-4o": "azure/gpt-4o-prod", "azure/gpt-4o-prod": "loop", "x": "any"}
    assert map_model("gpt-4o", mappings) == "azure/gpt-4o-prod"
    assert map_model("gpt-4o-mini", mappings) == "gpt-4o-mini"
    assert map_model("x", mappings) == "x"  # mapping to `any` maps nothing
    assert map_model("gpt-4o", None) == "gpt-4o"


def test_row_setting_prefers_agent_then_mas() -> None:
    s = scope(
        agent=[ModelRow("main", "any", max_tokens=500)],
        mas=[ModelRow("main", "gpt-4o", context_window=32_000, max_tokens=900)],
    )
    assert s.row_setting("main", "max_tokens") == 500
    assert s.row_setting("main", "context_window") == 32_000
    assert s.row_setting("summarizer", "context_window") is None
    assert s.row_setting(None, "context_window") is None


# -- turn chain ---------------------------------------------------------------------------

FULL_TURN = dict(
    agent=[ModelRow("main", "agent-model")],
    mas=[ModelRow("main", "mas-model")],
    experiment_models={"main": "exp-main-model"},
    experiment_model="exp-scalar-model",
    config_default="config-model",
    package_default="package-model",
)


@pytest.mark.parametrize(
    ("blank", "model", "source"),
    [
        ((), "agent-model", "spec.models[id=main]"),
        (("agent",), "mas-model", "mas.spec.models[id=main]"),
        (("agent", "mas"), "exp-main-model", "experiment.models.main"),
        (("agent", "mas", "experiment_models"), "exp-scalar-model", "experiment.model"),
        (
            ("agent", "mas", "experiment_models", "experiment_model"),
            "config-model",
            "defaults.model",
        ),
        (
            ("agent", "mas", "experiment_models", "experiment_model", "config_default"),
            "package-model",
            "package.defaults.model",
        ),
    ],
)
def test_turn_chain_each_step_wins_when_earlier_ones_say_any(
    blank: tuple[str, ...], model: str, source: str
) -> None:
    fields: dict[str, Any] = dict(FULL_TURN)
    for name in blank:
        if name in ("agent", "mas"):
            fields[name] = [ModelRow("main", "any")]
        elif name == "experiment_models":
            fields[name] = {"main": "any"}
        else:
            fields[name] = "any"
    choice = resolve_builtin("", "turn", scope(**fields))
    assert choice == ModelChoice(model, source, "main")


@pytest.mark.parametrize("ref", ["", "any", None])
def test_turn_inherit_ref_resolves_main(ref: str | None) -> None:
    choice = resolve_builtin(ref, "turn", scope(agent=[ModelRow("main", "gpt-4o")]))
    assert (choice.model, choice.source) == ("gpt-4o", "spec.models[id=main]")


def test_turn_row_without_model_field_inherits() -> None:
    s = scope(agent=[ModelRow("main", None)], mas=[ModelRow("main", "gpt-4o")])
    assert resolve_builtin("", "turn", s).source == "mas.spec.models[id=main]"


def test_turn_slot_map_beats_scalar_shorthand() -> None:
    s = scope(experiment_models={"main": "a"}, experiment_model="b")
    assert resolve_builtin("", "turn", s).model == "a"


def test_turn_other_slot_id_and_raw_override() -> None:
    s = scope(agent=[ModelRow("main", "gpt-4o"), ModelRow("planner", "o3")])
    planner = resolve_builtin("planner", "turn", s)
    assert planner == ModelChoice("o3", "spec.models[id=planner]", "planner")
    raw = resolve_builtin("claude-haiku-4-5", "turn", s)
    assert raw == ModelChoice("claude-haiku-4-5", "override")


def test_turn_nothing_concrete_raises_naming_every_field() -> None:
    s = scope(agent=[ModelRow("main", "any")], package_default=None)
    with pytest.raises(ModelResolutionError) as info:
        resolve_builtin("", "turn", s)
    message = str(info.value)
    assert isinstance(info.value, MasError)
    for label in ("spec.models[id=main]", "mas.spec.models[id=main]", "experiment.models.main",
                  "experiment.model", "config.yaml defaults.model", "package defaults.yaml"):
        assert label in message


# -- summarizer chain -----------------------------------------------------------------------

TURN_ONLY = [ModelRow("main", "gpt-4o")]


@pytest.mark.parametrize("ref", ["", "any", "ANY", None])
def test_summarizer_default_slot_chain(ref: str | None) -> None:
    agent_row = scope(agent=[*TURN_ONLY, ModelRow("summarizer", "s-agent")],
                      mas=[ModelRow("summarizer", "s-mas")],
                      experiment_models={"summarizer": "s-exp"})
    assert resolve_builtin(ref, "summarizer", agent_row) == ModelChoice(
        "s-agent", "spec.models[id=summarizer]", "summarizer"
    )
    mas_row = replace(agent_row, agent_models={"main": TURN_ONLY[0]})
    assert resolve_builtin(ref, "summarizer", mas_row).source == "mas.spec.models[id=summarizer]"
    exp = replace(mas_row, mas_models={})
    assert resolve_builtin(ref, "summarizer", exp) == ModelChoice(
        "s-exp", "experiment.models.summarizer", "summarizer"
    )
    turn = replace(exp, experiment_models={"summarizer": "any"})
    assert resolve_builtin(ref, "summarizer", turn) == ModelChoice("gpt-4o", "agent", "main")


def test_summarizer_default_skips_any_and_missing_model_rows() -> None:
    s = scope(agent=[*TURN_ONLY, ModelRow("summarizer", None)],
              mas=[ModelRow("summarizer", "any")],
              experiment_models={"summarizer": "gpt-4o-mini"})
    assert resolve_builtin("", "summarizer", s).source == "experiment.models.summarizer"


def test_summarizer_uses_live_engine_model_when_known() -> None:
    s = scope(agent=TURN_ONLY, engine_model="rerouted-model")
    assert resolve_builtin("", "summarizer", s) == ModelChoice("rerouted-model", "agent", "main")


def test_summarizer_id_picks_that_row() -> None:
    s = scope(agent=[*TURN_ONLY, ModelRow("cheap", "gpt-4o-mini")])
    assert resolve_builtin("cheap", "summarizer", s) == ModelChoice(
        "gpt-4o-mini", "spec.models[id=cheap]", "cheap"
    )


def test_summarizer_id_with_any_row_inherits_mas_then_experiment() -> None:
    s = scope(agent=[*TURN_ONLY, ModelRow("cheap", "any")], mas=[ModelRow("cheap", "m")],
              experiment_models={"cheap": "e"})
    assert resolve_builtin("cheap", "summarizer", s).source == "mas.spec.models[id=cheap]"
    s = replace(s, mas_models={"cheap": ModelRow("cheap", "any")})
    assert resolve_builtin("cheap", "summarizer", s) == ModelChoice(
        "e", "experiment.models.cheap", "cheap"
    )
    s = replace(s, experiment_models={})
    assert resolve_builtin("cheap", "summarizer", s) == ModelChoice("gpt-4o", "agent", "main")


def test_summarizer_id_of_row_without_model_falls_back_to_engine() -> None:
    s = scope(agent=[*TURN_ONLY, ModelRow("summarizer", None, max_tokens=300)],
              experiment_models={"summarizer": "would-not-be-used"})
    choice = resolve_builtin("summarizer", "summarizer", s)
    assert choice == ModelChoice("gpt-4o", "agent", "main")  # never the bare id "summarizer"


def test_summarizer_engine_string_is_source_agent() -> None:
    s = scope(agent=TURN_ONLY)
    assert resolve_builtin(" gpt-4o ", "summarizer", s) == ModelChoice("gpt-4o", "agent", "main")


def test_summarizer_other_string_is_an_override_not_an_error() -> None:
    s = scope(agent=TURN_ONLY)
    assert resolve_builtin("openai/gpt-4o-mini", "summarizer", s) == ModelChoice(
        "openai/gpt-4o-mini", "override"
    )


def test_summarizer_override_needs_no_turn_model() -> None:
    s = scope(package_default=None)
    assert resolve_builtin("gpt-4o-mini", "summarizer", s).source == "override"
    with pytest.raises(ModelResolutionError, match="no concrete turn model"):
        resolve_builtin("", "summarizer", s)


# -- judge chain ----------------------------------------------------------------------------

JUDGE_FULL = JudgeScope(
    step_model="m1",
    step_judge_model="m2",
    evaluation_model="m3",
    evaluation_config_model="m4",
    template_vars={"eval_model": "m5", "judge_model": "m6"},
    experiment_models={"judge": "m7", "main": "m8"},
    experiment_model="m9",
    application_models=["m10", "any", "m10"],
    metadata_model_name="m11",
    config_default="m12",
    package_default="m13",
)

# How to blank each step of JUDGE_STEPS, in order.
_BLANKS: list[dict[str, Any]] = [
    {"step_model": "any"},
    {"step_judge_model": None},
    {"evaluation_model": ""},
    {"evaluation_config_model": "any"},
    {"template_vars": {"eval_model": "any", "judge_model": "m6"}},
    {"template_vars": {}},
    {"experiment_models": {"judge": "any", "main": "m8"}},
    {"experiment_models": {"judge": "any", "main": "any"}},
    {"experiment_model": "any"},
    {"application_models": ["m10", "m10b"]},
    {"metadata_model_name": None},
    {"config_default": "any"},
]


def test_judge_steps_are_the_spec_order() -> None:
    assert [label for label, _ in JUDGE_STEPS] == [
        "eval_mce.config.model",
        "eval_mce.config.judge_model",
        "experiment.evaluation.model",
        "experiment.evaluation.config.model",
        "template_vars.eval_model",
        "template_vars.judge_model",
        "experiment.models.judge",
        "experiment.models.main",
        "experiment.model",
        "application.spec.models",
        "experiment.metadata.model_name",
        "defaults.model",
        "package.defaults.model",
    ]


@pytest.mark.parametrize("winner", range(len(JUDGE_STEPS)))
def test_judge_chain_each_step_wins(winner: int) -> None:
    s = JUDGE_FULL
    for blank in _BLANKS[:winner]:
        s = replace(s, **blank)
    expected_model = f"m{winner + 1}"
    choice = resolve_builtin("", "judge", s)
    assert (choice.model, choice.source) == (expected_model, JUDGE_STEPS[winner][0])


def test_judge_application_models_need_one_distinct_concrete_model() -> None:
    base = JudgeScope(metadata_model_name="legacy", package_default=None)
    one = resolve_builtin("", "judge", replace(base, application_models=["any", "x", "x"]))
    assert (one.model, one.source) == ("x", "application.spec.models")
    two = resolve_builtin("", "judge", replace(base, application_models=["x", "y"]))
    assert (two.model, two.source) == ("legacy", "experiment.metadata.model_name")


def test_judge_concrete_ref_is_an_explicit_override() -> None:
    assert resolve_builtin("gpt-4.1", "judge", JUDGE_FULL) == ModelChoice("gpt-4.1", "override")


def test_judge_nothing_concrete_raises_naming_fields() -> None:
    s = JudgeScope(application_models=["a", "b"], package_default=None)
    with pytest.raises(ModelResolutionError) as info:
        resolve_builtin("any", "judge", s)
    message = str(info.value)
    assert "experiment.evaluation.model" in message
    assert "application.spec.models (not unique: a, b)" in message
    assert "defaults.model in config.yaml" in message


# -- properties: the winner is always the first concrete field, in chain order -----------

_VALUES = st.sampled_from([None, "", " ", "any", "ANY", "model-a", " model-b "])


def _first_concrete(steps: list[tuple[str | None, str]]) -> tuple[str, str] | None:
    for value, label in steps:
        if value is not None and value.strip() and value.strip().lower() != "any":
            return value.strip(), label
    return None


@given(agent=_VALUES, mas=_VALUES, exp_main=_VALUES, exp=_VALUES, config=_VALUES)
def test_turn_winner_is_first_concrete_field(
    agent: str | None, mas: str | None, exp_main: str | None, exp: str | None, config: str | None
) -> None:
    s = scope(
        agent=[ModelRow("main", agent)],
        mas=[ModelRow("main", mas)],
        experiment_models={} if exp_main is None else {"main": exp_main},
        experiment_model=exp,
        config_default=config,
        package_default="pkg",
    )
    expected = _first_concrete([
        (agent, "spec.models[id=main]"), (mas, "mas.spec.models[id=main]"),
        (exp_main, "experiment.models.main"), (exp, "experiment.model"),
        (config, "defaults.model"), ("pkg", "package.defaults.model"),
    ])
    choice = resolve_builtin("", "turn", s)
    assert (choice.model, choice.source) == expected


@given(st.lists(_VALUES, min_size=12, max_size=12))
def test_judge_winner_is_first_concrete_field(values: list[str | None]) -> None:
    s = JudgeScope(
        step_model=values[0],
        step_judge_model=values[1],
        evaluation_model=values[2],
        evaluation_config_model=values[3],
        template_vars={k: v for k, v in (("eval_model", values[4]), ("judge_model", values[5]))
                       if v is not None},
        experiment_models={k: v for k, v in (("judge", values[6]), ("main", values[7]))
                           if v is not None},
        experiment_model=values[8],
        application_models=[v for v in values[9:10] if v is not None],
        metadata_model_name=values[10],
        config_default=values[11],
        package_default="pkg",
    )
    labels = [label for label, _ in JUDGE_STEPS]
    expected = _first_concrete(list(zip([*values, "pkg"], labels, strict=True)))
    choice = resolve_builtin(None, "judge", s)
    assert (choice.model, choice.source) == expected


# -- argument checks ------------------------------------------------------------------------


def test_unknown_purpose_is_an_error() -> None:
    with pytest.raises(ModelResolutionError, match="unknown model purpose 'chat'"):
        resolve_builtin("", "chat", ModelScope())


def test_wrong_scope_type_is_an_error() -> None:
    with pytest.raises(ModelResolutionError, match="judge model resolution needs a JudgeScope"):
        resolve_builtin("", "judge", ModelScope())
    with pytest.raises(ModelResolutionError, match="turn model resolution needs a ModelScope"):
        resolve_builtin("", "turn", JudgeScope())


# -- the hook -------------------------------------------------------------------------------


class _Reroute:
    """Sends every summarizer to a local model; defers everything else."""

    @hookimpl
    def mas_resolve_model_ref(self, ref: str, purpose: str) -> ModelChoice | None:
        if purpose == "summarizer":
            return ModelChoice("ollama/llama3", "plugin:reroute")
        return None


def test_builtin_answers_through_the_hook(mas_runtime: Any) -> None:
    s = scope(agent=TURN_ONLY)
    turn = resolve_model(mas_runtime, "", "turn", s)
    assert turn == ModelChoice("gpt-4o", "spec.models[id=main]", "main")
    assert resolve_model(mas_runtime, None, "summarizer", s).source == "agent"


def test_plugin_can_reroute_and_defer(register_plugin: Any) -> None:
    runtime = register_plugin(_Reroute(), entry_points=False)
    s = scope(agent=TURN_ONLY)
    rerouted = resolve_model(runtime, "", "summarizer", s)
    assert rerouted == ModelChoice("ollama/llama3", "plugin:reroute")
    assert resolve_model(runtime, "", "turn", s).model == "gpt-4o"  # deferred to the kernel


def test_plugin_answering_a_wrong_type_is_reported(register_plugin: Any) -> None:
    class Bad:
        @hookimpl
        def mas_resolve_model_ref(self) -> str:
            return "gpt-4o"

    runtime = register_plugin(Bad(), entry_points=False)
    with pytest.raises(ModelResolutionError, match="returned str for turn ref ''"):
        resolve_model(runtime, "", "turn", ModelScope())
