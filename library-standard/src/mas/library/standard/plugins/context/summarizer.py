"""Summarizer sub-plugins: ``llm`` (one out-of-band model call) and ``drop`` (no call).

``llm`` resolves its model once, at bind time, with the kernel's summarizer chain
(spec 000: ``params.model`` > the ``summarizer`` slot > this agent's turn model) and logs
``summarizer llm: model=… source=… agent_model=… instructions=default|override``.

Its request is either *standalone* (a system prompt plus the folded turns as JSON, the
default) or *replay* (spec 002's prefix-cache-friendly form: the agent's own system
message, tools and messages verbatim, then the instruction as the last user turn). Only
the reply text is kept; a reply that calls tools, or has no text, is a failure. The input
is bounded by the summarizer model's window: folded turns that do not fit in one call
are summarized in consecutive chunks with the update prompt.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mas.runtime.context import DEFAULT_ESTIMATOR, DEFAULT_WINDOW, IdentityMemo, shorten_middle
from mas.runtime.protocols import (
    BindContext,
    Message,
    SizingEngine,
    SummarizerError,
    SummaryEngine,
    SummaryRequest,
    SummaryResult,
    Usage,
)
from mas.runtime.spec.model_ref import ModelChoice, resolve_model
from mas.runtime.spec.windows import resolve_window

from ._base import summary_row
from ._prompts import (
    MERGE_NOTE,
    MUST_INCLUDE_NOTE,
    PROMPTS,
    REPLAY_INSTRUCTION,
    REPLAY_UPDATE_INSTRUCTION,
)

log = logging.getLogger(__name__)

UPDATE_TEMPLATE = "Existing summary:\n{previous}\n\nNew conversation turns (JSON):\n{turns}"
"""User message of an update call: the running summary, then the newly folded turns."""

INPUT_MARGIN_RATIO = 0.1
"""Share of the summarizer's window left unused, as for agent requests."""

MIN_PROVIDER_SCALE = 0.5
"""Chunks never grow past twice what the plain estimate allows, whatever the engine says."""

MIN_SHARE = 0.05
"""A backlog over ``max_calls`` is shortened to no less than this share of each message."""


@dataclass(frozen=True)
class Packing:
    """How a fold fills the ``llm`` summarizer's calls (standalone requests).

    :ivar calls: calls the fold needs.
    :ivar room: tokens of folded turns one call takes.
    :ivar used: tokens its last call holds.
    :ivar cost: what one more message would add to a call.
    """

    calls: int
    room: int
    used: int
    cost: Callable[[Message], int]


class LlmParams(BaseModel):
    """Params of the ``llm`` summarizer."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(
        default=None,
        description="spec.models[].id or LiteLLM id; omitted/any: summarizer slot or turn model.",
    )
    instructions: str | None = Field(
        default=None, description="System prompt of the summary call; empty = package default."
    )
    style: Literal["prose", "checkpoint"] = Field(
        default="prose",
        description="Default prompt: spec 000's prose summary or spec 004's structured checkpoint.",
    )
    update_instructions: str | None = Field(
        default=None,
        description="Prompt merging new turns into the running summary; empty = package default.",
    )
    max_summary_tokens: int | None = Field(
        default=4096, ge=1, description="Output cap of the summary call (and of the kept text)."
    )
    request_mode: Literal["standalone", "replay"] = Field(
        default="standalone",
        description="replay = prefix-cache friendly: the conversation verbatim, instruction last.",
    )
    context_window: int | None = Field(
        default=None, ge=1, description="Input window of the summarizer model; omitted = resolved."
    )
    max_calls: int = Field(
        default=8,
        ge=1,
        description="Model calls one compaction may make; a larger backlog is shortened "
        "(every folded message in proportion) to fit, and the shortening is logged.",
    )


class LlmSummarizer:
    """Folds turns with one ``engine.summarize_messages`` call (more only if they overflow)."""

    calls_model = True

    def __init__(self, params: LlmParams, ctx: BindContext) -> None:
        self.params = params
        self._must_include = ""
        choice = resolve_model(ctx.runtime, params.model, "summarizer", ctx.model_scope)
        self.model = choice.model
        self.model_source = choice.source
        self.window = self._window(choice, ctx)
        first, update = PROMPTS[params.style]
        own = (params.instructions or "").strip()
        self.instructions = own or first
        # The user's instructions govern every summary: an update wraps them, never
        # replaces them (issue 12, item 2).
        self.update_instructions = (params.update_instructions or "").strip() or (
            f"{own}\n\n{MERGE_NOTE}" if own else update
        )
        overridden = bool(own)
        log.info(
            "summarizer llm: model=%s source=%s agent_model=%s instructions=%s",
            self.model,
            self.model_source,
            ctx.turn_model.model,
            "override" if overridden else "default",
        )

    def _window(self, choice: ModelChoice, ctx: BindContext) -> int | None:
        if self.params.context_window is not None:
            return self.params.context_window
        if choice.source == "agent":
            return None  # the agent's own resolved window arrives with each request
        row = ctx.model_scope.row_setting(choice.slot, "context_window")
        return resolve_window(choice.model, agent_context_window=row).value

    # -- the call --------------------------------------------------------------------

    def summarize(self, request: SummaryRequest, engine: SummaryEngine | None) -> SummaryResult:
        """Summarize ``request.messages`` into an updated running summary."""
        if engine is None:
            raise SummarizerError("no_engine", "the llm summarizer needs an engine to call")
        out, limit = self._sizes(request, engine)
        self._must_include = _must_include(request.must_include)
        calls: list[tuple[list[Message], list[dict[str, Any]] | None]] = []
        if self.params.request_mode == "replay":
            replay = self._replay(request)
            if DEFAULT_ESTIMATOR.messages(replay) + DEFAULT_ESTIMATOR.tools(request.tools) <= limit:
                calls.append((replay, request.tools))
        summary = request.previous_summary
        usage = Usage()
        count = 0
        unread = 0
        if calls:
            summary, usage = self._call(engine, *calls[0], usage, out)
            count = 1
        else:
            chunks, unread = self._bounded_chunks(request.messages, summary, limit, out)
            for chunk in chunks:
                summary, usage = self._call(
                    engine, self._standalone(chunk, summary), None, usage, out
                )
                count += 1
        return SummaryResult(summary, self.model, self.model_source, count, usage,
                             unread_messages=unread)

    def packing(self, request: SummaryRequest, engine: SummaryEngine | None) -> Packing | None:
        """How ``request`` would fill this summarizer's calls, without calling; ``None``
        when that is not known in advance (no engine, replay mode, or a backlog over
        ``max_calls`` that would be shortened)."""
        if engine is None or self.params.request_mode == "replay":
            return None
        out, limit = self._sizes(request, engine)
        room = self._chunk_room(request.previous_summary, limit, out)
        first = self._first_room(request.previous_summary, limit, out)
        used, calls = 0, 1
        for message in request.messages:
            tokens = self._cost(message, room)
            if used and used + tokens > (first if calls == 1 else room):
                calls, used = calls + 1, 0
                if calls > self.params.max_calls:
                    return None  # known without reading the rest of a cold backlog
            used += tokens
        return Packing(calls, first if calls == 1 else room, used,
                       lambda message: self._cost(message, room))

    def _sizes(self, request: SummaryRequest, engine: SummaryEngine) -> tuple[int, int]:
        """``(out, limit)``: the summary's output room and the input tokens one call takes."""
        window = self.input_window(engine, request.window)
        # The summary's own room: the cap, never more than a quarter of the window, nor
        # more than the context manager has room for.
        out = min(self.params.max_summary_tokens or window, window // 4)
        if request.max_summary_tokens is not None:
            out = max(1, min(out, request.max_summary_tokens))
        # Requests are built with the plain estimate; the provider may count more (digits,
        # another tokenizer): the room is divided by what the engine expects it to count.
        limit = int((window - out - int(INPUT_MARGIN_RATIO * window))
                    / self._provider_scale(engine, request.messages))
        return out, limit

    def input_window(self, engine: SummaryEngine | None, agent_window: int | None) -> int:
        """The summarizer model's window: ``context_window``, then what the engine knows
        of the model (its row, Infra, the catalog), then the resolved one; a summarizer
        that inherits the turn model takes the agent's window (``agent_window``)."""
        if self.params.context_window is not None:
            return self.params.context_window
        if self.model_source != "agent" and isinstance(engine, SizingEngine):
            known = engine.window_for(self.model, "summary")
            if known is not None:
                return known
        return self.window or agent_window or DEFAULT_WINDOW

    def _provider_scale(self, engine: SummaryEngine, messages: list[Message]) -> float:
        """Tokens the engine expects the provider to count per estimated token of
        ``messages`` (1.0 for an engine that cannot say)."""
        if not isinstance(engine, SizingEngine):
            return 1.0  # before estimating: a cold backlog is 10,000 messages
        plain = DEFAULT_ESTIMATOR.messages(messages)
        if plain <= 0:
            return 1.0
        # Floored so that a degenerate estimate cannot blow the chunks up past the window.
        return max(MIN_PROVIDER_SCALE,
                   engine.estimate_request(messages, model=self.model) / plain)

    def _call(
        self,
        engine: SummaryEngine,
        messages: list[Message],
        tools: list[dict[str, Any]] | None,
        usage: Usage,
        out: int,
    ) -> tuple[str, Usage]:
        try:
            reply = engine.summarize_messages(
                messages, model=self.model, tools=tools, max_tokens=out
            )
        except TimeoutError as exc:
            raise SummarizerError("timeout", f"{type(exc).__name__}: {exc}") from exc
        if reply.tool_calls:
            raise SummarizerError(
                "tool_calls", f"the summary reply called {len(reply.tool_calls)} tool(s)"
            )
        text = (reply.text or "").strip()
        if not text:
            raise SummarizerError("empty", "the summary reply has no text")
        text = shorten_middle(text, DEFAULT_ESTIMATOR.chars_for(out, like=text))
        u = reply.usage or Usage()
        return text, Usage(
            usage.prompt_tokens + u.prompt_tokens,
            usage.completion_tokens + u.completion_tokens,
            usage.cached_tokens + u.cached_tokens,
        )

    # -- request shapes --------------------------------------------------------------

    def _replay(self, request: SummaryRequest) -> list[Message]:
        messages: list[Message] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        if request.previous_summary is not None:
            messages.append(summary_row(request.previous_summary))
            instruction = REPLAY_UPDATE_INSTRUCTION.format(instructions=self.update_instructions)
        else:
            instruction = REPLAY_INSTRUCTION.format(instructions=self.instructions)
        instruction += self._must_include
        messages.extend(request.messages)
        messages.append({"role": "user", "content": instruction})
        return messages

    def _standalone(self, chunk: list[Message], previous: str | None) -> list[Message]:
        turns = _turns_json(chunk)
        if previous is None:
            return [
                {"role": "system", "content": self.instructions + self._must_include},
                {"role": "user", "content": f"Conversation turns (JSON):\n{turns}"},
            ]
        return [
            {"role": "system", "content": self.update_instructions + self._must_include},
            {"role": "user", "content": UPDATE_TEMPLATE.format(previous=previous, turns=turns)},
        ]

    def _bounded_chunks(
        self, messages: list[Message], previous: str | None, limit: int, out: int
    ) -> tuple[list[list[Message]], int]:
        """:meth:`_chunks`, at most ``max_calls`` of them, and how many messages go unread.

        A larger backlog (a cold start over thousands of messages) is shortened, each
        message in the same proportion, until it fits. When even that does not fit, the
        newest messages that fit are read and the oldest go unread — returned, so the
        context manager counts them as dropped rather than summarized. Either is logged.

        Shortening leaves each message at least its share of its length, so a backlog
        that needs more than ``max_calls / MIN_SHARE`` calls cannot fit at any share: its
        count stops there, and only the newest messages that fit are shortened and read.
        The work follows what is read, not the backlog's length.
        """
        bound = self.params.max_calls
        hopeless = math.floor(bound / MIN_SHARE) + 1
        room = self._chunk_room(previous, limit, out)
        if _least_tokens(messages, room) > bound * room:
            needed = hopeless  # known from the lengths alone: nothing is encoded for it
        else:
            chunks = self._chunks(messages, previous, limit, out, stop_after=hopeless)
            needed = len(chunks)
        share = 1.0
        unread = 0
        if needed >= hopeless:
            share = MIN_SHARE
            chunks, unread = self._newest_chunks(messages, previous, limit, out, bound)
        while len(chunks) > bound and share > MIN_SHARE:
            share = max(MIN_SHARE, share * bound / len(chunks) * 0.9)
            shorter = [_shortened(m, share) for m in messages]
            chunks = self._chunks(shorter, previous, limit, out)
        if len(chunks) > bound:
            unread = sum(len(c) for c in chunks[: len(chunks) - bound])
            chunks = chunks[len(chunks) - bound :]
        if needed > len(chunks) or unread:
            log.warning(
                "summarizer llm: %d folded messages needed %s calls (max_calls %d): each "
                "shortened to %.0f%% of its length, %d oldest unread; %d call(s)",
                len(messages), f"over {needed - 1}" if needed >= hopeless else needed,
                bound, share * 100, unread, len(chunks),
            )
        return chunks, unread

    def _chunks(
        self, messages: list[Message], previous: str | None, limit: int, out: int,
        stop_after: int | None = None,
    ) -> list[list[Message]]:
        """Split ``messages`` into runs whose standalone request fits ``limit`` tokens
        (``stop_after``: stop once that many runs are started)."""
        room = self._chunk_room(previous, limit, out)
        first = self._first_room(previous, limit, out)
        chunks: list[list[Message]] = [[]]
        used = 0
        for message in messages:
            item = _fit(message, room)
            tokens = _item_cost(item)
            if chunks[-1] and used + tokens > (first if len(chunks) == 1 else room):
                if stop_after is not None and len(chunks) >= stop_after:
                    break
                chunks.append([])
                used = 0
            chunks[-1].append(item)
            used += tokens
        return [c for c in chunks if c] or [[]]

    def _newest_chunks(
        self, messages: list[Message], previous: str | None, limit: int, out: int, bound: int
    ) -> tuple[list[list[Message]], int]:
        """The newest ``messages`` that fill ``bound`` runs once shortened to
        :data:`MIN_SHARE`, packed from the newest back, and how many older ones are left."""
        room = self._chunk_room(previous, limit, out)
        chunks: list[list[Message]] = [[]]
        used = 0
        taken = 0
        for message in reversed(messages):
            item = _fit(_shortened(message, MIN_SHARE), room)
            tokens = _item_cost(item)
            if chunks[-1] and used + tokens > room:
                if len(chunks) == bound:
                    break
                chunks.append([])
                used = 0
            chunks[-1].append(item)
            used += tokens
            taken += 1
        ordered = [list(reversed(c)) for c in reversed(chunks) if c]
        return ordered or [[]], len(messages) - taken

    def _chunk_room(self, previous: str | None, limit: int, out: int) -> int:
        """Tokens of folded turns any call takes once its prompt, framing and the running
        summary are counted: the summary it carries is the one the fold began with or one
        an earlier call wrote, at most ``out`` tokens."""
        fixed = DEFAULT_ESTIMATOR.text(self.update_instructions) + 64
        fixed += max(DEFAULT_ESTIMATOR.text(previous or ""), out)
        return max(256, limit - fixed)

    def _first_room(self, previous: str | None, limit: int, out: int) -> int:
        """Tokens of folded turns the fold's first call takes: it carries the running
        summary as it is, so a summary shorter than ``out`` leaves it the difference
        (most folds make one call; reserving ``out`` there left a quarter of it empty)."""
        fixed = DEFAULT_ESTIMATOR.text(self.update_instructions) + 64
        fixed += DEFAULT_ESTIMATOR.text(previous or "")
        return max(256, limit - fixed, self._chunk_room(previous, limit, out))

    @staticmethod
    def _cost(message: Message, room: int) -> int:
        """What ``message`` adds to a call whose turns may take ``room`` tokens."""
        return _item_cost(_fit(message, room))


def _must_include(identifiers: tuple[str, ...]) -> str:
    if not identifiers:
        return ""
    return MUST_INCLUDE_NOTE.format(identifiers="; ".join(identifiers))


def _least_tokens(messages: list[Message], room: int) -> int:
    """A floor under what ``messages`` cost a summarizer's calls even shortened to
    :data:`MIN_SHARE`, from their lengths alone (one ``len`` each): a string content
    keeps at least its shortened length in the call's JSON, and a message cut to fit a
    call (:func:`_fit`) keeps about half of ``room``. Other contents, and text that is
    itself JSON (re-encoded, it may come out shorter), count nothing."""
    per_token = DEFAULT_ESTIMATOR.chars_per_token
    least = 0
    for message in messages:
        content = message.get("content")
        if not isinstance(content, str) or content[:1] in ("{", "["):
            continue
        size = len(content)
        if size >= 200:
            size = min(size, max(80, int(size * MIN_SHARE)))
        least += min(size // per_token, room // 4)
    return least


COST_MEMO_SIZE = 256
"""Messages whose JSON row is remembered at once (then the memo starts afresh)."""

_rows: IdentityMemo[tuple[str, int]] = IdentityMemo(COST_MEMO_SIZE)


def _row(item: Message) -> tuple[str, int]:
    """An already fitted message as the call's JSON carries it, and what it adds to the
    call's turns in estimated tokens.

    A fold's messages are costed when the boundary plans the fold (twice), again when
    they are chunked, and encoded once more in the call itself; encoding one means a
    JSON tool result parsed first. So the row is remembered per message object, its
    content and tool calls the witnesses (either replaced: encoded afresh), and the call
    is joined from the rows its costs were taken from.
    """
    content, calls = item.get("content"), item.get("tool_calls")
    found = _rows.get(item, content, calls)
    if found is not None:
        return found
    row = json.dumps(_turn_row(item), ensure_ascii=False)
    return _rows.put(item, (row, DEFAULT_ESTIMATOR.text(f"[{row}]")), content, calls)


def _item_cost(item: Message) -> int:
    """What an already fitted message adds to a call's turns, in estimated tokens."""
    return _row(item)[1]


def _turns_json(messages: list[Message]) -> str:
    """The call's turns: a JSON array of the messages' rows (:func:`_row`), the text
    ``json.dumps`` gives the list of them."""
    return "[" + ", ".join(_row(m)[0] for m in messages) + "]"


def _turn_row(m: Message) -> dict[str, Any]:
    row: dict[str, Any] = {"role": m.get("role"), "content": _json_value(m.get("content"))}
    if m.get("tool_calls"):
        row["tool_calls"] = [
            {
                "name": (c.get("function") or {}).get("name"),
                "arguments": (c.get("function") or {}).get("arguments"),
            }
            for c in m["tool_calls"]
            if isinstance(c, dict)
        ]
    if m.get("name"):
        row["name"] = m["name"]
    return row


def _json_value(content: Any) -> Any:
    """``content`` as the summary call's JSON carries it: a text that is itself a JSON
    object or array (most tool output) is embedded as that value.

    As a string, every quote of it would be escaped: JSON tool output grew by a quarter,
    and a call read a quarter less of it. Any other content stays as it is.
    """
    if not isinstance(content, str) or content[:1] not in ("{", "["):
        return content
    try:
        value = json.loads(content)
    except ValueError:
        return content
    return value if isinstance(value, (dict, list)) else content


def _shortened(message: Message, share: float) -> Message:
    """``message`` with its text content cut to ``share`` of its length (head and tail)."""
    content = message.get("content")
    if not isinstance(content, str) or len(content) < 200:
        return message
    return {**message, "content": shorten_middle(content, max(80, int(len(content) * share)))}


def _fit(message: Message, room: int) -> Message:
    content = message.get("content")
    if not isinstance(content, str) or DEFAULT_ESTIMATOR.text(content) <= room // 2:
        return message
    keep = DEFAULT_ESTIMATOR.chars_for(room // 2, like=content)
    return {**message, "content": shorten_middle(content, keep)}


class DropSummarizer:
    """Discards the folded turns: no model call, no summary block."""

    calls_model = False

    def __init__(self, params: BaseModel, ctx: BindContext) -> None:
        self.params = params

    def summarize(self, request: SummaryRequest, engine: SummaryEngine | None) -> SummaryResult:
        """Return "no summary": the context manager keeps only the recent turns."""
        return SummaryResult(text=None, model=None, model_source="drop", llm_calls=0)
