"""The offline model as a LiteLLM custom provider (imports litellm: load it lazily).

LiteLLM routes ``offline/<anything>`` here through its real ``completion`` path, so the
engine, retries, usage parsing and cost code all run exactly as with a hosted model.

Its simulated prefix cache is provider-side state a client crash should not lose: the
agent session saves :meth:`OfflineLLM.export_session_state` with every committed turn
and hands it to :meth:`OfflineLLM.import_session_state` when it resumes (see
:mod:`.prefix_cache`).
"""

from __future__ import annotations

from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM
from litellm.types.utils import ChatCompletionMessageToolCall, Function

from mas.library.standard.offline._rules import respond
from mas.library.standard.offline.prefix_cache import PrefixCache
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR


class OfflineLLM(CustomLLM):
    """Deterministic, key-less, network-less chat model with usage and a prefix cache."""

    def __init__(self) -> None:
        super().__init__()
        self.prefix_cache = PrefixCache()

    def completion(self, model: str, messages: list[Any], api_base: str | None,
                   custom_prompt_dict: dict[str, Any], model_response: Any, print_verbose: Any,
                   encoding: Any, api_key: Any, logging_obj: Any, optional_params: dict[str, Any],
                   acompletion: Any = None, litellm_params: Any = None, logger_fn: Any = None,
                   headers: Any = None, timeout: Any = None, client: Any = None) -> Any:
        """Answer one chat request (LiteLLM's synchronous entry point)."""
        return self.answer(model, messages, optional_params, model_response,
                           _session(litellm_params))

    def export_session_state(self, *, session_id: str, trace_id: str) -> dict[str, Any] | None:
        """The prefix cache of the engine with these ids, JSON-ready (``None``: empty).

        Called by the agent session after each committed turn; saved in its state.
        """
        return self.prefix_cache.export(owner(session_id, trace_id))

    def import_session_state(self, *, session_id: str, trace_id: str,
                             state: dict[str, Any] | None) -> None:
        """Give the engine with these ids the prefix cache an earlier engine exported.

        Called by a resumed agent session before its first call: its new engine continues
        the conversations the saved turns left, as a provider's cache would.
        """
        self.prefix_cache.restore(owner(session_id, trace_id), state)

    async def acompletion(self, model: str, messages: list[Any], api_base: str | None,
                          custom_prompt_dict: dict[str, Any], model_response: Any,
                          print_verbose: Any, encoding: Any, api_key: Any, logging_obj: Any,
                          optional_params: dict[str, Any], acompletion: Any = None,
                          litellm_params: Any = None, logger_fn: Any = None, headers: Any = None,
                          timeout: Any = None, client: Any = None) -> Any:
        """Answer one chat request (LiteLLM's asynchronous entry point)."""
        return self.answer(model, messages, optional_params, model_response,
                           _session(litellm_params))

    def answer(self, model: str, messages: list[Any], optional_params: dict[str, Any],
               model_response: Any, session: str = "") -> Any:
        """Fill ``model_response`` with the rules' answer and estimator-based usage.

        :param session: the engine's session id; the prefix cache is kept per session.
        """
        tools = optional_params.get("tools") or None
        max_tokens = optional_params.get("max_tokens") or optional_params.get(
            "max_completion_tokens"
        )
        reply = respond(
            messages, tools, optional_params.get("response_format"), max_tokens, model=model
        )
        text, finish = reply.text, "tool_calls" if reply.tool_calls else "stop"
        if max_tokens and DEFAULT_ESTIMATOR.text(text) > max_tokens:
            text, finish = text[: DEFAULT_ESTIMATOR.chars_for(max_tokens, like=text)], "length"
        prompt = DEFAULT_ESTIMATOR.messages(messages) + DEFAULT_ESTIMATOR.tools(tools)
        cached = self.prefix_cache.probe(model, messages, tools, prompt, session)
        out = {"role": "assistant", "content": text, "tool_calls": reply.tool_calls or None}
        completion = DEFAULT_ESTIMATOR.message(out) - DEFAULT_ESTIMATOR.message_overhead
        choice = model_response.choices[0]
        choice.message.content = (text or None) if reply.tool_calls else text
        if reply.tool_calls:
            choice.message.tool_calls = [
                ChatCompletionMessageToolCall(
                    id=call["id"], type="function",
                    function=Function(name=call["function"]["name"],
                                      arguments=call["function"]["arguments"]),
                )
                for call in reply.tool_calls
            ]
        choice.finish_reason = finish
        model_response.model = f"offline/{model}"
        model_response.usage = litellm.Usage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=prompt + completion,
            prompt_tokens_details={"cached_tokens": cached},
        )
        return model_response


def owner(session_id: str, trace_id: str) -> str:
    """The prefix-cache owner of an engine: its session id and per-engine trace id."""
    return f"{session_id}/{trace_id}"


def _session(litellm_params: Any) -> str:
    """Which engine sent the call: the ``litellm_session_id`` and ``litellm_trace_id`` the
    engine passed (LiteLLM hands both to custom providers); empty when neither came."""
    params = litellm_params if isinstance(litellm_params, dict) else {}
    return owner(str(params.get("litellm_session_id") or ""),
                 str(params.get("litellm_trace_id") or ""))
