"""Model providers: a plugin's ``mas_register_model_providers`` handler is installed into
LiteLLM before the engine's first call, and calls to ``<name>/...`` reach it."""

from __future__ import annotations

from typing import Any

from mas.runtime import hookimpl
from mas.runtime.engine import Engine


class EchoProviderPlugin:
    """Registers ``echo_provider_test``: answers with the last user message, reversed."""

    built = 0

    @hookimpl
    def mas_register_model_providers(self, registry: Any) -> None:
        registry.register("echo_provider_test", self.make, description="test echo model")

    def make(self) -> Any:
        from litellm.llms.custom_llm import CustomLLM

        EchoProviderPlugin.built += 1

        class Echo(CustomLLM):
            def completion(self, *args: Any, **kwargs: Any) -> Any:
                response = kwargs["model_response"]
                text = kwargs["messages"][-1]["content"]
                response.choices[0].message.content = text[::-1]
                return response

        return Echo()


def test_a_registered_provider_is_installed_lazily_and_answers(register_plugin):
    runtime = register_plugin(EchoProviderPlugin())
    assert "echo_provider_test" in runtime.registries.model_provider
    built = EchoProviderPlugin.built
    engine = Engine(runtime, model="echo_provider_test/any")
    assert EchoProviderPlugin.built == built  # nothing built before the first call
    reply = engine.turn([{"role": "user", "content": "stressed"}])
    assert reply.text == "desserts"
    assert reply.usage is None  # the handler reported none
    assert engine.ledger.last_usage_source == "unavailable"
    assert engine.ledger.cost_status == "pricing_or_usage_unavailable"
    import litellm

    providers = [item["provider"] for item in litellm.custom_provider_map]
    assert providers.count("echo_provider_test") == 1
    assert "offline" in providers  # every registered provider, not just the one called
    Engine(runtime, model="echo_provider_test/any").turn([{"role": "user", "content": "ab"}])
    assert [item["provider"] for item in litellm.custom_provider_map].count(
        "echo_provider_test") == 1
