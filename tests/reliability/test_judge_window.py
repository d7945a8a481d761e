"""A judge whose input does not fit its window (issue 11 item 2): the request is cut,
marked and sent, the vote is scored and marked truncated, and the lab counts it as
``judge_truncations`` degradation. Through LiteLLM's real call path to the fake provider.

When the judge's window is known the request is sized before it is sent, so the provider
refuses nothing; when it is not, the provider's refusal is what re-sizes it (the backstop).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mas.library.eval.mce._parse import Verdict
from mas.library.eval.mce.jury import JudgeModel, Jury, Vote
from mas.library.lab.steps.degraded import judge_counts
from mas.runtime import Runtime
from mas.runtime.engine import Engine
from mas.runtime.engine._window import CUT_MARK, HEADROOM
from mas.runtime.fakeprovider import FakeProvider, request_tokens, serve

MARK = CUT_MARK.split("{n}")[0].strip()


def _parse(text: str) -> Verdict:
    return Verdict(float(json.loads(text)["score"]), "fake")


def _transcript(lines: int) -> list[dict[str, Any]]:
    # Digit-dense, as tool outputs are: chars/4 counts under half what this server counts.
    transcript = "\n".join(f"[{n}] tool: order {n:06d} shipped {n * 7:08d}"
                           for n in range(lines))
    return [{"role": "system", "content": "You grade transcripts."},
            {"role": "user", "content": f"Transcript:\n{transcript}\nGrade it."}]


def _vote(provider: FakeProvider, messages: list[dict[str, Any]],
          **engine: Any) -> tuple[Vote, Engine]:
    judge = Engine(Runtime.create(entry_points=False), model="openai/judge",
                   api_base=provider.base_url, api_key="sk-fake", num_retries=0, **engine)
    jury = Jury(judge, [JudgeModel("openai/judge", "test")], max_tokens=256)
    [vote] = jury.vote_on(messages, _parse, lambda first, text, problem: first)
    return vote, judge


def _assert_cut_and_counted(provider: FakeProvider, vote: Vote, engine: Engine) -> None:
    assert vote.score == 1.0 and vote.error is None
    assert vote.truncated
    sent = provider.requests[-1]["messages"][-1]["content"]
    assert MARK in sent
    assert sent.startswith("Transcript:") and sent.endswith("Grade it.")
    assert provider.requests[-1]["messages"][0]["content"] == "You grade transcripts."
    metrics = {"metrics": {"GoalSuccessRate": {"kind": "judge", "detail": {
        "n_unscored": 0, "votes": [vote.to_json()]}}}}
    assert judge_counts(metrics) == {"judge_truncations": 1}


@pytest.mark.parametrize("how", ["row", "infra"])
def test_a_judge_request_over_a_known_window_is_sized_before_sending(how: str) -> None:
    messages = _transcript(900)
    assert request_tokens({"messages": messages}) > 2 * 8192
    where: dict[str, Any] = (
        {"model_settings": {"openai/judge": {"context_window": 8192}}} if how == "row"
        else {"context_window": 8192})
    with serve(window=8192) as provider:
        vote, engine = _vote(provider, messages, **where)
    _assert_cut_and_counted(provider, vote, engine)
    assert provider.rejected == [], "nothing was refused: the request was sized first"
    assert len(provider.requests) == 1 and engine.ledger.llm_calls == 1
    assert provider.served[-1] + 256 <= 8192
    # Not cut further than the headroom asks: most of the window is used.
    assert provider.served[-1] + 256 >= 0.75 * HEADROOM * 8192
    assert engine.degradation.counts == {"judge_truncations": 1}
    reason = engine.degradation.reasons["judge_truncations"]
    assert "openai/judge" in reason and "8,192-token window" in reason
    assert "tokens (digit-prior estimate)" in reason and "characters" in reason
    assert "before sending" in reason


def test_a_judge_request_that_fits_is_sent_untouched_and_nothing_is_counted() -> None:
    messages = _transcript(40)
    with serve(window=8192) as provider:
        vote, engine = _vote(provider, messages, context_window=8192)
    assert vote.score == 1.0 and not vote.truncated
    assert provider.requests[-1]["messages"] == messages
    assert provider.rejected == []
    assert engine.degradation.counts == {}


def test_with_an_unknown_window_the_refusal_re_sizes_the_request() -> None:
    messages = _transcript(900)
    with serve(window=4096) as provider:
        vote, engine = _vote(provider, messages)
    assert engine.window_for("openai/judge", "judge") is None
    _assert_cut_and_counted(provider, vote, engine)
    assert provider.rejected, "the whole transcript was refused first"
    assert engine.degradation.counts["judge_truncations"] == len(provider.rejected)
    assert engine.ledger.llm_calls == 1 + len(provider.rejected)
