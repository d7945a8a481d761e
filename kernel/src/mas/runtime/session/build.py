"""Build an :class:`AgentSession` from compiled manifests: engine, budget, skills, tools."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mas.runtime.context import History
from mas.runtime.engine import Engine, ResponseCache
from mas.runtime.engine.counter import estimator_for
from mas.runtime.runtime import Runtime
from mas.runtime.session.agent import AgentSession, SessionSettings
from mas.runtime.session.skills import SkillLibrary
from mas.runtime.session.tools import Tool
from mas.runtime.spec.compile import CompiledAgent, compile_agent
from mas.runtime.spec.loader import LoadedAgent, ManifestSet
from mas.runtime.spec.manifests import Infra
from mas.runtime.spec.model_ref import map_model
from mas.runtime.spec.resolved import resolve_budget


def engine_for(
    runtime: Runtime,
    agent: CompiledAgent,
    manifests: ManifestSet,
    *,
    session_id: str = "",
    cache: ResponseCache | None = None,
) -> Engine:
    """The engine an agent's session calls: its turn model, infra endpoint, budget, cache."""
    return infra_engine(
        runtime,
        manifests.infra,
        model=agent.turn_model.model,
        session_id=session_id,
        cache=cache,
        max_llm_calls=agent.loaded.agent.spec.budget.max_llm_calls,
        max_tokens=agent.scope.row_setting(agent.turn_model.slot, "max_tokens"),
        turn_window=agent.scope.row_setting(agent.turn_model.slot, "context_window"),
        model_settings=row_call_settings(agent, manifests),
    )


def row_call_settings(agent: CompiledAgent, manifests: ManifestSet) -> dict[str, dict[str, Any]]:
    """Per deployed model string, the ``timeout`` / ``num_retries`` its ``spec.models`` row
    sets (a row that inherits its model applies to the turn model it resolved to), and the
    ``context_window`` of a row other than the turn's (the agent's row, else the MAS row of
    the same id): summary and judge calls to that model are sized to it. The turn row's
    window goes with the turn (``engine_for``), as its ``max_tokens`` does."""
    infra = manifests.infra.spec if manifests.infra else None
    settings: dict[str, dict[str, Any]] = {}
    for row in agent.loaded.agent.spec.models:
        window = None
        if row.id != agent.turn_model.slot:
            window = agent.scope.row_setting(row.id, "context_window")
        own = {k: v for k, v in (("timeout", row.timeout), ("num_retries", row.num_retries),
                                 ("context_window", window)) if v is not None}
        model = row.model if row.model not in (None, "any") else (
            agent.turn_model.model if row.id == agent.turn_model.slot else None)
        if own and model:
            settings.setdefault(map_model(model, infra.models if infra else None), {}).update(own)
    return settings


def infra_engine(
    runtime: Runtime,
    infra_manifest: Infra | None,
    *,
    model: str | None = None,
    session_id: str = "",
    cache: ResponseCache | None = None,
    max_llm_calls: int | None = None,
    max_tokens: int | None = None,
    model_settings: dict[str, dict[str, Any]] | None = None,
    turn_window: int | None = None,
) -> Engine:
    """An engine that reaches models the way ``infra_manifest`` says: endpoint, key from
    ``api_key_env``, timeout, retries, window, pricing, model mappings and the response cache.

    ``None`` gives the plain engine (LiteLLM's defaults, the catalog's prices, no cache
    unless ``cache`` is given).
    """
    infra = infra_manifest.spec if infra_manifest else None
    generation = infra.generation if infra else None
    api_key = None
    if generation is not None and generation.api_key_env:
        api_key = os.environ.get(generation.api_key_env)
    if cache is None and infra is not None and infra.cache.enabled:
        cache = ResponseCache(Path(infra.cache.path), strict=infra.cache.strict)
    return Engine(
        runtime,
        model=model,
        session_id=session_id,
        api_base=generation.api_base if generation else None,
        api_key=api_key,
        timeout=generation.timeout if generation else 60.0,
        num_retries=generation.num_retries if generation else 2,
        context_window=generation.context_window if generation else None,
        max_llm_calls=max_llm_calls,
        max_tokens=max_tokens,
        model_settings=model_settings,
        turn_window=turn_window,
        cache=cache,
        infra_pricing=generation.pricing.model_dump()
        if generation and generation.pricing
        else None,
        infra_mappings=infra.models if infra else None,
    )


def open_session(
    runtime: Runtime,
    agent: CompiledAgent | LoadedAgent,
    manifests: ManifestSet,
    *,
    session_id: str | None = None,
    state_path: Path | None = None,
    tools: Sequence[Tool] = (),
    cache: ResponseCache | None = None,
    max_tool_rounds: int = 8,
) -> AgentSession:
    """A session for ``agent``; resumes from ``state_path`` when that file exists.

    A fresh context manager is bound for every session (strategies keep per-session
    state such as the running summary).
    """
    loaded = agent.loaded if isinstance(agent, CompiledAgent) else agent
    compiled = compile_agent(runtime, loaded, manifests)
    resolved = resolve_budget(compiled, manifests)
    spec = loaded.agent.spec
    skills = SkillLibrary(
        loaded.path.parent / spec.context_sources.skills_dir,
        pin_activated=spec.context_sources.pin_activated,
    )
    settings = SessionSettings(
        window=resolved.window.value,
        window_source=resolved.window.source,
        reserve=resolved.reserve.value,
        reserve_source=resolved.reserve.source,
        model_source=compiled.turn_model.source,
        instructions=spec.instructions.strip(),
        max_tool_rounds=max_tool_rounds,
        calibrate=spec.estimation.calibrate,
        min_observations=spec.estimation.min_observations,
        max_reply_chars=spec.budget.max_reply_chars,
    )
    identity = {"session_id": session_id} if session_id else {}
    return AgentSession(
        runtime=runtime,
        agent_name=compiled.name,
        cm=compiled.context_manager,
        engine=engine_for(runtime, compiled, manifests, cache=cache),
        settings=settings,
        tools=list(tools),
        skills=skills,
        state_path=state_path,
        history=History(
            estimator=estimator_for(spec.estimation.counter, compiled.turn_model.model)
        ),
        **identity,  # type: ignore[arg-type]  # only session_id, when given
    )
