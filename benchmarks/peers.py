"""The peers, each behind the same two calls as mas-lab's strategies.

A :class:`Strategy` sees the session the way an agent loop does: ``request(user,
working)`` before every model call returns the OpenAI messages that would be sent (system
first), and ``commit(turn)`` appends a finished turn. Peers keep their own message
objects; requests are converted back to OpenAI dicts only to be scored.

Every import of a peer package happens inside its constructor, so mas-lab's own figures
run without the peers installed.
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from typing import Any

from benchmarks.counting import BUDGET, COUNTER, FakeSummarizer

Message = dict[str, Any]


class Strategy(ABC):
    """What the harness calls. ``summarizer`` is the fake model, when the strategy has one."""

    name = ""
    config = ""
    summarizer: FakeSummarizer | None = None

    @abstractmethod
    def request(self, user: Message, working: list[Message]) -> list[Message]:
        """OpenAI messages of the next model call."""

    @abstractmethod
    def commit(self, turn: list[Message]) -> None:
        """Append a finished turn (user message, tool rounds, answer)."""


# -- LangChain message conversion -----------------------------------------------------


class _LangChain:
    """OpenAI dict <-> LangChain message, with per-object token counts cached."""

    def __init__(self) -> None:
        from langchain_core import messages as lc

        self.lc = lc
        self._made: dict[int, Any] = {}

    def to_lc(self, message: Message) -> Any:
        """The LangChain message for ``message`` (the same object for the same dict)."""
        key = id(message)
        made = self._made.get(key)
        if made is not None and made[0] is message:
            return made[1]
        lc, role, content = self.lc, message["role"], message.get("content")
        mid = f"m{len(self._made)}"
        if role == "system":
            out = lc.SystemMessage(content=content, id=mid)
        elif role == "user":
            out = lc.HumanMessage(content=content, id=mid)
        elif role == "tool":
            out = lc.ToolMessage(content=content, tool_call_id=message["tool_call_id"], id=mid)
        else:
            calls = [{"id": c["id"], "name": c["function"]["name"],
                      "args": json.loads(c["function"]["arguments"])}
                     for c in message.get("tool_calls") or ()]
            out = lc.AIMessage(content=content or "", tool_calls=calls, id=mid)
        self._made[key] = (message, out)
        return out

    def to_openai(self, message: Any) -> Message:
        """The OpenAI dict of a LangChain message (summaries included)."""
        content = message.content if isinstance(message.content, str) else json.dumps(
            message.content)
        kind = message.type
        if kind == "system":
            return {"role": "system", "content": content}
        if kind == "human":
            return {"role": "user", "content": content}
        if kind == "tool":
            return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
        out: Message = {"role": "assistant", "content": content or None}
        if getattr(message, "tool_calls", None):
            out["tool_calls"] = [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}
                for c in message.tool_calls
            ]
        return out

    def counter(self, messages: Any) -> int:
        """The shared counter over LangChain messages, recomputed on every call.

        This is what ``count_tokens_approximately`` (also chars/4 + 3 per message) does;
        peers get no per-message cache they do not have.
        """
        return sum(COUNTER.message(self.to_openai(m)) for m in messages)

    def fake_model(self, fake: FakeSummarizer) -> Any:
        """A LangChain chat model answering through ``fake``."""
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.outputs import ChatGeneration, ChatResult

        bridge = self

        class FakeSummaryModel(BaseChatModel):
            """Benchmark double: counts calls and input tokens."""

            @property
            def _llm_type(self) -> str:
                return "bench-fake-summarizer"

            def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                          **kwargs: Any) -> Any:
                texts = [m.content for m in messages if isinstance(m.content, str)]
                tokens = bridge.counter(messages)
                text = fake.answer(texts, tokens, kwargs.get("max_tokens"))
                return ChatResult(generations=[ChatGeneration(
                    message=bridge.lc.AIMessage(content=text))])

        return FakeSummaryModel()


# -- the peers ------------------------------------------------------------------------


class TrimMessages(Strategy):
    """langchain-core ``trim_messages`` over the whole history on every call."""

    name = "langchain-core trim_messages"
    config = ('strategy="last", max_tokens=8000, start_on="human", end_on=("human", "tool"), '
              "include_system=True, allow_partial=False")

    def __init__(self, system: str) -> None:
        from langchain_core.messages import trim_messages

        self.trim = trim_messages
        self.conv = _LangChain()
        self.history = [self.conv.to_lc({"role": "system", "content": system})]

    def request(self, user: Message, working: list[Message]) -> list[Message]:
        """Trim system + history + current turn to the budget."""
        live = self.history + [self.conv.to_lc(m) for m in (user, *working)]
        kept = self.trim(live, max_tokens=BUDGET, token_counter=self.conv.counter,
                         strategy="last", start_on="human", end_on=("human", "tool"),
                         include_system=True, allow_partial=False)
        return [self.conv.to_openai(m) for m in kept]

    def commit(self, turn: list[Message]) -> None:
        """Keep every message (the caller owns the full list)."""
        self.history.extend(self.conv.to_lc(m) for m in turn)


class LangmemSummary(Strategy):
    """langmem ``summarize_messages`` with its ``RunningSummary`` carried between calls."""

    name = "langmem summarize_messages"
    config = "max_tokens=8000, max_summary_tokens=256 (default), running summary carried"

    def __init__(self, system: str) -> None:
        from langmem.short_term import summarize_messages

        self.summarize = summarize_messages
        self.conv = _LangChain()
        self.summarizer = FakeSummarizer()
        self.model = self.conv.fake_model(self.summarizer)
        self.system = self.conv.to_lc({"role": "system", "content": system})
        self.history: list[Any] = []
        self.running: Any = None

    def request(self, user: Message, working: list[Message]) -> list[Message]:
        """Summarize what no longer fits, carrying the running summary."""
        live = [self.system, *self.history, *(self.conv.to_lc(m) for m in (user, *working))]
        result = self.summarize(live, running_summary=self.running, model=self.model,
                                max_tokens=BUDGET, token_counter=self.conv.counter)
        self.running = result.running_summary
        return [self.conv.to_openai(m) for m in result.messages]

    def commit(self, turn: list[Message]) -> None:
        """Keep every message; the running summary marks what is folded."""
        self.history.extend(self.conv.to_lc(m) for m in turn)


class SummarizationMiddlewarePeer(Strategy):
    """langchain ``SummarizationMiddleware.before_model`` on an agent state."""

    name = "langchain SummarizationMiddleware"
    config = 'trigger=("tokens", 7000), keep=("messages", 20) (default), ' \
             "trim_tokens_to_summarize=4000 (default)"

    def __init__(self, system: str) -> None:
        from langchain.agents.middleware import SummarizationMiddleware

        self.conv = _LangChain()
        self.summarizer = FakeSummarizer()
        self.middleware = SummarizationMiddleware(
            self.conv.fake_model(self.summarizer), trigger=("tokens", BUDGET - 1_000),
            token_counter=self.conv.counter,
        )
        self.system = self.conv.to_lc({"role": "system", "content": system})
        self.state: list[Any] = []

    def request(self, user: Message, working: list[Message]) -> list[Message]:
        """Run the middleware on the state as it is before this model call."""
        live = [*self.state, *(self.conv.to_lc(m) for m in (user, *working))]
        update = self.middleware.before_model({"messages": live}, None)  # type: ignore[arg-type]
        if update is not None:
            kept = update["messages"][1:]  # first entry is RemoveMessage(REMOVE_ALL)
            added = len(live) - len(self.state)
            self.state = kept[: len(kept) - added] if added <= len(kept) else []
            live = kept
        return [self.conv.to_openai(m) for m in (self.system, *live)]

    def commit(self, turn: list[Message]) -> None:
        """Append the turn to the agent state."""
        self.state.extend(self.conv.to_lc(m) for m in turn)


class _AutogenContext(Strategy):
    """An autogen-core ``ChatCompletionContext`` fed the session as autogen messages."""

    def __init__(self, system: str) -> None:
        from autogen_core import FunctionCall
        from autogen_core import models as am

        self.am, self.call = am, FunctionCall
        self.system = {"role": "system", "content": system}
        self.context = self.make()
        self.loop = asyncio.new_event_loop()
        self._added: dict[int, Any] = {}
        self._tokens: dict[int, tuple[Any, int]] = {}

    @abstractmethod
    def make(self) -> Any:
        """The context under test."""

    def to_autogen(self, messages: list[Message]) -> list[Any]:
        """Autogen messages: parallel tool results become one result message."""
        am, out = self.am, []
        for m in messages:
            if m["role"] == "user":
                out.append(am.UserMessage(content=m["content"], source="user"))
            elif m["role"] == "assistant" and m.get("tool_calls"):
                out.append(am.AssistantMessage(content=[
                    self.call(id=c["id"], name=c["function"]["name"],
                              arguments=c["function"]["arguments"])
                    for c in m["tool_calls"]], source="agent"))
            elif m["role"] == "assistant":
                out.append(am.AssistantMessage(content=m["content"] or "", source="agent"))
            elif out and isinstance(out[-1], am.FunctionExecutionResultMessage):
                out[-1].content.append(am.FunctionExecutionResult(
                    content=m["content"], call_id=m["tool_call_id"], name="", is_error=False))
            else:
                out.append(am.FunctionExecutionResultMessage(content=[am.FunctionExecutionResult(
                    content=m["content"], call_id=m["tool_call_id"], name="", is_error=False)]))
        return out

    def to_openai(self, message: Any) -> list[Message]:
        """OpenAI dicts of one autogen message."""
        am = self.am
        if isinstance(message, am.UserMessage):
            return [{"role": "user", "content": message.content}]
        if isinstance(message, am.FunctionExecutionResultMessage):
            return [{"role": "tool", "tool_call_id": r.call_id, "content": r.content}
                    for r in message.content]
        if isinstance(message.content, list):
            return [{"role": "assistant", "content": None, "tool_calls": [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments}}
                for c in message.content]}]
        return [{"role": "assistant", "content": message.content}]

    def tokens(self, messages: Any) -> int:
        """The shared counter over autogen messages, cached per object.

        The context re-counts the whole list after every single removal, which is
        quadratic; without the cache a 500-turn session takes far longer than the run.
        """
        total = 0
        for message in messages:
            hit = self._tokens.get(id(message))
            if hit is None or hit[0] is not message:
                hit = (message, COUNTER.messages(self.to_openai(message)))
                self._tokens[id(message)] = hit
            total += hit[1]
        return total

    def request(self, user: Message, working: list[Message]) -> list[Message]:
        """Add what is new this turn to the context, then read it back."""
        turn = [user, *working]
        done = self._added.get(id(user), 0)
        batch = self.to_autogen(turn)
        # A tool round adds its assistant call and its results as whole messages.
        for message in batch[done:]:
            self.loop.run_until_complete(self.context.add_message(message))
        self._added[id(user)] = len(batch)
        got = self.loop.run_until_complete(self.context.get_messages())
        return [self.system, *(m for g in got for m in self.to_openai(g))]

    def commit(self, turn: list[Message]) -> None:
        """Add the final answer (the rest was added call by call)."""
        done = self._added.pop(id(turn[0]), 0)
        for message in self.to_autogen(turn)[done:]:
            self.loop.run_until_complete(self.context.add_message(message))


class AutogenTokenLimited(_AutogenContext):
    """autogen-core ``TokenLimitedChatCompletionContext(token_limit=8000)``."""

    name = "autogen-core TokenLimitedChatCompletionContext"
    config = "token_limit=8000 (system message sent outside the context)"

    def make(self) -> Any:
        """The token-limited context over a counting-only model client."""
        from autogen_core.model_context import TokenLimitedChatCompletionContext

        return TokenLimitedChatCompletionContext(_counting_client(self), token_limit=BUDGET)


class AutogenBuffered(_AutogenContext):
    """autogen-core ``BufferedChatCompletionContext(buffer_size=20)``."""

    name = "autogen-core BufferedChatCompletionContext"
    config = "buffer_size=20"

    def make(self) -> Any:
        """The buffered context."""
        from autogen_core.model_context import BufferedChatCompletionContext

        return BufferedChatCompletionContext(buffer_size=20)


def _counting_client(owner: _AutogenContext) -> Any:
    """A ``ChatCompletionClient`` whose only working methods count tokens."""
    from autogen_core.models import ChatCompletionClient

    class CountingClient(ChatCompletionClient):  # type: ignore[misc]
        """Counts with the shared counter; never called for completions."""

        def count_tokens(self, messages: Any, *, tools: Any = ()) -> int:
            return owner.tokens(messages)

        def remaining_tokens(self, messages: Any, *, tools: Any = ()) -> int:
            return BUDGET - owner.tokens(messages)

        async def create(self, *a: Any, **k: Any) -> Any:
            raise NotImplementedError

        def create_stream(self, *a: Any, **k: Any) -> Any:
            raise NotImplementedError

        async def close(self) -> None:
            return None

        def actual_usage(self) -> Any:
            raise NotImplementedError

        def total_usage(self) -> Any:
            raise NotImplementedError

        @property
        def capabilities(self) -> Any:
            return {}

        @property
        def model_info(self) -> Any:
            return {"vision": False, "function_calling": True, "json_output": False,
                    "family": "unknown", "structured_output": False}

    CountingClient.__abstractmethods__ = frozenset()
    return CountingClient()


PEERS = (TrimMessages, LangmemSummary, SummarizationMiddlewarePeer, AutogenTokenLimited,
         AutogenBuffered)
"""Every peer class, in report order."""
