"""Tool-result pruning: spec 002 (max_result_chars; "never changes the message count or
order") and spec 004 contextPruning (soft trim, hard clear, keepLastAssistants,
softTrimRatio / hardClearRatio, minPrunableToolChars)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mas.library.standard.plugins.context import PruningParams, ToolResultPruner
from mas.runtime.context import History

SKILL = '<skill_content name="alpha">' + "s" * 9_000 + "</skill_content>"


def conversation(results: list[str], answers_after: int = 0) -> list[dict]:
    messages: list[dict] = []
    for i, text in enumerate(results):
        messages += [
            {"role": "user", "content": f"q{i}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"t{i}",
                        "type": "function",
                        "function": {"name": "get", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"t{i}", "content": text},
            {"role": "assistant", "content": f"a{i}"},
        ]
    return messages


def prune(params: dict, results: list[str], fill: float = 1.0) -> list[dict]:
    pruner = ToolResultPruner(PruningParams(**params))
    history = History(conversation(results))
    stop = pruner.protected_from(history, 0)
    pruner.prune(
        history, pruner.candidates(history, 0, stop), satisfied=lambda: False, fill=lambda: fill
    )
    return history.messages


def tool_texts(messages: list[dict]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "tool"]


def test_spec_004_defaults() -> None:
    p = PruningParams()
    assert (p.soft_trim.max_chars, p.soft_trim.head_chars, p.soft_trim.tail_chars) == (
        4000,
        1500,
        1500,
    )
    assert (p.hard_clear.enabled, p.hard_clear.placeholder) == (
        True,
        "[Old tool result content cleared]",
    )
    assert p.max_result_chars == 8192 and p.keep_last_assistants == 3


def test_pruning_never_changes_message_count_or_order() -> None:
    results = ["A" * 20_000, "B" * 9_000, "C" * 100, "D" * 50_000, "E", "F", "G"]
    before = conversation(results)
    after = prune({}, results)
    assert len(after) == len(before)
    assert [(m["role"], m.get("tool_call_id")) for m in after] == [
        (m["role"], m.get("tool_call_id")) for m in before
    ]


def test_keep_last_assistants_protects_recent_results() -> None:
    """Spec 004: "keepLastAssistants protects recent turns from pruning, regardless of the
    trim/clear ratios"."""
    results = ["x" * 20_000] * 4
    texts = tool_texts(
        prune({"keep_last_assistants": 3, "hard_clear": {"enabled": False}}, results)
    )
    # The last 3 assistant messages are a2, the call of turn 3, and a3: turn 3 is protected.
    assert texts[3] == "x" * 20_000
    assert all(len(t) < 20_000 for t in texts[:3])


def test_soft_trim_keeps_head_and_tail() -> None:
    """Spec 004 softTrim: keep head and tail with an omission marker in between."""
    text = "H" * 2_000 + "m" * 3_000 + "T" * 2_000
    params = {
        "max_result_chars": None,
        "keep_last_assistants": 0,
        "hard_clear": {"enabled": False},
        "soft_trim": {"max_chars": 4000, "head_chars": 1500, "tail_chars": 1500},
    }
    trimmed = tool_texts(prune(params, [text]))[0]
    assert trimmed.startswith("H" * 1_500) and trimmed.endswith("T" * 1_500)
    assert "[... 4000 characters omitted ...]" in trimmed


def test_hard_clear_uses_the_placeholder_when_fill_passes_the_ratio() -> None:
    params = {"keep_last_assistants": 0, "hard_clear": {"placeholder": "[gone]"}}
    assert tool_texts(prune(params, ["x" * 6_000], fill=0.6)) == ["[gone]"]
    soft_only = tool_texts(prune(params, ["x" * 6_000], fill=0.4))[0]
    assert soft_only != "[gone]" and len(soft_only) < 3_100
    untouched = tool_texts(prune(params, ["x" * 6_000], fill=0.2))[0]
    assert untouched == "x" * 6_000  # under soft_trim_ratio: only max_result_chars applies


def test_small_results_are_never_pruned() -> None:
    """Spec 004: "only affects tool results that exceed minPrunableToolChars"."""
    params = {
        "keep_last_assistants": 0,
        "min_prunable_tool_chars": 30_000,
        "soft_trim": {"max_chars": 100},
        "max_result_chars": None,
    }
    assert tool_texts(prune(params, ["y" * 20_000, "z" * 40_000])) == [
        "y" * 20_000,
        "[Old tool result content cleared]",
    ]


def test_max_result_chars_caps_old_results_first() -> None:
    """Spec 002: tool results longer than max_result_chars are truncated before any model
    call is considered."""
    params = {
        "keep_last_assistants": 0,
        "max_result_chars": 1_000,
        "min_prunable_tool_chars": 0,  # the floor binds every phase, the cap too
        "hard_clear": {"enabled": False},
    }
    capped = tool_texts(prune(params, ["q" * 3_000], fill=0.0))[0]
    assert len(capped) <= 1_000 and "characters omitted" in capped


def test_skill_results_are_never_pruned() -> None:
    assert tool_texts(prune({"keep_last_assistants": 0}, [SKILL])) == [SKILL]


def test_prune_messages_returns_a_pruned_copy() -> None:
    messages = conversation(["x" * 20_000, "ok"])
    pruner = ToolResultPruner(PruningParams(keep_last_assistants=1))
    pruned = pruner.prune_messages(messages, window=1_000)
    assert messages[2]["content"] == "x" * 20_000
    assert pruned[2]["content"] == "[Old tool result content cleared]"


def test_bad_pruning_params_name_the_field() -> None:
    with pytest.raises(ValidationError, match="soft_trim.max_chars"):
        PruningParams(soft_trim={"max_chars": 0})
    with pytest.raises(ValidationError, match="keepLastAssistants|keep_last_assistants"):
        PruningParams(keepLastAssistants=3)


# -- issue 12, item 8: pruning on its own ratios, with a hard floor ----------------------


def _summarising(pruning: dict):
    from mas.runtime.spec.binding import Binding, bind

    from .conftest import Recorder, make_ctx

    rec = Recorder()
    raw = {"type": "summarising", "params": {"pruning": pruning, "keep_turns": 2}}
    return bind("context_manager", Binding.model_validate(raw), make_ctx(rec.runtime)), rec


def _budget(cm, window: int):
    from mas.runtime.context import ContextBudget, FixedCosts

    return ContextBudget.compute(window=window, reserve=0, fixed=FixedCosts(system=10),
                                 settings=cm.budget_settings)


def test_pruning_acts_on_its_own_ratio_before_the_summarization_trigger() -> None:
    """At about 38 % fill an old 60k-character result is soft-trimmed, though history is
    far under the trigger and nothing is summarized."""
    cm, rec = _summarising({})
    history = History(conversation(["x" * 60_000, "small", "small", "small"]))
    window = int(history.total_tokens / 0.38)
    managed = cm.manage_history(history, _budget(cm, window), engine=None)
    assert not managed.compacted and rec.of("compaction.start") == []
    trimmed = tool_texts(history.messages)[0]
    assert len(trimmed) <= 4_000 + 40 and "characters omitted" in trimmed
    assert history.original(2)["content"] == "x" * 60_000, "the original is kept"
    [pruned] = rec.of("context.pruned")
    assert pruned.data["soft_trimmed"] == 1 and pruned.data["cleared"] == 0


def test_soft_trim_and_hard_clear_ratios_act_in_turn() -> None:
    """Under soft_trim_ratio nothing changes; from it, soft trim; from hard_clear_ratio,
    the result is cleared."""
    results = ["x" * 60_000, "small", "small", "small"]
    trimmed_size = History(conversation(["x" * 4_100, *results[1:]])).total_tokens
    # Fills as they stand after the soft trim (the phases are progressive: a trim that
    # brings the fill under the clear ratio leaves nothing to clear).
    for fill, expect in ((0.2, "untouched"), (0.4, "trimmed"), (0.7, "cleared")):
        cm, _ = _summarising({"hard_clear_ratio": 0.5, "soft_trim_ratio": 0.3})
        history = History(conversation(results))
        size = history.total_tokens if expect == "untouched" else trimmed_size
        cm.manage_history(history, _budget(cm, int(size / fill)), engine=None)
        text = tool_texts(history.messages)[0]
        state = ("cleared" if text == "[Old tool result content cleared]"
                 else "trimmed" if "omitted" in text else "untouched")
        assert state == expect, (fill, state)


def test_min_prunable_tool_chars_is_a_hard_floor_even_after_the_cap() -> None:
    """A result whose committed text is under the floor is never pruned by any phase, and
    a result the cap shortened does not become eligible by being short now."""
    pruner = ToolResultPruner(PruningParams(
        min_prunable_tool_chars=10_000, max_result_chars=8_192, keep_last_assistants=0))
    history = History(conversation(["y" * 9_000, "z" * 12_000]))
    stop = pruner.protected_from(history, 0)
    pruner.prune(history, pruner.candidates(history, 0, stop), satisfied=lambda: False,
                 fill=lambda: 1.0)
    under, over = tool_texts(history.messages)
    assert under == "y" * 9_000, "under the floor: never touched"
    assert over == "[Old tool result content cleared]", "over it: every phase may act"
    assert pruner.candidates(history, 0, stop) == [], "nothing left to prune"


def test_results_the_clear_will_take_anyway_are_not_trimmed_first() -> None:
    """When clearing every candidate still leaves the fill at the hard-clear ratio (a cold
    bound over thousands of old results), each is cleared without a soft trim first: the
    same history afterwards, half the work (issue 22)."""
    cm, rec = _summarising({"hard_clear_ratio": 0.5, "soft_trim_ratio": 0.3})
    history = History(conversation([f"r{i} " + "x" * 20_000 for i in range(12)]
                                   + ["small"] * 4))
    # Even with every old result cleared, the small turns alone fill the whole window.
    cleared_size = History(conversation(["[Old tool result content cleared]"] * 12
                                        + ["small"] * 4)).total_tokens
    cm.manage_history(history, _budget(cm, cleared_size - 10), engine=None)
    texts = tool_texts(history.messages)
    assert texts[:10] == ["[Old tool result content cleared]"] * 10
    pruned = rec.of("context.pruned")[0].data
    assert pruned["soft_trimmed"] == 0 and pruned["cleared"] >= 10
