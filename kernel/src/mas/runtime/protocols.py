"""Small typed contracts that bound objects follow.

pluggy is for discovery and cross-cutting hooks; a bound strategy is called directly
through one of these Protocols. Factories registered for a kind are called as
``factory(params, ctx)`` with the validated ``Params`` and a :class:`BindContext`.

History management (the agent session loop's side)::

    history = History()                                  # committed messages
    request = prepare_request(cm=cm, history=history, parts=parts,
                              current_input=user_msg, working_memory=wm, tools=tools,
                              window=window, reserve=reserve, engine=engine,
                              runtime=runtime, session_id=sid)   # mas.runtime.context
    ... call the model with request.messages / request.tools ...
    history.extend(turn_messages); cm.commit(history)    # write-back after the turn

``prepare_request`` calls :meth:`ContextManager.manage_history` before each model call;
``cm.to_state()`` / ``cm.load_state()`` and ``History.to_state()`` save a session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from mas.runtime.errors import MasError

if TYPE_CHECKING:
    from mas.runtime.context.accounting import FoldLedger
    from mas.runtime.context.budget import BudgetSettings, ContextBudget
    from mas.runtime.context.history import History
    from mas.runtime.runtime import Runtime
    from mas.runtime.spec.model_ref import ModelChoice, ModelScope

Message = dict[str, Any]
"""An OpenAI chat message, exactly as LiteLLM takes it."""


@dataclass(frozen=True)
class Usage:
    """Token usage of one model call as the provider reported it.

    :ivar prompt_tokens: input tokens, cache reads and cache writes included.
    :ivar completion_tokens: output tokens.
    :ivar cached_tokens: input tokens served from the provider's prefix cache.
    :ivar cache_write_tokens: input tokens the provider wrote to its prefix cache
        (Anthropic bills them at a premium); 0 when it reported none.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0

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
    :ivar cut_chars: characters cut from the request, marked, so that it fit the model's
        window: before sending, when the engine knew the window, or after the provider
        refused it whole (0: sent whole).
    """

    text: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage | None = None
    model: str = ""
    cost: float | None = None
    cache_hit: bool = False
    cut_chars: int = 0


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
class SizingEngine(Protocol):
    """An engine that can say how its provider will count a request and how large a
    model's window is, so a caller sizes requests before sending them (the summarizer
    chunks with it). :class:`~mas.runtime.engine.Engine` is one; a test double need not be.
    """

    def estimate_request(
        self,
        messages: list[Message],
        *,
        model: str,
        tools: list[dict[str, Any]] | None = None,
    ) -> int:
        """Prompt tokens ``model``'s provider is expected to count for ``messages``."""
        ...

    def window_for(self, model: str, purpose: str = "turn") -> int | None:
        """The input window a ``purpose`` request to ``model`` is sized to (``None``:
        nobody describes the model)."""
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


# --------------------------------------------------------------------------------------
# History management: what a bound context manager and its summarizer look like.
#
# The agent session holds a ``mas.runtime.context.History`` (committed messages) and, for
# every model call of a turn, calls ``mas.runtime.context.prepare_request(...)``, which
# asks the bound ContextManager for ``manage_history(history, budget, ...)`` and then
# assembles and trims the request. After the turn the session appends the turn's
# messages to the history and calls ``cm.commit(history)`` so the folded prefix is
# dropped (write-back). ``cm.to_state()`` / ``cm.load_state()`` save and restore the
# manager's own state (running summary, retained skills, compaction marker, metadata).
# --------------------------------------------------------------------------------------


class SummarizerError(MasError):
    """A summarizer could not produce a usable summary; the context manager falls back.

    :ivar kind: ``exception``, ``timeout``, ``empty`` (no text), ``tool_calls`` (the
        reply called tools) or ``no_engine``.
    :ivar reason: one readable line.
    """

    def __init__(self, kind: str, reason: str) -> None:
        self.kind = kind
        self.reason = reason
        super().__init__(f"{kind}: {reason}")


@dataclass(frozen=True)
class SummaryRequest:
    """What a context manager hands its summarizer when it folds old turns.

    :ivar messages: the folded messages, oldest first, skill bodies already replaced by
        ``[skill content retained verbatim: <name>]``.
    :ivar previous_summary: the running summary so far, to be updated (``None`` at first).
    :ivar system: the agent's current system message text (for prefix-cache replay).
    :ivar tools: the agent's current ``tools`` schemas (for prefix-cache replay).
    :ivar window: the agent's resolved input window, the fallback bound on the
        summarizer's own input when its model's window is unknown.
    :ivar session_id: the session being compacted.
    :ivar max_summary_tokens: the room the context manager has for the summary block;
        a summarizer keeps its summary within it (``None``: its own cap only).
    :ivar must_include: identifiers the summary must quote verbatim (the identifier
        check's re-ask lists what a first summary left out).
    """

    messages: list[Message]
    previous_summary: str | None = None
    system: str | None = None
    tools: list[dict[str, Any]] | None = None
    window: int | None = None
    session_id: str = ""
    max_summary_tokens: int | None = None
    must_include: tuple[str, ...] = ()


@dataclass(frozen=True)
class SummaryResult:
    """What a summarizer produced.

    :ivar text: the new running summary; ``None`` means "drop the prefix, keep no summary".
    :ivar model: the model that wrote it (``None`` when no model was called).
    :ivar model_source: the field that chose that model (spec 000 sources).
    :ivar llm_calls: model calls made (0 for ``drop``).
    :ivar usage: provider usage summed over those calls, when reported.
    :ivar unread_messages: how many of the oldest folded messages the summary was written
        without reading (a call bound was reached); the context manager counts them as
        dropped, not summarized.
    """

    text: str | None
    model: str | None = None
    model_source: str | None = None
    llm_calls: int = 0
    usage: Usage | None = None
    unread_messages: int = 0


@runtime_checkable
class Summarizer(Protocol):
    """A summarizer sub-plugin (``llm``, ``drop``, or a third party's).

    Built by ``factory(params, ctx)``; called by a context manager, never by pluggy.
    """

    def summarize(self, request: SummaryRequest, engine: SummaryEngine | None) -> SummaryResult:
        """Fold ``request.messages`` (and the previous summary) into a new summary.

        :raises SummarizerError: (or any exception) when no usable summary came back; the
            context manager then keeps the messages and emits ``compaction.exception``.
        """
        ...


@dataclass(frozen=True)
class ArchiveSettings:
    """What a context manager asks of the session's archive (its ``archive``/``recall`` params).

    :ivar enabled: keep folded messages in the archive at all.
    :ivar max_messages: messages kept at most (oldest evicted first).
    :ivar max_bytes: bytes of message JSON kept at most.
    :ivar recall: offer the model the ``recall_context`` tool.
    :ivar recall_max_tokens: tokens one recall returns at most.
    """

    enabled: bool = True
    max_messages: int = 20_000
    max_bytes: int = 64 * 1024 * 1024
    recall: bool = False
    recall_max_tokens: int = 2_000


@runtime_checkable
class ArchivingManager(Protocol):
    """A context manager that stores what it folds in an archive the session attaches."""

    archive_settings: ArchiveSettings

    def attach_archive(self, archive: Any) -> None:
        """Use ``archive`` (a :class:`~mas.runtime.context.archive.Archive`) from now on."""
        ...


@runtime_checkable
class IdentifierExtractor(Protocol):
    """Finds the identifiers a summary of some messages must keep (codes, amounts, ...)."""

    def extract(self, messages: list[Message]) -> list[str]:
        """Distinct identifiers in ``messages``, in order of first appearance."""
        ...


@dataclass(frozen=True)
class ManagedHistory:
    """The bounded history a context manager returns for one model call.

    :ivar messages: summary row (if any), retained skill rows (if sent), recent messages:
        a list, or a :class:`~mas.runtime.context.HistoryView` of the committed history
        (read-only, no copy).
    :ivar tokens: estimated tokens of ``messages``.
    :ivar summary_rows: how many leading rows are the summary block (0 or 1).
    :ivar skill_rows: indexes into ``messages`` of retained skill rows (never trimmed).
    :ivar compacted: a compaction completed on this call (prune and/or fold); a failed
        one reports ``False`` (its ``compaction.exception`` event says why).
    :ivar llm_called: the summarizer called a model on this call.
    :ivar metadata: the compaction metadata when ``compacted``; after a failed compaction
        what was tried, with ``failed: true`` and the failure's ``kind``; else ``None``.
    :ivar message_tokens: per-message estimates aligned with ``messages`` when the manager
        has them cached (the final trim then skips re-estimating); ``None`` otherwise. Any
        sequence: a manager may hand a lazy view rather than copy its estimates each call.
    :ivar ledger: what the manager has folded out of live history, summarized or dropped
        (``None``: everything it left out counts as dropped by its policy).
    """

    messages: Sequence[Message]
    tokens: int
    summary_rows: int = 0
    skill_rows: tuple[int, ...] = ()
    compacted: bool = False
    llm_called: bool = False
    metadata: dict[str, Any] | None = None
    message_tokens: Sequence[int] | None = None
    ledger: FoldLedger | None = None

    @property
    def leading_rows(self) -> int:
        """Rows before the live committed messages (summary block, retained skill rows)."""
        return self.summary_rows + len(self.skill_rows)


@runtime_checkable
class ContextManager(Protocol):
    """A bound history strategy (``summarising``, ``sliding_window``, ``stack``, ...).

    Built by ``factory(params, ctx)``. ``budget_settings`` carries the manager's trimmer
    and trigger params into :meth:`~mas.runtime.context.budget.ContextBudget.compute`.

    Optional members, read with ``getattr``: ``check_budget(budget)`` is called once the
    agent's budget is resolved (compile, validate, every new session) to warn about
    settings that budget overrides; ``tail`` (a dict of ints, or ``None``) is the
    verbatim tail the latest compaction kept, shown by ``inspect``.
    """

    budget_settings: BudgetSettings

    def manage_history(
        self,
        history: History,
        budget: ContextBudget,
        *,
        engine: SummaryEngine | None = None,
        system: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        session_id: str = "",
    ) -> ManagedHistory:
        """Bound ``history`` for the next model call; may prune it in place.

        Must never split a tool group, never lose a committed message on failure, and
        leave the newest messages byte-identical. Called before every model call.
        """
        ...

    def commit(self, history: History) -> None:
        """Write back after a turn: drop from ``history`` what the manager has folded."""
        ...

    @property
    def last_compaction_metadata(self) -> dict[str, Any] | None:
        """Metadata of the latest compaction (model, model_source, estimated_tokens, ...)."""
        ...

    def to_state(self) -> dict[str, Any]:
        """The manager's own state as JSON-serializable data."""
        ...

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore state saved by :meth:`to_state`."""
        ...


# --------------------------------------------------------------------------------------
# Eval metrics (kind ``eval_metric``), scored by mas-library-eval.
# --------------------------------------------------------------------------------------


@runtime_checkable
class Metric(Protocol):
    """A bound eval metric, built by ``factory(params, ctx)`` (``ctx`` may be ``None``).

    ``kind`` says who scores it: ``"judge"`` metrics are put to the jury
    (mas-library-eval's ``JudgeMetric``); ``"computed"`` ones also have ``compute(run)``.
    ``id`` is the key in ``metrics.json`` (MCE's display id for stock metrics), which may
    differ from the registered lower_snake_case name.
    """

    @property
    def id(self) -> str:
        """Key of the metric in ``metrics.json``."""
        ...

    @property
    def kind(self) -> str:
        """``"judge"`` or ``"computed"``."""
        ...

    @property
    def description(self) -> str:
        """What the metric judges or counts, one line."""
        ...

    @property
    def inputs(self) -> tuple[str, ...]:
        """What the metric reads from a run (``transcript``, ``events``, ``expected_facts``)."""
        ...

    def missing_input(self, run: Any) -> str | None:
        """Why ``run`` (a stored session) cannot be scored, or ``None`` when it can."""
        ...


# --------------------------------------------------------------------------------------
# Lab pipeline steps (``experiment.application.post[]``), run by mas-library-lab.
# --------------------------------------------------------------------------------------


@dataclass
class StepResult:
    """What a lab step produced.

    :ivar outputs: files it wrote, relative to the run folder.
    :ivar metadata: JSON-serializable facts stored on the step record (e.g. ``judge_model``).
    :ivar message: one line for the terminal.
    """

    outputs: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    message: str = ""


@runtime_checkable
class Step(Protocol):
    """A lab pipeline step, built by ``factory(params, spec)`` from its ``config:`` block.

    ``ctx`` is the lab's ``StepContext`` (run folder, experiment, runtime, results of the
    steps it depends on). A step fails by raising; its dependents are then skipped.
    """

    def outputs(self, ctx: Any) -> list[str]:
        """Files (relative to the run folder) the step writes; all present = skip it."""
        ...

    def run(self, ctx: Any) -> StepResult:
        """Do the work and say what was written."""
        ...
