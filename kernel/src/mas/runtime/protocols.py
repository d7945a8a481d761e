"""Small typed contracts that bound objects follow.

pluggy is for discovery and cross-cutting hooks; a bound strategy is called directly
through one of these Protocols. Factories registered for a kind are called as
``factory(params, ctx)`` with the validated ``Params`` and a :class:`BindContext`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from mas.runtime.runtime import Runtime
    from mas.runtime.spec.model_ref import ModelChoice, ModelScope

Message = dict[str, Any]
"""An OpenAI chat message, exactly as LiteLLM takes it."""


@dataclass(frozen=True)
class Usage:
    """Token usage of one model call as the provider reported it.

    :ivar prompt_tokens: input tokens, cached ones included.
    :ivar completion_tokens: output tokens.
    :ivar cached_tokens: input tokens served from the provider's prefix cache.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class ModelReply:
    """What a model call returned, reduced to what the runtime uses.

    :ivar text: the assistant message text ('' when it only called tools).
    :ivar tool_calls: OpenAI ``tool_calls`` entries, possibly empty.
    :ivar usage: provider usage, or ``None`` when the provider reported none.
    :ivar model: the model string that answered.
    :ivar cost: estimated cost in USD, ``None`` when unpriced.
    :ivar cache_hit: served from the response cache (no provider call).
    """

    text: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage | None = None
    model: str = ""
    cost: float | None = None
    cache_hit: bool = False


@runtime_checkable
class SummaryEngine(Protocol):
    """The out-of-band model call a summarizer makes (``engine.summarize_messages``).

    It is not an agent turn: no tool dispatch, no ReAct loop. Each call counts against
    ``spec.budget.max_llm_calls``.
    """

    def summarize_messages(
        self,
        messages: list[Message],
        *,
        model: str,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """Send ``messages`` to ``model`` and return its reply."""
        ...


@runtime_checkable
class ChatEngine(Protocol):
    """A model call the runtime makes outside an agent turn (a judge vote, say).

    Calls go through the same engine as agent turns: response cache, cost accounting,
    events and ``spec.budget.max_llm_calls`` all apply.
    """

    def complete(
        self,
        messages: list[Message],
        *,
        model: str,
        temperature: float | None = None,
        seed: int | None = None,
        max_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> ModelReply:
        """Send ``messages`` to ``model`` and return its reply."""
        ...


@dataclass
class BindContext:
    """What a factory needs to know about the agent it is being bound into.

    :ivar runtime: the runtime (registries, events).
    :ivar agent_name: ``metadata.name`` of the agent.
    :ivar model_scope: every model slot in force, for resolving model references.
    :ivar turn_model: the agent's resolved turn model and its source.
    :ivar pin_activated: ``spec.context_sources.pin_activated``.
    :ivar source: the manifest file, for error messages.
    :ivar location: YAML path of the binding, for error messages.
    """

    runtime: Runtime
    agent_name: str
    model_scope: ModelScope
    turn_model: ModelChoice
    pin_activated: bool = True
    source: str = "<string>"
    location: str = ""

    def at(self, *keys: str) -> BindContext:
        """A copy whose ``location`` is extended by ``keys`` (for nested bindings)."""
        location = ".".join([self.location, *keys]) if self.location else ".".join(keys)
        return replace(self, location=location)
