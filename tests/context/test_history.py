"""DESIGN §4: "History keeps per-message token estimates so that a turn costs work
proportional to what changed" — appends are incremental; write-back drops a prefix."""

from __future__ import annotations

import json

import pytest

from mas.runtime.context import DEFAULT_ESTIMATOR, History

SKILL = '<skill_content name="alpha">body</skill_content>'


def turn(i: int) -> list[dict]:
    return [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i} " * i}]


def test_running_total_equals_a_fresh_estimate() -> None:
    history = History()
    for i in range(50):
        history.extend(turn(i))
    assert history.total_tokens == DEFAULT_ESTIMATOR.messages(history.messages)
    assert history.tokens_between(10, 20) == DEFAULT_ESTIMATOR.messages(history.messages[10:20])
    assert history.turn_starts() == list(range(0, 100, 2))


def test_positions_are_absolute_after_dropping_a_prefix() -> None:
    history = History([m for i in range(10) for m in turn(i)])
    history.append({"role": "tool", "tool_call_id": "s", "content": SKILL})
    assert history.drop_before(6) == 6
    assert history.base == 6 and history.end == 21 and len(history) == 15
    assert history.message(6) == {"role": "user", "content": "q3"}
    assert history.turn_starts() == list(range(6, 20, 2))
    assert history.turn_starts(11) == list(range(12, 20, 2))
    assert history.skill_indexes(0, 100) == [20]
    assert history.total_tokens == DEFAULT_ESTIMATOR.messages(history.messages)
    assert history.drop_before(3) == 0


def test_replace_keeps_count_order_and_totals() -> None:
    history = History([m for i in range(5) for m in turn(i)])
    history.replace(3, {"role": "assistant", "content": SKILL})
    assert len(history) == 10
    assert history.skill_indexes(0, 10) == [3]
    assert history.total_tokens == DEFAULT_ESTIMATOR.messages(history.messages)
    history.replace(3, {"role": "assistant", "content": "short"})
    assert history.skill_indexes(0, 10) == []
    with pytest.raises(ValueError, match="role 'user' differs from 'assistant'"):
        history.replace(3, {"role": "user", "content": "x"})


def test_state_round_trips_through_json() -> None:
    history = History([m for i in range(4) for m in turn(i)])
    history.drop_before(2)
    restored = History.from_state(json.loads(json.dumps(history.to_state())))
    assert restored.base == 2 and restored.messages == history.messages
    assert restored.total_tokens == history.total_tokens


def test_masked_originals_mask_every_skill_and_read_only_the_messages_that_may_hold_one() -> None:
    from mas.runtime.context import mask_skills

    messages = [{"role": "user", "content": f"m{i}"} for i in range(6)]
    messages[2] = {"role": "tool", "tool_call_id": "s", "content": SKILL}
    history = History(messages)
    history.replace(4, {"role": "user", "content": "pruned"})  # its original is read
    got = history.masked_originals(0, 6)
    assert got == [mask_skills(m) for m in messages]
    assert got[2] != messages[2], "the skill block is masked"
    assert all(got[i] is messages[i] for i in (0, 1, 3, 5)), "the rest are not copied"
    assert history.masked_originals(3, 6) == [mask_skills(m) for m in messages[3:]]
    # a skill row replaced by text without one: its original is still masked, also
    # once the history is saved and loaded again
    history.replace(2, {"role": "tool", "tool_call_id": "s", "content": "cleared"})
    assert history.skill_indexes(0, 6) == []
    loaded = History.from_state(json.loads(json.dumps(history.to_state())))
    for h in (history, loaded):
        assert h.masked_originals(0, 6) == [mask_skills(m) for m in messages]


def test_carries_skill_reads_the_committed_message_not_its_replacement() -> None:
    history = History([{"role": "user", "content": "hi"},
                       {"role": "tool", "tool_call_id": "s", "content": SKILL}])
    assert [history.carries_skill(i) for i in (0, 1)] == [False, True]
    history.replace(1, {"role": "tool", "tool_call_id": "s", "content": "cleared"})
    assert history.carries_skill(1), "its original still held the skill"
    # originals() walks whichever is fewer, the range or the replaced messages
    assert history.originals(0, 2)[1]["content"] == SKILL
    assert history.originals(1, 2) == [{"role": "tool", "tool_call_id": "s", "content": SKILL}]
