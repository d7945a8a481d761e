"""Every hook mas defines, grouped by the phase in which it runs.

Libraries never declare hookspecs: a new extension point goes here. Implementations are
written with ``from mas.runtime import hookimpl`` and may accept fewer arguments than the
spec lists, so a spec can gain arguments without breaking plugins. All hooks are called
with keyword arguments only. ``firstresult`` is used only on resolvers. An implementation
that raises (anything but a ``MasError``, which is meant for the user) faults its plugin:
reported once with its file and line, left out, and the other plugins go on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from pathlib import Path

    from mas.runtime.errors import Problem
    from mas.runtime.events import Event
    from mas.runtime.registry import KindRegistry
    from mas.runtime.runtime import Runtime
    from mas.runtime.spec.loader import ManifestSet

hookspec = pluggy.HookspecMarker("mas")


# --------------------------------------------------------------------------------------
# Registration: called once per runtime, while its registries are built. Each call gets a
# registry for one kind; ``registry.register(name, factory, params=Model, ...)`` adds a
# type string that manifests can bind. The kernel records which plugin gave each name.
# --------------------------------------------------------------------------------------


@hookspec
def mas_register_context_managers(registry: KindRegistry) -> None:
    """Register context managers: strategies that bound committed history each turn.

    Called once while the runtime builds its registries. A registered factory is called
    with the validated ``Params`` instance and a :class:`~mas.runtime.protocols.BindContext`
    and must return an object following :class:`~mas.runtime.protocols.ContextManager`.

    :param registry: the ``context_manager`` registry; call ``registry.register(...)``.
    :return: nothing; results are ignored.
    """


@hookspec
def mas_register_summarizers(registry: KindRegistry) -> None:
    """Register summarizers: sub-plugins a context manager uses to fold old turns.

    Called once while the runtime builds its registries. A factory receives the validated
    ``Params`` and a :class:`~mas.runtime.protocols.BindContext` and returns a
    :class:`~mas.runtime.protocols.Summarizer`.

    :param registry: the ``summarizer`` registry.
    :return: nothing; results are ignored.
    """


@hookspec
def mas_register_identifier_extractors(registry: KindRegistry) -> None:
    """Register identifier extractors: what a summary must keep of the turns it folds.

    Called once while the runtime builds its registries. ``summarising`` binds one through
    ``params.identifier_extractor`` (default ``standard``) and, before committing a
    summary, checks that every identifier it returns for the folded messages appears in
    the summary. A factory is called as ``factory(params, ctx)`` and returns an object
    with ``extract(messages: list[dict]) -> list[str]`` (distinct, in order of first
    appearance).

    :param registry: the ``identifier_extractor`` registry.
    :return: nothing; results are ignored.
    """


@hookspec
def mas_register_eval_metrics(registry: KindRegistry) -> None:
    """Register eval metrics that score a session run (judge metrics or computed ones).

    Called once while the runtime builds its registries. A factory receives its validated
    ``Params`` and returns a :class:`~mas.runtime.protocols.Metric`.

    :param registry: the ``eval_metric`` registry.
    :return: nothing; results are ignored.
    """


@hookspec
def mas_register_lab_steps(registry: KindRegistry) -> None:
    """Register lab pipeline steps (``application.post[].type`` in an experiment).

    Called once while the runtime builds its registries. A factory is called as
    ``factory(params, spec)`` with the step's validated ``Params`` (its ``config:`` block)
    and its :class:`~mas.runtime.spec.experiment.StepSpec`, and returns a
    :class:`~mas.runtime.protocols.Step` (guide: docs/lab.md).

    :param registry: the ``lab_step`` registry.
    :return: nothing; results are ignored.
    """


@hookspec
def mas_register_model_providers(registry: KindRegistry) -> None:
    """Register model providers that the engine installs into LiteLLM before a call.

    The registered name is the LiteLLM provider prefix (``<name>/<model>``); the factory
    takes no arguments and returns a ``litellm.CustomLLM`` handler. Factories run only when
    a model is first called, so registering costs nothing at start-up.

    :param registry: the ``model_provider`` registry.
    :return: nothing; results are ignored.
    """


@hookspec
def mas_register_cli_commands(registry: KindRegistry) -> None:
    """Register extra ``mas-ctl`` subcommands.

    The registered name is the subcommand name; the factory takes no arguments and returns
    a ``click.Command`` (or group). Called when ``mas-ctl`` starts.

    :param registry: the ``cli_command`` registry.
    :return: nothing; results are ignored.
    """


# --------------------------------------------------------------------------------------
# Validation: called by ``mas-ctl validate`` after the manifests loaded and compiled.
# --------------------------------------------------------------------------------------


@hookspec
def mas_check_manifests(
    runtime: Runtime, manifests: ManifestSet, config: Path | None
) -> list[Problem] | None:
    """Check loaded manifests the way the command that will run them does, before it runs.

    Called by ``mas-ctl validate`` once its files have loaded and every agent compiled,
    so that ``validate`` reports what a library's own command would refuse later (the
    lab checks an experiment's flavours, dataset and pipeline here with the same code
    ``lab run`` runs before its first session). Checks must not call a model or write.

    :param runtime: the runtime whose registries hold every registered type.
    :param manifests: what was loaded (``manifests.experiment_path`` is set for an
        experiment file).
    :param config: the ``--config`` file given to ``validate``, or ``None`` for the
        default (``$MAS_CONFIG``, then ``./config.yaml``).
    :return: a list of :class:`~mas.runtime.errors.Problem` (empty or ``None`` when all is
        well). Results of all plugins are collected.
    """


# --------------------------------------------------------------------------------------
# Context assembly: called for every model call of an agent session.
# --------------------------------------------------------------------------------------


@hookspec
def mas_collect_context_parts(agent_name: str, session_id: str) -> list[Any] | None:
    """Contribute system-message sections to the request being assembled.

    Called before every model call of an agent turn. Each implementation returns a list of
    :class:`~mas.runtime.context.parts.ContextPart` (or ``None`` for none); the assembler
    orders all parts by placement, then priority, and never evicts a pinned part.

    :param agent_name: ``metadata.name`` of the agent being called.
    :param session_id: the session the call belongs to.
    :return: a list of context parts, or ``None``. Results of all plugins are collected.
    """


# --------------------------------------------------------------------------------------
# Observation: every event the runtime emits (context.assembled, compaction.start,
# compaction.stop, compaction.exception, llm.call, cache.lookup, ...).
# --------------------------------------------------------------------------------------


@hookspec
def mas_observe_event(event: Event) -> None:
    """Observe one runtime event, after it has been recorded.

    Called synchronously, in the order events happen: ``context.assembled`` for each
    assembled request, ``compaction.start`` / ``compaction.stop`` /
    ``compaction.exception`` around history compaction, ``llm.call`` for each provider
    call, ``cache.lookup`` for each response-cache probe, ``plugin.fault`` when a plugin
    is left out after start-up (its hook or factory raised). Events carry numbers and
    metadata, never prompt text. An observer that raises does not stop the run: its
    plugin is reported once and left out, as for any hook that raises.

    :param event: the event; ``event.name`` says which.
    :return: nothing; results are ignored.
    """


# --------------------------------------------------------------------------------------
# Resolution: answer a question the kernel would otherwise answer itself.
# --------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def mas_resolve_model_ref(ref: str, purpose: str, scope: Any) -> Any | None:
    """Resolve a model reference to a concrete LiteLLM model string and its source.

    Called whenever the runtime needs a concrete model: the agent's turn model
    (``purpose="turn"``), a summarizer's model (``"summarizer"``) or a judge
    (``"judge"``). ``scope`` is the :class:`~mas.runtime.spec.model_ref.ModelScope` with
    every slot the manifests define (a :class:`~mas.runtime.spec.model_ref.JudgeScope`
    for ``"judge"``). The kernel's own chain (spec 000) is registered last
    and always answers, so a plugin only returns for references it wants to reroute.

    Stops at first non-None result.

    :param ref: what the manifest says (``""``/``"any"`` for inherit, a
        ``spec.models[].id``, or a LiteLLM model string).
    :param purpose: ``"turn"``, ``"summarizer"`` or ``"judge"``.
    :param scope: the model slots in force.
    :return: a :class:`~mas.runtime.spec.model_ref.ModelChoice`, or ``None`` to defer.
    """
