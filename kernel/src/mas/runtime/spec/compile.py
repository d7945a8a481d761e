"""Compile loaded manifests: bind every strategy, resolve every model with its source.

This is what ``mas-ctl compile`` prints and what a session is built from. Compiling binds
the context manager (validating its params and its summarizer's against the registered
``Params`` models) but never calls a model and never imports litellm.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from mas.runtime.errors import ManifestError, MasError, Problem
from mas.runtime.protocols import BindContext
from mas.runtime.runtime import Runtime
from mas.runtime.spec.binding import Binding, bind
from mas.runtime.spec.loader import BindingChecker, LoadedAgent, ManifestSet
from mas.runtime.spec.manifests import ModelSpec
from mas.runtime.spec.model_ref import (
    ModelChoice,
    ModelRow,
    ModelScope,
    package_default_model,
    resolve_model,
)


def rows(models: list[ModelSpec]) -> list[ModelRow]:
    """Manifest ``spec.models[]`` rows as the plain rows model resolution reads."""
    return [ModelRow(m.id, m.model, m.context_window, m.max_tokens) for m in models]


def model_scope(loaded: LoadedAgent, manifests: ManifestSet) -> ModelScope:
    """Every model slot in force for ``loaded``: agent, MAS, experiment, local config."""
    experiment = manifests.experiment.experiment if manifests.experiment else None
    return ModelScope.build(
        agent_models=rows(loaded.agent.spec.models),
        mas_models=rows(loaded.mas.spec.models) if loaded.mas else (),
        experiment_models=dict(experiment.models) if experiment else {},
        experiment_model=experiment.model if experiment else None,
        config_default=manifests.config.defaults.model,
    )


@dataclass
class CompiledAgent:
    """One agent, bound and resolved.

    :ivar loaded: the validated manifest and its file.
    :ivar scope: the model slots in force.
    :ivar turn_model: the resolved turn model and its source.
    :ivar context_manager: the bound context manager object.
    :ivar binding: the context-manager binding in force.
    :ivar binding_source: where that binding came from.
    :ivar params: the context manager's validated params.
    :ivar summarizer: the summarizer binding, when the strategy has one.
    :ivar summarizer_params: its validated params.
    :ivar summarizer_model: its resolved model, ``None`` when it makes no model call.
    """

    loaded: LoadedAgent
    scope: ModelScope
    turn_model: ModelChoice
    context_manager: Any
    binding: Binding
    binding_source: str
    params: BaseModel
    summarizer: Binding | None
    summarizer_params: BaseModel | None
    summarizer_model: ModelChoice | None

    @property
    def name(self) -> str:
        """The agent's ``metadata.name``."""
        return self.loaded.agent.metadata.name


def compile_agent(runtime: Runtime, loaded: LoadedAgent, manifests: ManifestSet) -> CompiledAgent:
    """Bind and resolve one agent.

    :raises ManifestError: unknown types or invalid params, located in the agent's file.
    """
    scope = model_scope(loaded, manifests)
    turn = _resolve(runtime, "", "turn", scope, loaded, "spec.models")
    binding, binding_source = loaded.agent.spec.effective_context_manager()
    location = binding_source if binding_source != "default" else "spec.context_manager"
    ctx = BindContext(
        runtime=runtime,
        agent_name=loaded.agent.metadata.name,
        model_scope=scope,
        turn_model=turn,
        pin_activated=loaded.agent.spec.context_sources.pin_activated,
        source=loaded.source,
        location=location,
    )
    manager = bind("context_manager", binding, ctx)
    params = runtime.registries.context_manager.get(binding.type).validate_params(binding.params)
    summarizer = getattr(params, "summarizer", None)
    summarizer_params = summarizer_model = None
    if isinstance(summarizer, Binding):
        entry = runtime.registries.summarizer.get(summarizer.type)
        summarizer_params = entry.validate_params(summarizer.params)
        if "model" in type(summarizer_params).model_fields:
            ref = getattr(summarizer_params, "model", None) or ""
            where = f"{location}.params.summarizer.params.model"
            summarizer_model = _resolve(runtime, ref, "summarizer", scope, loaded, where)
    return CompiledAgent(
        loaded=loaded,
        scope=scope,
        turn_model=turn,
        context_manager=manager,
        binding=binding,
        binding_source=binding_source,
        params=params,
        summarizer=summarizer if isinstance(summarizer, Binding) else None,
        summarizer_params=summarizer_params,
        summarizer_model=summarizer_model,
    )


def _resolve(
    runtime: Runtime,
    ref: str,
    purpose: str,
    scope: ModelScope,
    loaded: LoadedAgent,
    location: str,
) -> ModelChoice:
    try:
        return resolve_model(runtime, ref, purpose, scope)
    except MasError as exc:
        raise ManifestError([Problem(loaded.source, location, str(exc))]) from exc


def compile_all(runtime: Runtime, manifests: ManifestSet) -> list[CompiledAgent]:
    """Compile every agent of ``manifests``, collecting all problems before raising."""
    compiled: list[CompiledAgent] = []
    problems: list[Problem] = []
    for loaded in manifests.agents:
        try:
            compiled.append(compile_agent(runtime, loaded, manifests))
        except ManifestError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ManifestError(problems)
    return compiled


def binding_checker(runtime: Runtime) -> BindingChecker:
    """A checker for :func:`~mas.runtime.spec.loader.load_manifest_set`: binds a context
    manager with default model slots and returns its problems (unknown types, bad params).
    """

    def check(binding: Binding, source: str, location: str) -> list[Problem]:
        default = package_default_model() or ""
        ctx = BindContext(
            runtime=runtime,
            agent_name="",
            model_scope=ModelScope(),
            turn_model=ModelChoice(default, "package.defaults.model"),
            source=source,
            location=location,
        )
        try:
            bind("context_manager", binding, ctx)
        except ManifestError as exc:
            return exc.problems
        except MasError as exc:
            return [Problem(source, location, str(exc))]
        return []

    return check
