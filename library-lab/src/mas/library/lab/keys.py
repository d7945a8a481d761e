"""Refusing, before any session starts, a model whose provider key is not configured.

Models served in-process by a registered model provider (``offline/...``) need no key. For
the others LiteLLM says which environment variables the provider reads; any missing one
that names a key or token is a problem.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from mas.runtime.errors import MasError, Problem
from mas.runtime.runtime import Runtime

if TYPE_CHECKING:
    from mas.library.lab.experiment import Flavour
    from mas.library.lab.pipeline import Pipeline
    from mas.runtime.spec.loader import ManifestSet


def missing_keys(runtime: Runtime, model: str) -> list[str]:
    """Environment variables holding a key that ``model``'s provider needs and lacks."""
    provider = model.split("/", 1)[0] if "/" in model else ""
    if provider and provider in runtime.registries.model_provider:
        # Looked up by name so the registry counts the provider as used (run.json plugins).
        runtime.registries.model_provider.get(provider)
        return []
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    try:
        found: dict[str, Any] = litellm.validate_environment(model)
    except Exception:  # an unknown provider is the engine's error to report, with its context
        return []
    return [name for name in found.get("missing_keys") or []
            if "KEY" in name.upper() or "TOKEN" in name.upper()]


def missing_key_problems(
    runtime: Runtime, flavours: list[Flavour], pipeline: Pipeline, base: ManifestSet, source: str
) -> list[Problem]:
    """One problem per (model, role) whose key is missing: turn, summarizer and judge models."""
    wanted: dict[str, str] = {}
    problems = []
    for flavour in flavours:
        generation = flavour.manifests.infra.spec.generation if flavour.manifests.infra else None
        if generation is not None and generation.api_key_env:
            # The infra names the key: that variable is the one that must be set.
            if not os.environ.get(generation.api_key_env):
                problems.append(Problem(source, "models", f"no key configured for flavour "
                                        f"{flavour.name}: set {generation.api_key_env} (infra "
                                        "generation.api_key_env) in the environment",
                                        flavour.agent.turn_model.model, True))
            continue
        if generation is not None and generation.api_base:
            continue  # a server of your own (llama.cpp, Ollama, vLLM) may need no key at all
        for agent in flavour.agents:
            wanted.setdefault(agent.turn_model.model, f"flavour {flavour.name}: turn model "
                              f"(source {agent.turn_model.source})")
            if agent.summarizer_model is not None:
                wanted.setdefault(agent.summarizer_model.model, f"flavour {flavour.name}: "
                                  f"summarizer model (source {agent.summarizer_model.source})")
    generation = base.infra.spec.generation if base.infra else None
    for step in pipeline.steps:
        judge = _judge_model(runtime, step, base)
        # The judge reaches the experiment's Infra the way turn and summarizer models do:
        # a key named by api_key_env is checked above, and a server of your own at api_base
        # may need none.
        if judge is not None and (generation is None or not (generation.api_key_env
                                                             or generation.api_base)):
            wanted.setdefault(judge[0], f"step {step.name}: judge model (source {judge[1]})")
    for model, role in wanted.items():
        keys = missing_keys(runtime, model)
        if keys:
            problems.append(Problem(source, "models", f"no key configured for {role}: set "
                                    f"{' or '.join(keys)} in the environment", model, True))
    return problems


def _judge_model(runtime: Runtime, step: Any, base: ManifestSet) -> tuple[str, str] | None:
    if step.entry.name != "eval_mce":
        return None
    from mas.library.eval import judge_scope
    from mas.runtime.spec.model_ref import resolve_model

    try:
        choice = resolve_model(runtime, "", "judge", judge_scope(step.params, base))
    except MasError:
        return None  # the eval_mce step reports an unresolvable judge itself
    return choice.model, choice.source
