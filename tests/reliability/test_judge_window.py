"""A judge whose input does not fit its window (issue 11 item 2): the request is cut,
marked and sent, the vote is scored and marked truncated, and the lab counts it as
``judge_truncations`` degradation. Through LiteLLM's real call path to the fake provider."""

from __future__ import annotations

import json

from mas.library.eval.mce._parse import Verdict
from mas.library.eval.mce.jury import JudgeModel, Jury
from mas.library.lab.steps.degraded import judge_counts
from mas.runtime import Runtime
from mas.runtime.engine import Engine
from mas.runtime.engine._window import CUT_MARK
from mas.runtime.fakeprovider import serve


def _parse(text: str) -> Verdict:
    return Verdict(float(json.loads(text)["score"]), "fake")


def test_an_over_long_judge_request_is_cut_marked_and_counted() -> None:
    transcript = "\n".join(f"[{n}] tool: order {n:06d} shipped {n * 7:08d}" for n in range(900))
    messages = [{"role": "system", "content": "You grade transcripts."},
                {"role": "user", "content": f"Transcript:\n{transcript}\nGrade it."}]
    with serve(window=4096) as provider:
        engine = Engine(Runtime.create(entry_points=False), model="openai/judge",
                        api_base=provider.base_url, api_key="sk-fake", num_retries=0)
        jury = Jury(engine, [JudgeModel("openai/judge", "test")], max_tokens=256)
        [vote] = jury.vote_on(messages, _parse, lambda first, text, problem: first)
    assert vote.score == 1.0 and vote.error is None
    assert vote.truncated
    assert provider.rejected, "the whole transcript was refused first"
    sent = provider.requests[-1]["messages"][-1]["content"]
    assert CUT_MARK.split("{n}")[0].strip() in sent
    assert sent.startswith("Transcript:") and sent.endswith("Grade it.")
    assert engine.degradation.counts["judge_truncations"] == len(provider.rejected)
    metrics = {"metrics": {"GoalSuccessRate": {"kind": "judge", "detail": {
        "n_unscored": 0, "votes": [vote.to_json()]}}}}
    assert judge_counts(metrics) == {"judge_truncations": 1}
