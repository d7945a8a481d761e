"""The engine: the one place mas calls a model, always through ``litellm.completion``.

Every call — agent turn, summary, judge vote — goes through :meth:`Engine.call`: budget
check, response-cache probe, the live call with retries, usage and cost accounting, and an
``llm.call`` event (numbers only: never prompt text, never keys).

The engine holds the session's settings and runs that sequence; sending one request
(sized to the window, retried) is :mod:`~mas.runtime.engine._request`'s job, and what
each call leaves in the ledger and the events is :mod:`~mas.runtime.engine._accounting`'s.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from mas.runtime.context.calibration import Calibration
from mas.runtime.degradation import Degradation
from mas.runtime.engine import _accounting, _litellm, _request, _retry, _window
from mas.runtime.engine._backoff import SummaryBackoff
from mas.runtime.engine.cache import LAYER, ResponseCache, ResponseCacheMissError, request_key
from mas.runtime.engine.cost import UsageLedger
from mas.runtime.errors import BudgetExceededError
from mas.runtime.events import Event
from mas.runtime.protocols import Message, ModelReply
from mas.runtime.secrets import error_fields
from mas.runtime.spec.model_ref import map_model, package_default_model
from mas.runtime.spec.windows import resolve_pricing

if TYPE_CHECKING:
    from mas.runtime.catalog import Catalog, Pricing
    from mas.runtime.runtime import Runtime

log = logging.getLogger(__name__)


PURPOSES = ("turn", "summary", "judge")
"""What a call is for, as carried on ``llm.call`` events."""


class Engine:
    """Calls models through LiteLLM for one session, with budget, cache, cost and events.

    :param runtime: the runtime (model providers to install, event fan-out).
    :param model: the agent's turn model (a LiteLLM model string); ``None`` means the
        package default model (``offline/default``).
    :param session_id: put on every event; the ledger is per engine, so one engine per session.
    :param api_base: URL of an OpenAI-compatible server (infra ``generation.api_base``).
    :param api_key: the key itself (read from infra ``generation.api_key_env`` by the caller);
        never logged or emitted.
    :param timeout: seconds one attempt may take in all (infra ``generation.timeout``).
    :param num_retries: extra attempts on 408/409/429/5xx/529, dropped connections and
        unreadable responses (infra ``generation.num_retries``); authentication errors and
        timed-out attempts are never retried.
    :param model_settings: per model string, ``timeout`` and ``num_retries`` overriding
        the two above, and the ``context_window`` summary and judge calls to it are sized
        to (a model row's own settings).
    :param context_window: infra ``generation.context_window``: the window of every model
        whose row sets none. A request whose model's window is known (row, this, or the
        catalog) is sized to it before sending (:meth:`window_for`).
    :param turn_window: the turn row's ``context_window``, for turn calls.
    :param retry_backoff: first wait in seconds between attempts, doubled each time, when
        the server sends no ``Retry-After``.
    :param max_retry_wait: cap on any single wait, ``Retry-After`` included.
    :param max_llm_calls: ``spec.budget.max_llm_calls``; ``None`` for no limit.
    :param max_tokens: output limit sent on turn calls; ``None`` sends none.
    :param cache: the response cache (``infra_llm_cache`` layer), or ``None``.
    :param infra_pricing: infra ``generation.pricing`` (overrides the catalog).
    :param infra_mappings: infra model mappings: manifest model -> deployed model.
    :param catalog: the model catalog for pricing; defaults to the kernel's.
    :param sleep: how to wait between attempts (tests pass a recorder).
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        model: str | None = None,
        session_id: str = "",
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        num_retries: int = 2,
        retry_backoff: float = 0.5,
        max_retry_wait: float = 30.0,
        max_llm_calls: int | None = None,
        max_tokens: int | None = None,
        cache: ResponseCache | None = None,
        infra_pricing: Pricing | Mapping[str, Any] | None = None,
        infra_mappings: Mapping[str, str] | None = None,
        catalog: Catalog | None = None,
        model_settings: Mapping[str, Mapping[str, Any]] | None = None,
        context_window: int | None = None,
        turn_window: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout: must be a positive number of seconds (got {timeout!r})")
        if num_retries < 0:
            raise ValueError(f"num_retries: must be 0 or more (got {num_retries!r})")
        if retry_backoff < 0 or max_retry_wait < 0:
            bad = "retry_backoff" if retry_backoff < 0 else "max_retry_wait"
            value = retry_backoff if retry_backoff < 0 else max_retry_wait
            raise ValueError(f"{bad}: must be 0 or more seconds (got {value!r})")
        if max_llm_calls is not None and max_llm_calls < 1:
            raise ValueError(f"max_llm_calls: must be at least 1 (got {max_llm_calls!r})")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens: must be at least 1 (got {max_tokens!r})")
        for name, window in (("context_window", context_window), ("turn_window", turn_window)):
            if window is not None and window < 1:
                raise ValueError(f"{name}: must be at least 1 (got {window!r})")
        if model is None:
            model = package_default_model()
        self.runtime = runtime
        self.model = model
        self.session_id = session_id
        # One id per engine, given to LiteLLM with each call: the offline model keeps its
        # simulated prefix cache per engine, so no earlier run in this process warms it.
        self.trace_id = uuid.uuid4().hex
        self.api_base = api_base
        self._api_key = api_key
        self.timeout = timeout
        self.max_llm_calls = max_llm_calls
        self.max_tokens = max_tokens
        self.cache = cache
        self.infra_pricing = infra_pricing
        self.infra_mappings = dict(infra_mappings or {})
        self.catalog = catalog
        self.ledger = UsageLedger()
        self.retry_policy = _retry.RetryPolicy(num_retries, retry_backoff, max_retry_wait, sleep)
        self.model_settings = {k: dict(v) for k, v in (model_settings or {}).items()}
        self.context_window = context_window
        self.turn_window = turn_window
        self._windows: dict[tuple[str, bool], int | None] = {}
        self.degradation = Degradation(emit=lambda data: self._emit("degraded", data))
        # Every live reply teaches the calibration of its model (turn, summary, judge).
        self.calibration = Calibration(enabled=True)
        # Learned and read under the model as called, whatever name reached it.
        self.calibration.called = lambda name: map_model(name, self.infra_mappings)
        self.summary_backoff = SummaryBackoff()
        self._lock = threading.Lock()
        self._conversation = threading.local()
        self._pricing: dict[str, Pricing | None] = {}
        self._providers_ready = False

    def __repr__(self) -> str:
        # Never show the key.
        return (
            f"Engine(model={self.model!r}, session_id={self.session_id!r}, "
            f"api_base={self.api_base!r})"
        )

    # ----------------------------------------------------------------------------------
    # The three entry points
    # ----------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Import litellm and install the model providers now rather than on the first call.

        An interactive caller does this before its first prompt: the import takes seconds,
        and an import interrupted half-way (Ctrl-C) leaves modules that cannot be imported
        again in this process.
        """
        self._ensure_providers()

    @contextmanager
    def conversation(self) -> Iterator[None]:
        """Calls made on this thread inside the block are a conversation of their own.

        Each gets its own id for LiteLLM (a real provider never sees it). The offline
        model keeps its simulated prefix cache per id, so concurrent judge votes sharing
        one engine — each a conversation — never warm each other: cached tokens and cost
        then depend on the vote alone, not on thread timing or on which votes ran before
        in this process (issue 26, item 11).
        """
        previous = getattr(self._conversation, "trace_id", None)
        self._conversation.trace_id = uuid.uuid4().hex
        try:
            yield
        finally:
            self._conversation.trace_id = previous

    def conversation_id(self) -> str:
        """The id this thread's calls go out with: its :meth:`conversation`'s, else the
        engine's own ``trace_id``."""
        return getattr(self._conversation, "trace_id", None) or self.trace_id

    def turn(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> ModelReply:
        """One agent-turn model call with the engine's model and ``max_tokens``."""
        return self.call(messages, tools=tools, model=model, max_tokens=self.max_tokens)

    def summarize_messages(
        self,
        messages: list[Message],
        *,
        model: str,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """The summarizer's out-of-band call (:class:`~mas.runtime.protocols.SummaryEngine`).

        Logs ``history summarizer: completing N message(s) model=…`` (with ``(override)``
        when the summary model is not the agent's turn model).
        """
        model = model or self.model
        override = " (override)" if model != self.model else ""
        log.info(
            "history summarizer: completing %d message(s) model=%s%s",
            len(messages), model, override,
        )
        return self.call(
            messages, tools=tools, model=model, max_tokens=max_tokens, purpose="summary"
        )

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
        """A call outside a turn, such as a judge vote (``ChatEngine`` protocol)."""
        return self.call(
            messages,
            model=model or self.model,
            temperature=temperature,
            seed=seed,
            max_tokens=max_tokens,
            response_format=response_format,
            purpose="judge",
        )

    def call(
        self,
        messages: list[Message],
        *,
        model: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        response_format: dict[str, Any] | None = None,
        purpose: str = "turn",
    ) -> ModelReply:
        """Send one request and return the reply; the primitive under the entry points.

        :raises BudgetExceededError: ``max_llm_calls`` calls were already made.
        :raises ResponseCacheMissError: the cache is strict and has no answer.
        :raises ModelCallError: the provider failed after the allowed retries, rejected the
            credentials, or sent an unusable response.
        """
        if purpose not in PURPOSES:
            raise ValueError(f"purpose: must be one of {', '.join(PURPOSES)} (got {purpose!r})")
        requested = model or self.model
        deployed = map_model(requested, self.infra_mappings)
        if purpose == "summary":
            self.summary_backoff.check(deployed)
        self._charge_budget(purpose)
        params = {
            "max_tokens": max_tokens,
            "temperature": temperature,
            "seed": seed,
            "response_format": response_format,
        }
        key = None
        infra_probed = False
        if self.cache is not None:
            key = request_key(deployed, messages, tools, params)
            cached = self.cache.get(key)
            infra_probed = True
            _accounting.lookup_event(self, LAYER, cached is not None, purpose)
            if cached is not None:
                _accounting.count_request(self, hit=True)
                return _accounting.finish_cached(
                    self, cached, requested, purpose, messages, tools)
            if self.cache.strict:
                _accounting.count_request(self, hit=False)
                raise ResponseCacheMissError(
                    f"strict response cache {self.cache.path} has no answer for this {purpose} "
                    f"request to {deployed!r}; record it with strict: false first"
                )
        # The first live call imports litellm (seconds): that is set-up, not the model's
        # latency, so it is timed apart and reported as setup_s.
        setup_started = time.monotonic()
        self._ensure_providers()
        started = time.monotonic()
        try:
            reply, attempts = _request.send(
                self, deployed, messages, tools, params, purpose,
                self.window_for(requested, purpose))
        except Exception as exc:
            if infra_probed:
                _accounting.count_request(self, hit=False)
            if purpose == "summary":
                self.summary_backoff.failed(deployed, f"{type(exc).__name__}: {exc}")
            # A failed call is a call too: listeners (the OpenTelemetry spans) see it.
            self._emit("llm.error", {
                "model": deployed, "requested_model": requested, "purpose": purpose,
                "messages": len(messages), "latency_s": time.monotonic() - started,
                **error_fields(exc),
            }, content={"messages": messages})
            raise
        if purpose == "summary":
            self.summary_backoff.succeeded(deployed)
        return _accounting.finish_live(
            self, reply, requested, purpose, messages, tools, deployed=deployed, key=key,
            infra_probed=infra_probed, latency=time.monotonic() - started, attempts=attempts,
            setup=started - setup_started,
        )

    def estimate_request(
        self,
        messages: list[Message],
        *,
        model: str,
        tools: list[dict[str, Any]] | None = None,
    ) -> int:
        """Prompt tokens ``model``'s provider is expected to count, as the engine sizes a
        request before sending it (calibrated once learned, a digit prior before)."""
        return _window.estimate_request(self.calibration, model, messages, tools)

    def window_for(self, model: str, purpose: str = "turn") -> int | None:
        """The input window a ``purpose`` request to ``model`` is sized to; ``None`` when
        nobody describes the model (sent as it is; a refusal re-sizes it).

        The row's window is the slot's: ``turn_window`` for a turn of the engine's own
        model, the ``model_settings`` ``context_window`` for a summary or judge call (the
        turn row's window is a setting of the turn, as its ``max_tokens`` is). Then, as
        :func:`~mas.runtime.spec.windows.resolve_window` orders them, infra
        ``generation.context_window`` and the catalog entry of the deployed model.
        """
        key = (model, purpose == "turn")
        if key not in self._windows:
            deployed = map_model(model, self.infra_mappings)
            if purpose == "turn":
                row = self.turn_window if model == self.model else None
            else:
                own = self.model_settings.get(deployed) or self.model_settings.get(model) or {}
                row = own.get("context_window")
            self._windows[key] = _window.known_window(
                model, row=row, infra=self.context_window, infra_mappings=self.infra_mappings,
                catalog=self.catalog)
        return self._windows[key]

    # ----------------------------------------------------------------------------------
    # Internals (also called by _request and _accounting: private to the engine package)
    # ----------------------------------------------------------------------------------

    def _charge_budget(self, purpose: str) -> None:
        with self._lock:
            limit = self.max_llm_calls
            if limit is not None and self.ledger.llm_calls >= limit:
                raise BudgetExceededError(
                    f"spec.budget.max_llm_calls: all {limit} model call(s) of this session are "
                    f"used; the next {purpose} call was refused (raise max_llm_calls to allow more)"
                )
            self.ledger.llm_calls += 1

    def _pricing_for(self, requested: str) -> Pricing | None:
        if requested not in self._pricing:
            self._pricing[requested] = resolve_pricing(
                requested,
                infra_pricing=self.infra_pricing,
                infra_mappings=self.infra_mappings,
                catalog=self.catalog,
            )
        return self._pricing[requested]

    def _ensure_providers(self) -> None:
        if not self._providers_ready:
            _litellm.install_providers(
                self.runtime.registries.model_provider,
                lambda entry, exc: self.runtime.fail_factory(entry, exc, stage="call"),
            )
            self._providers_ready = True

    def _emit(self, name: str, data: dict[str, Any],
              content: dict[str, Any] | None = None) -> None:
        self.runtime.emit(Event(name, data, session_id=self.session_id, content=content))


