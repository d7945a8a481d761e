"""Everything that touches the ``litellm`` module: lazy import, providers, replies, errors.

Importing litellm takes seconds and, without ``LITELLM_LOCAL_MODEL_COST_MAP``, reaches for
the network; so it is imported here, inside functions, only when a model is first called.
"""

from __future__ import annotations

import atexit
import email.utils
import gc
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from mas.runtime.errors import ModelCallError
from mas.runtime.protocols import ModelReply, Usage

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

    from mas.runtime.registry import KindRegistry, TypeEntry

log = logging.getLogger(__name__)
_LOCK = threading.Lock()
_NOISY_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm")
# Thread id -> what to call when LiteLLM hands that thread's request to the provider.
_SENDING: dict[int, Callable[[], None]] = {}
_signal_installed = False


def load_litellm() -> ModuleType:
    """Import litellm once, offline-safe and quiet, and return the module."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    # Its banners ("Give Feedback / Get Help", debug hints) go to stdout on every failure;
    # the engine reports failures itself, once.
    litellm.suppress_debug_info = True
    for name in _NOISY_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET or logger.level < logging.ERROR:
            logger.setLevel(logging.ERROR)
    _install_sent_signal(litellm)
    return litellm


def _install_sent_signal(litellm: ModuleType) -> None:
    # LiteLLM's providers call their input callbacks ("pre_call") on the calling thread
    # just before the request goes out, after the first call's imports and HTTP client
    # set-up: that moment starts an attempt's deadline (issue 26, item 10).
    global _signal_installed
    with _LOCK:
        if _signal_installed:
            return
        from litellm.integrations.custom_logger import CustomLogger

        class _RequestSent(CustomLogger):
            def log_pre_api_call(self, model: Any, messages: Any, kwargs: Any) -> None:
                hook = _SENDING.get(threading.get_ident())
                if hook is not None:
                    hook()

        litellm.input_callback.append(_RequestSent())
        atexit.register(release_clients, litellm)
        _signal_installed = True


def release_clients(litellm: ModuleType) -> None:
    """Let go of LiteLLM's cached and module-level HTTP handlers (run at exit).

    Their finalizers import a LiteLLM module. Left to the interpreter's own teardown, they
    run after daemon threads are frozen, and an attempt abandoned at its timeout can be
    frozen inside an import: the process then never exits (seen once at the end of
    ``make test``). At exit those threads still run, so the imports complete.
    """
    try:
        cache = litellm.__dict__.get("in_memory_llm_clients_cache")
        flush = getattr(cache, "flush_cache", None)
        if callable(flush):
            flush()
        for name in ("module_level_aclient", "module_level_client"):
            litellm.__dict__.pop(name, None)
        gc.collect()
    except Exception:  # noqa: BLE001 - an exit hook must never turn an exit into a failure
        log.debug("releasing LiteLLM's HTTP clients at exit failed", exc_info=True)


def on_request_sent(hook: Callable[[], None]) -> Callable[[], None]:
    """Call ``hook`` when LiteLLM sends this thread's request; returns the un-register.

    Only LiteLLM's own providers signal; a plugin's ``model_provider`` never does
    (:func:`signals_sending`).
    """
    ident = threading.get_ident()
    _SENDING[ident] = hook

    def forget() -> None:
        _SENDING.pop(ident, None)

    return forget


def signals_sending(model: str) -> bool:
    """Whether a call to ``model`` signals when its request is sent: not a custom provider."""
    litellm = load_litellm()
    custom = {item["provider"] for item in litellm.custom_provider_map}
    return model.partition("/")[0] not in custom


def install_providers(
    registry: KindRegistry, on_fault: Callable[[TypeEntry, BaseException], None]
) -> list[str]:
    """Add every registered ``model_provider`` to ``litellm.custom_provider_map``.

    The map is process-wide; a provider name already present keeps its handler, so two
    runtimes in one process share one handler per name. A factory that raises is handed
    to ``on_fault`` and left out: every provider is installed at the first model call, so
    one plugin's broken provider must not fail the calls that never use it. Returns the
    names now installed.
    """
    litellm = load_litellm()
    with _LOCK:
        present = {item["provider"] for item in litellm.custom_provider_map}
        added = []
        for entry in registry:
            if entry.name in present:
                continue
            try:
                handler = entry.factory()
            except BaseException as exc:  # SystemExit too; on_fault lets Ctrl-C through
                on_fault(entry, exc)
                continue
            litellm.custom_provider_map.append({"provider": entry.name, "custom_handler": handler})
            added.append(entry.name)
        if added:
            # LiteLLM reads the map into its provider list here; without it the new
            # prefixes are unknown until the next import.
            from litellm.utils import custom_llm_setup

            custom_llm_setup()  # type: ignore[no-untyped-call]
    return sorted(present | set(added))


def usage_of(response: Any) -> Usage | None:
    """Provider usage of a LiteLLM response, ``None`` when the provider sent none."""
    raw = getattr(response, "usage", None)
    if raw is None:
        return None
    prompt = getattr(raw, "prompt_tokens", None)
    completion = getattr(raw, "completion_tokens", None)
    if prompt is None and completion is None:
        return None
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    # LiteLLM puts an Anthropic cache write in the details and, older, on the usage itself.
    written = getattr(details, "cache_creation_tokens", None) if details is not None else None
    written = written or getattr(raw, "cache_creation_input_tokens", None)
    if not prompt and not completion and not cached:
        # LiteLLM fills an all-zero Usage when the provider reported nothing.
        return None
    return Usage(int(prompt or 0), int(completion or 0), int(cached or 0), int(written or 0))


def reply_of(response: Any, model: str) -> ModelReply:
    """Reduce a LiteLLM ``ModelResponse`` to a :class:`ModelReply` (cost filled later).

    :raises ModelCallError: the response has no choices or no message.
    """
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise ModelCallError(f"model {model!r} returned a response with no choices")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise ModelCallError(f"model {model!r} returned a choice with no message")
    tool_calls = []
    for call in getattr(message, "tool_calls", None) or []:
        function = call.function
        tool_calls.append({
            "id": call.id,
            "type": "function",
            "function": {"name": function.name, "arguments": function.arguments or "{}"},
        })
    return ModelReply(
        text=message.content or "",
        tool_calls=tool_calls,
        usage=usage_of(response),
        model=model,
    )


def retriable(exc: BaseException) -> bool:
    """Whether a LiteLLM error is worth another attempt: 429, 5xx, timeouts, dropped links."""
    litellm = load_litellm()
    transient = (
        litellm.RateLimitError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.Timeout,
        litellm.APIConnectionError,
    )
    return isinstance(exc, transient) and not isinstance(exc, litellm.AuthenticationError)


def is_authentication(exc: BaseException) -> bool:
    """A 401/403-style error, or no credentials at all: retrying cannot help."""
    litellm = load_litellm()
    if isinstance(exc, (litellm.AuthenticationError, litellm.PermissionDeniedError)):
        return True
    # The OpenAI SDK refuses to send a request without a key; LiteLLM reports that as a
    # 500, which would otherwise be retried.
    return "Missing credentials" in str(exc)


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``Retry-After``), ``None`` when it did not say."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed is not None else None


def describe(exc: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """One line naming the error kind and the provider's message, secrets masked."""
    text = " ".join(str(exc).split())
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}"
