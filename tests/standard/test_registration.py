"""The standard types arrive through entry point ``mas`` and bind from every form spec 000
allows; params defaults are spec 000's table; bad params are one clear line each."""

from __future__ import annotations

import pytest

from mas.library.standard.plugins.context import (
    DropSummarizer,
    LlmSummarizer,
    SlidingWindowContextManager,
    StackContextManager,
    SummarisingContextManager,
)
from mas.runtime import ManifestError, Runtime, hookimpl
from mas.runtime.protocols import ContextManager, Summarizer


def test_types_are_registered_by_the_standard_plugin() -> None:
    registries = Runtime.create().registries
    for name in ("summarising", "sliding_window", "stack"):
        assert registries.context_manager.get(name).provider.name == "standard"
    assert {"llm", "drop"} <= set(registries.summarizer.names())
    assert registries.context_manager.get("Summarizing").name == "summarising"


def test_summarising_defaults_are_spec_000s_table(binder) -> None:
    """Spec 000 "Plugin and CM parameters": keep_turns 10, hysteresis_ratio 0.1,
    summary_threshold auto, trimmer auto/auto/0.1, summarizer llm."""
    cm, _ = binder("summarising")
    assert isinstance(cm, SummarisingContextManager) and isinstance(cm, ContextManager)
    p = cm.params
    assert p.keep_turns == 10 and p.hysteresis_ratio == 0.1
    assert p.summary_threshold is None
    assert (p.trimmer.max_tokens, p.trimmer.reserve_tokens, p.trimmer.safety_margin_ratio) == (
        None,
        None,
        0.1,
    )
    assert p.summarizer.type == "llm"
    assert isinstance(cm.summarizer, LlmSummarizer) and isinstance(cm.summarizer, Summarizer)
    assert cm.budget_settings.hysteresis_ratio == 0.1


@pytest.mark.parametrize(
    "raw, summarizer_type, model, source",
    [
        (
            {"type": "summarising", "params": {"keep_turns": 10, "summarizer": "llm"}},
            LlmSummarizer,
            "gpt-4o",
            "agent",
        ),
        ({"type": "summarising", "params": {"summarizer": "drop"}}, DropSummarizer, None, None),
        (
            {
                "type": "summarising",
                "params": {
                    "summarizer": {
                        "type": "llm",
                        "params": {"model": "gpt-4o-mini", "instructions": "Keep city names."},
                    }
                },
            },
            LlmSummarizer,
            "gpt-4o-mini",
            "override",
        ),
        (
            {
                "type": "summarising",
                "params": {"summarizer": {"type": "llm", "model": "gpt-4o-mini"}},
            },
            LlmSummarizer,
            "gpt-4o-mini",
            "override",
        ),
    ],
)
def test_every_binding_form_of_spec_000_binds(binder, raw, summarizer_type, model, source) -> None:
    cm, _ = binder(raw)
    assert isinstance(cm.summarizer, summarizer_type)
    assert getattr(cm.summarizer, "model", None) == model
    assert getattr(cm.summarizer, "model_source", None) == source


def test_summarizer_slot_wins_over_the_turn_model(binder) -> None:
    """Spec 000: "Default: the summarizer slot, else this agent's resolved turn model"."""
    from mas.runtime.spec.model_ref import ModelRow

    rows = [
        ModelRow("main", "gpt-4o"),
        ModelRow("summarizer", "gpt-4o-mini", context_window=64_000),
    ]
    cm, _ = binder({"type": "summarising"}, agent_models=rows)
    assert (cm.summarizer.model, cm.summarizer.model_source) == (
        "gpt-4o-mini",
        "spec.models[id=summarizer]",
    )
    assert cm.summarizer.window == 64_000
    by_id, _ = binder(
        {
            "type": "summarising",
            "params": {"summarizer": {"type": "llm", "params": {"model": "summarizer"}}},
        },
        agent_models=rows,
    )
    assert by_id.summarizer.model == "gpt-4o-mini"


def test_other_strategies_bind_with_their_defaults(binder) -> None:
    sliding, _ = binder("sliding_window")
    assert isinstance(sliding, SlidingWindowContextManager)
    # Spec 000's keep_turns 10, with the token bound on top (issue 25: the defaults hold
    # the budget themselves).
    assert sliding.params.keep_turns == 10 and sliding.params.max_tokens == "limit"
    stack, _ = binder("stack")
    assert isinstance(stack, StackContextManager) and stack.params.max_messages is None
    assert stack.params.max_tokens == "limit"


@pytest.mark.parametrize(
    "raw, line",
    [
        (
            {"type": "summarising", "params": {"keep_turns": -1}},
            "spec.context_manager.params.keep_turns: "
            "Input should be greater than or equal to 0 (got -1)",
        ),
        (
            {"type": "summarising", "params": {"keep_turn": 3}},
            "spec.context_manager.params.keep_turn: unknown field (not allowed here); "
            "did you mean 'keep_turns'? (got 3)",
        ),
        (
            {
                "type": "summarising",
                "params": {"summarizer": {"type": "llm", "params": {"modle": "x"}}},
            },
            "spec.context_manager.params.summarizer.params.modle: unknown field (not allowed "
            "here); did you mean 'model'?",
        ),
        (
            {"type": "summarising", "params": {"summarizer": "dorp"}},
            "spec.context_manager.params.summarizer.type: "
            "unknown summarizer type 'dorp' (did you mean 'drop'?)",
        ),
        (
            {"type": "summarising", "params": {"trigger": {"type": "token_ratio", "value": 1.5}}},
            "spec.context_manager.params.trigger.value: token_ratio value must be in "
            "(0, 1] (got 1.5)",
        ),
        (
            {"type": "summarising", "params": {"trimmer": {"safety_margin_ratio": 1.2}}},
            "spec.context_manager.params.trimmer.safety_margin_ratio: Input should be less than 1",
        ),
        (
            {"type": "summarising", "params": {"summary_threshold": 0}},
            "spec.context_manager.params.summary_threshold: Input should be greater than 0 (got 0)",
        ),
        (
            {"type": "sliding_window", "params": {"max_tokens": -5}},
            "spec.context_manager.params.max_tokens",
        ),
        (
            {"type": "stack", "params": {"max_messages": 0}},
            "spec.context_manager.params.max_messages: Input should be greater than or equal to 1",
        ),
        (
            {
                "type": "summarising",
                "params": {"summarizer": {"type": "drop", "params": {"model": "x"}}},
            },
            "spec.context_manager.params.summarizer.params.model: unknown field (not allowed here)",
        ),
    ],
)
def test_bad_params_are_one_line_naming_field_and_value(binder, raw, line) -> None:
    with pytest.raises(ManifestError) as info:
        binder(raw)
    assert line in str(info.value)
    assert "\n" not in str(info.value)


def test_summary_threshold_auto_and_integer(binder) -> None:
    auto, _ = binder({"type": "summarising", "params": {"summary_threshold": "auto"}})
    assert auto.budget_settings.summary_threshold is None
    fixed, _ = binder(
        {
            "type": "summarising",
            "params": {
                "summary_threshold": 8000,
                "trimmer": {"max_tokens": 12000, "reserve_tokens": 512},
            },
        }
    )
    s = fixed.budget_settings
    assert (s.summary_threshold, s.max_tokens, s.reserve_tokens) == (8000, 12000, 512)


class _EchoAll:
    """A minimal third-party context manager: sends every committed message."""

    budget_settings = __import__("mas.runtime.context", fromlist=["x"]).BudgetSettings()
    last_compaction_metadata = None

    def __init__(self, params, ctx) -> None:
        self.calls = 0

    def manage_history(
        self, history, budget, *, engine=None, system=None, tools=None, session_id=""
    ):
        from mas.runtime.protocols import ManagedHistory

        self.calls += 1
        return ManagedHistory(list(history.messages), history.total_tokens)

    def commit(self, history) -> None:
        """Nothing folded, nothing to write back."""

    def to_state(self) -> dict:
        return {"calls": self.calls}

    def load_state(self, state: dict) -> None:
        self.calls = state["calls"]


class _EchoPlugin:
    @hookimpl
    def mas_register_context_managers(self, registry) -> None:
        registry.register("echo_all", _EchoAll, description="Send everything")


def test_a_plugin_context_manager_registers_binds_and_runs(register_plugin, ctx_factory) -> None:
    """Hook mas_register_context_managers: a plugin's manager binds by type string and the
    session API calls it (the kernel's final trim still holds the budget)."""
    from mas.runtime.context import History, prepare_request
    from mas.runtime.spec.binding import Binding, bind

    runtime = register_plugin(_EchoPlugin(), "echo")
    assert runtime.registries.context_manager.get("echo-all").provider.name == "echo"
    cm = bind("context_manager", Binding.model_validate("echo_all"), ctx_factory(runtime))
    assert isinstance(cm, ContextManager)
    history = History(
        [{"role": "user", "content": "x" * 6_000}, {"role": "assistant", "content": "y" * 6_000}]
    )
    request = prepare_request(
        cm=cm,
        history=history,
        window=1_500,
        reserve=100,
        current_input={"role": "user", "content": "latest"},
    )
    assert cm.calls == 1 and request.messages == [{"role": "user", "content": "latest"}]
    assert request.trim.dropped_history == 2
