"""The jury: a panel of judge models, k samples each, one vote per (model, sample).

Every vote is kept, scored or not. A vote is *unscored* when the model call fails (timeout,
429, budget) or when the reply is still unusable after one re-ask quoting the problem; it is
never counted as 0. Votes on one judge model run in that model's own thread pool, so each
model sees at most ``max_concurrency`` requests at a time.
"""

from __future__ import annotations

import contextvars
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field
from typing import Any

from mas.library.eval.mce._parse import Verdict, VerdictError, parse_verdict
from mas.library.eval.mce._prompt import (
    judge_messages,
    prompt_sha256,
    reask_messages,
    verify_evidence,
)
from mas.library.eval.metrics.base import JudgeMetric, MetricResult
from mas.runtime.protocols import ChatEngine, Message, ModelReply

JSON_MODE = {"type": "json_object"}

Parse = Callable[[str], Verdict]
"""Reads one reply as a verdict; raises :class:`VerdictError` with what was wrong."""
Reask = Callable[[list[Message], str, str], list[Message]]
"""(first request, unusable reply, problem) -> the follow-up request."""


@dataclass(frozen=True)
class JudgeModel:
    """One model on the panel and the field that chose it (spec 000's ``source``)."""

    model: str
    source: str


@dataclass
class Vote:
    """One judge model's answer on one metric (one sample), with what it cost.

    :ivar score: the score, or ``None`` for an unscored vote (``error`` says why).
    :ivar raw: the reply text when it could not be used, kept for inspection.
    :ivar evidence_verified: per quote, whether it occurs in the judged material.
    :ivar reasked: a second request was sent after an unusable first reply.
    :ivar truncated: the judge's input was cut (and marked) to fit its window: counted
        as ``judge_truncations`` degradation.
    """

    model: str
    source: str
    sample: int
    seed: int | None
    temperature: float | None
    score: float | None = None
    reasoning: str = ""
    evidence: list[str] = field(default_factory=list)
    evidence_verified: list[bool] = field(default_factory=list)
    error: str | None = None
    raw: str | None = None
    reasked: bool = False
    truncated: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None
    cache_hit: bool = False

    def add_usage(self, reply: ModelReply) -> None:
        """Count ``reply``'s tokens and cost into this vote."""
        if reply.usage is not None:
            self.prompt_tokens += reply.usage.prompt_tokens
            self.completion_tokens += reply.usage.completion_tokens
            self.cached_tokens += reply.usage.cached_tokens
        if reply.cost is not None:
            self.cost = (self.cost or 0.0) + reply.cost
        self.cache_hit = self.cache_hit or reply.cache_hit
        self.truncated = self.truncated or reply.cut_chars > 0

    def to_json(self) -> dict[str, Any]:
        """The vote as recorded in ``metrics.json``."""
        return asdict(self)


@dataclass
class Jury:
    """A configured panel. Build it with :func:`mas.library.eval.mce.runner.configure_jury`.

    :ivar engine: the engine every vote goes through (cache, cost, events, budget).
    :ivar judges: the panel, first entry the primary judge.
    :ivar samples: votes per judge model on each metric (k).
    :ivar seed: seed of sample 0; sample i sends ``seed + i`` so samples are distinct
        requests (and distinct response-cache keys).
    :ivar temperature: sent on every request.
    :ivar max_tokens: output limit sent on every request (``None`` sends none).
    :ivar json_mode: send ``response_format={"type": "json_object"}``.
    :ivar max_concurrency: requests in flight per judge model.
    :ivar max_tool_chars: tool results longer than this are clipped in the material.
    """

    engine: ChatEngine
    judges: list[JudgeModel]
    samples: int = 1
    seed: int | None = 0
    temperature: float | None = 0.0
    max_tokens: int | None = 1024
    json_mode: bool = True
    max_concurrency: int = 4
    max_tool_chars: int = 4000

    def sent(self) -> dict[str, Any]:
        """The request settings every vote uses, as recorded in metadata."""
        return {
            "temperature": self.temperature,
            "seed": self.seed,
            "samples": self.samples,
            "max_tokens": self.max_tokens,
            "response_format": JSON_MODE if self.json_mode else None,
        }

    def vote_all(self, tasks: list[tuple[JudgeMetric, str]]) -> list[list[Vote]]:
        """All votes for each ``(metric, material)`` task, in panel then sample order."""
        pools = {
            judge.model: ThreadPoolExecutor(
                max_workers=self.max_concurrency, thread_name_prefix="mas-judge"
            )
            for judge in self.judges
        }
        try:
            futures: list[list[Future[Vote]]] = [
                [
                    # A copy of this thread's context each: the judge calls' spans go
                    # under the caller's current span (mas-ctl eval's).
                    pools[judge.model].submit(contextvars.copy_context().run, self.vote,
                                              judge, sample, metric, material)
                    for judge in self.judges
                    for sample in range(self.samples)
                ]
                for metric, material in tasks
            ]
            return [[future.result() for future in row] for row in futures]
        finally:
            for pool in pools.values():
                pool.shutdown(wait=True)

    def vote(self, judge: JudgeModel, sample: int, metric: JudgeMetric, material: str) -> Vote:
        """One vote: ask, re-ask once on an unusable reply, never raise."""
        messages = judge_messages(metric, material)
        vote = self.request(
            judge, sample, messages, lambda text: parse_verdict(text, metric.unit),
            lambda first, text, problem: reask_messages(first, text, problem, metric))
        vote.evidence_verified = verify_evidence(vote.evidence, material)
        return vote

    def vote_on(self, messages: list[Message], parse: Parse, reask: Reask) -> list[Vote]:
        """Every panel and sample vote on a request built elsewhere (MCE's own prompts)."""
        with ThreadPoolExecutor(max_workers=self.max_concurrency,
                                thread_name_prefix="mas-judge") as pool:
            futures = [pool.submit(contextvars.copy_context().run, self.request, judge, sample,
                                   messages, parse, reask)
                       for judge in self.judges for sample in range(self.samples)]
            return [future.result() for future in futures]

    def request(self, judge: JudgeModel, sample: int, messages: list[Message], parse: Parse,
                reask: Reask) -> Vote:
        """One vote on ``messages``: ask, re-ask once (``reask``) on an unusable reply."""
        with _own_conversation(self.engine):
            return self._request(judge, sample, messages, parse, reask)

    def _request(self, judge: JudgeModel, sample: int, messages: list[Message], parse: Parse,
                 reask: Reask) -> Vote:
        seed = None if self.seed is None else self.seed + sample
        vote = Vote(judge.model, judge.source, sample, seed, self.temperature)
        reply = self._ask(vote, messages)
        if reply is None:
            return vote
        try:
            verdict = parse(reply.text)
        except VerdictError as problem:
            vote.reasked = True
            retry = self._ask(vote, reask(messages, reply.text, str(problem)))
            if retry is None:
                vote.raw = reply.text
                return vote
            try:
                verdict = parse(retry.text)
            except VerdictError as second:
                vote.raw = retry.text
                vote.error = f"unusable reply after one re-ask: {second}"
                return vote
        vote.score = verdict.score
        vote.reasoning = verdict.reasoning
        vote.evidence = verdict.evidence
        return vote

    def _ask(self, vote: Vote, messages: list[dict[str, Any]]) -> ModelReply | None:
        try:
            reply = self.engine.complete(
                messages,
                model=vote.model,
                temperature=self.temperature,
                seed=vote.seed,
                max_tokens=self.max_tokens,
                response_format=JSON_MODE if self.json_mode else None,
            )
        except Exception as exc:  # a failed call is an unscored vote, never a lost run
            vote.error = f"model call failed: {type(exc).__name__}: {exc}"
            return None
        vote.add_usage(reply)
        return reply


def _own_conversation(engine: ChatEngine) -> AbstractContextManager[None]:
    # Each vote (with its re-ask) is one conversation where the engine offers them
    # (the kernel's does): a provider caching prefixes per conversation, the offline model,
    # then gives each vote the same cached tokens whatever ran before or beside it.
    conversation = getattr(engine, "conversation", None)
    return conversation() if callable(conversation) else nullcontext()


def aggregate(metric: JudgeMetric, votes: list[Vote], judges: list[JudgeModel]) -> MetricResult:
    """Combine ``votes`` into the metric's value; failed votes stay in the denominator.

    Binary: the score more than half of *all* votes gave, else unscored. Likert/ratio: the
    mean of scored votes when more than half of all votes are scored, else unscored.
    Agreement is the share of all votes that gave the most common score.
    """
    n_votes = len(votes)
    scored = [vote for vote in votes if vote.score is not None]
    counts = Counter(vote.score for vote in scored)
    top_score, top_count = counts.most_common(1)[0] if counts else (None, 0)
    value: float | None
    if metric.unit.aggregation == "majority":
        value = top_score if top_count * 2 > n_votes else None
    else:
        value = sum(v.score or 0.0 for v in scored) / len(scored) if len(scored) * 2 > n_votes \
            else None
    detail = _detail(metric, votes, judges)
    detail["agreement"] = top_count / n_votes if n_votes else None
    if value is None:
        return MetricResult(None, error=_no_value(metric, votes, counts), detail=detail)
    closest = min(scored, key=lambda vote: abs((vote.score or 0.0) - value))
    return MetricResult(value, closest.reasoning, detail=detail)


def _no_value(metric: JudgeMetric, votes: list[Vote], counts: Counter[float | None]) -> str:
    failed = [vote for vote in votes if vote.score is None]
    if len(failed) == len(votes):
        first = failed[0].error if failed else "no votes"
        return f"all {len(votes)} vote(s) unscored; first: {first}"
    tally = ", ".join(f"{count} x {score:g}" for score, count in sorted(counts.items()))
    rule = "a majority" if metric.unit.aggregation == "majority" else "more than half scored"
    return f"no value: needs {rule} of {len(votes)} vote(s); got {tally}, {len(failed)} unscored"


def _detail(metric: JudgeMetric, votes: list[Vote], judges: list[JudgeModel]) -> dict[str, Any]:
    costs = [vote.cost for vote in votes if vote.cost is not None]
    prompt = sum(vote.prompt_tokens for vote in votes)
    completion = sum(vote.completion_tokens for vote in votes)
    return {
        "aggregation": metric.unit.aggregation,
        "unit": metric.unit.name,
        "votes": [vote.to_json() for vote in votes],
        "n_votes": len(votes),
        "n_unscored": sum(1 for vote in votes if vote.score is None),
        "judge_models": [asdict(judge) for judge in judges],
        "prompt_sha256": prompt_sha256(metric),
        "tokens": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "cached_tokens": sum(vote.cached_tokens for vote in votes),
            "total_tokens": prompt + completion,
        },
        "cost": sum(costs) if costs else None,
        "unverified_evidence": sum(vote.evidence_verified.count(False) for vote in votes),
    }
