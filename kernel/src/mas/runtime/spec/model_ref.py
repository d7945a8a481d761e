"""Model-reference resolution: which concrete model a turn, a summary or a judge uses.

Committed manifests pin a model or say ``any``; this module walks the slots in the order
spec 000 fixes and returns the model together with the field that won (its *source*),
which the runtime logs and stores on compaction and eval metadata.

- Turn (slot ``main``): agent ``spec.models[id=main]`` > MAS ``spec.models[id=main]`` >
  ``experiment.models.main`` > ``experiment.model`` > config.yaml ``defaults.model`` >
  package ``defaults.yaml``.
- Summarizer: see :func:`resolve_builtin`; the default is the ``summarizer`` slot, else the
  agent's turn model (source ``agent``).
- Judge: the nine steps of :data:`JUDGE_STEPS`.

Values that are empty or ``any`` (any case) mean "inherit" and are skipped. The data types
here are plain frozen dataclasses: the manifest layer builds them, this module never
imports it. :func:`resolve_model` goes through the ``mas_resolve_model_ref`` hook so a
plugin can reroute a reference; the kernel's chain (:func:`resolve_builtin`) answers last.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from mas.runtime.spec._model_slots import (
    INHERIT,
    JUDGE_SLOT,
    MAIN_SLOT,
    PURPOSES,
    SOURCE_AGENT,
    SOURCE_CONFIG_DEFAULT,
    SOURCE_EXPERIMENT_MODEL,
    SOURCE_OVERRIDE,
    SOURCE_PACKAGE_DEFAULT,
    SUMMARIZER_SLOT,
    ModelChoice,
    ModelResolutionError,
    ModelRow,
    agent_row_source,
    concrete,
    experiment_slot_source,
    is_inherit,
    map_model,
    mas_row_source,
    package_default_model,
)

if TYPE_CHECKING:
    from mas.runtime.runtime import Runtime

log = logging.getLogger(__name__)


def _rows_by_id(rows: Iterable[ModelRow] | Mapping[str, ModelRow]) -> dict[str, ModelRow]:
    if isinstance(rows, Mapping):
        return dict(rows)
    return {row.id: row for row in rows}


class RowValue(NamedTuple):
    """A ``spec.models[]`` row setting and the row it came from (unpacks as value, source).

    :ivar source: e.g. ``spec.models[id=main].context_window`` (the agent's manifest) or
        ``mas.spec.models[id=main].max_tokens`` (the enclosing MAS manifest).
    """

    value: int
    source: str


@dataclass(frozen=True)
class ModelScope:
    """Every model slot in force for one agent (turn and summarizer resolution).

    :ivar agent_models: the agent's ``spec.models[]`` rows by id.
    :ivar mas_models: the enclosing MAS's ``spec.models[]`` rows by id.
    :ivar experiment_models: the experiment (or lab) ``models`` slot map.
    :ivar experiment_model: scalar ``experiment.model`` (shorthand for ``models.main``).
    :ivar config_default: ``defaults.model`` of the local config.yaml.
    :ivar package_default: the package ``defaults.yaml`` model; ``None`` disables this
        last step, so an unpinned chain raises instead.
    :ivar engine_model: the agent's live engine model when it is already known (it may
        have been rerouted by a plugin); ``None`` resolves the turn chain instead.
    """

    agent_models: Mapping[str, ModelRow] = field(default_factory=dict)
    mas_models: Mapping[str, ModelRow] = field(default_factory=dict)
    experiment_models: Mapping[str, str] = field(default_factory=dict)
    experiment_model: str | None = None
    config_default: str | None = None
    package_default: str | None = field(default_factory=package_default_model)
    engine_model: str | None = None

    @classmethod
    def build(
        cls,
        agent_models: Iterable[ModelRow] | Mapping[str, ModelRow] = (),
        mas_models: Iterable[ModelRow] | Mapping[str, ModelRow] = (),
        **fields: Any,
    ) -> ModelScope:
        """Build a scope from row lists (as they stand in the manifests) or id maps."""
        return cls(
            agent_models=_rows_by_id(agent_models), mas_models=_rows_by_id(mas_models), **fields
        )

    def has_slot(self, slot: str) -> bool:
        """True if ``slot`` is a model slot id here rather than a LiteLLM model string."""
        return (
            slot == MAIN_SLOT
            or slot in self.agent_models
            or slot in self.mas_models
            or slot in self.experiment_models
        )

    def row_value(self, slot: str | None, name: str) -> RowValue | None:
        """``context_window`` or ``max_tokens`` of ``slot``, with the row that supplied it.

        The agent's own row wins. The MAS row of the same id is merged in only where spec
        000 merges slots by id: when the agent inherits that slot's model (no row, or a
        row on ``any`` or without ``model``), or names the same model as the MAS row. An
        agent row pinning another model never takes the MAS row's numbers: they describe
        a model the agent does not call.
        """
        if slot is None:
            return None
        agent, mas = self.agent_models.get(slot), self.mas_models.get(slot)
        if agent is not None and getattr(agent, name) is not None:
            return RowValue(int(getattr(agent, name)), f"{agent_row_source(slot)}.{name}")
        if mas is None or getattr(mas, name) is None:
            return None
        pinned = concrete(agent.model) if agent is not None else None
        if pinned is not None and pinned != concrete(mas.model):
            return None
        return RowValue(int(getattr(mas, name)), f"{mas_row_source(slot)}.{name}")

    def row_setting(self, slot: str | None, name: str) -> int | None:
        """The value of :meth:`row_value`, without its source."""
        found = self.row_value(slot, name)
        return found.value if found is not None else None


@dataclass(frozen=True)
class JudgeScope:
    """Every field the MCE judge chain reads (spec 000, "Resolution order").

    :ivar step_model: the ``eval_mce`` step's ``config.model``.
    :ivar step_judge_model: the step's ``config.judge_model`` alias.
    :ivar evaluation_model: ``experiment.evaluation.model``.
    :ivar evaluation_config_model: ``experiment.evaluation.config.model``.
    :ivar template_vars: pipeline template variables (``eval_model``, ``judge_model``).
    :ivar experiment_models: the experiment (or lab) ``models`` slot map.
    :ivar experiment_model: scalar ``experiment.model``.
    :ivar application_models: model strings written in the applications' Agent and MAS
        ``spec.models[]`` rows (step 7). Only what the manifests say: a resolved turn
        model or a model recorded in a run folder is not one.
    :ivar metadata_model_name: legacy ``experiment.metadata.model_name``.
    :ivar config_default: ``defaults.model`` of the local config.yaml.
    :ivar package_default: the package ``defaults.yaml`` model; ``None`` disables it.
    :ivar override: a concrete model the caller passed itself (``mas-ctl eval --model``):
        it wins over all nine steps, with source ``override``.
    """

    step_model: str | None = None
    step_judge_model: str | None = None
    evaluation_model: str | None = None
    evaluation_config_model: str | None = None
    template_vars: Mapping[str, str] = field(default_factory=dict)
    experiment_models: Mapping[str, str] = field(default_factory=dict)
    experiment_model: str | None = None
    application_models: tuple[str, ...] | list[str] = ()
    metadata_model_name: str | None = None
    config_default: str | None = None
    package_default: str | None = field(default_factory=package_default_model)
    override: str | None = None


def _unique_application_model(scope: JudgeScope) -> str | None:
    models = {m for m in (concrete(v) for v in scope.application_models) if m is not None}
    return models.pop() if len(models) == 1 else None


JUDGE_STEPS: tuple[tuple[str, Callable[[JudgeScope], str | None]], ...] = (
    ("eval_mce.config.model", lambda s: s.step_model),
    ("eval_mce.config.judge_model", lambda s: s.step_judge_model),
    ("experiment.evaluation.model", lambda s: s.evaluation_model),
    ("experiment.evaluation.config.model", lambda s: s.evaluation_config_model),
    ("template_vars.eval_model", lambda s: s.template_vars.get("eval_model")),
    ("template_vars.judge_model", lambda s: s.template_vars.get("judge_model")),
    (experiment_slot_source(JUDGE_SLOT), lambda s: s.experiment_models.get(JUDGE_SLOT)),
    (experiment_slot_source(MAIN_SLOT), lambda s: s.experiment_models.get(MAIN_SLOT)),
    (SOURCE_EXPERIMENT_MODEL, lambda s: s.experiment_model),
    ("application.spec.models", _unique_application_model),
    ("experiment.metadata.model_name", lambda s: s.metadata_model_name),
    (SOURCE_CONFIG_DEFAULT, lambda s: s.config_default),
    (SOURCE_PACKAGE_DEFAULT, lambda s: s.package_default),
)
"""The judge chain as (source label, field getter), in the order spec 000 lists it."""


# -- the chains ------------------------------------------------------------------------

class _AgentEngine:
    """Marker: a slot row without a ``model`` field sends the reference to the agent engine."""


_AGENT_ENGINE = _AgentEngine()


def _slot_chain(
    slot: str, scope: ModelScope, *, honour_missing: bool
) -> ModelChoice | _AgentEngine | None:
    """Agent row > MAS row > experiment.models.<slot> (> experiment.model for ``main``).

    Returns a :class:`ModelChoice`, ``None`` when every step inherits, or
    :data:`_AGENT_ENGINE` when ``honour_missing`` and the first row found has no model field.
    """
    for rows, label in ((scope.agent_models, agent_row_source), (scope.mas_models, mas_row_source)):
        row = rows.get(slot)
        if row is None:
            continue
        if row.model is None and honour_missing:
            return _AGENT_ENGINE
        model = concrete(row.model)
        if model is not None:
            return ModelChoice(model, label(slot), slot)
    model = concrete(scope.experiment_models.get(slot))
    if model is not None:
        return ModelChoice(model, experiment_slot_source(slot), slot)
    if slot == MAIN_SLOT:
        model = concrete(scope.experiment_model)
        if model is not None:
            return ModelChoice(model, SOURCE_EXPERIMENT_MODEL, slot)
    return None


def _slot_labels(slot: str) -> list[str]:
    labels = [agent_row_source(slot), mas_row_source(slot), experiment_slot_source(slot)]
    return [*labels, SOURCE_EXPERIMENT_MODEL] if slot == MAIN_SLOT else labels


def _resolve_turn(ref: str, scope: ModelScope) -> ModelChoice:
    slot = MAIN_SLOT if is_inherit(ref) else ref.strip()
    if not scope.has_slot(slot):
        return ModelChoice(slot, SOURCE_OVERRIDE)
    choice = _slot_chain(slot, scope, honour_missing=False)
    if isinstance(choice, ModelChoice):
        return choice
    for label, value in (
        (SOURCE_CONFIG_DEFAULT, scope.config_default),
        (SOURCE_PACKAGE_DEFAULT, scope.package_default),
    ):
        model = concrete(value)
        if model is not None:
            return ModelChoice(model, label, slot)
    tried = [*_slot_labels(slot), "config.yaml defaults.model", "package defaults.yaml"]
    raise _nothing_resolved("turn", tried)


def _agent_engine(scope: ModelScope) -> ModelChoice:
    engine = concrete(scope.engine_model)
    if engine is not None:
        return ModelChoice(engine, SOURCE_AGENT, MAIN_SLOT)
    turn = _resolve_turn("", scope)
    return ModelChoice(turn.model, SOURCE_AGENT, turn.slot)


def _resolve_summarizer(ref: str, scope: ModelScope) -> ModelChoice:
    if is_inherit(ref):
        choice = _slot_chain(SUMMARIZER_SLOT, scope, honour_missing=False)
        return choice if isinstance(choice, ModelChoice) else _agent_engine(scope)
    ref = ref.strip()
    if scope.has_slot(ref):
        choice = _slot_chain(ref, scope, honour_missing=True)
        return choice if isinstance(choice, ModelChoice) else _agent_engine(scope)
    try:
        engine = _agent_engine(scope)
    except ModelResolutionError:
        engine = None  # no engine model to compare with: the string is an override anyway
    if engine is not None and engine.model == ref:
        return engine
    return ModelChoice(ref, SOURCE_OVERRIDE)


def _resolve_judge(ref: str, scope: JudgeScope) -> ModelChoice:
    caller = concrete(ref) or concrete(scope.override)
    if caller is not None:
        return ModelChoice(caller, SOURCE_OVERRIDE)
    for label, getter in JUDGE_STEPS:
        model = concrete(getter(scope))
        if model is not None:
            return ModelChoice(model, label, JUDGE_SLOT)
    tried = [label for label, _ in JUDGE_STEPS]
    distinct = sorted({m for m in (concrete(v) for v in scope.application_models) if m})
    if len(distinct) > 1:
        tried[tried.index("application.spec.models")] = (
            f"application.spec.models (not unique: {', '.join(distinct)})"
        )
    raise _nothing_resolved("judge", tried)


def _nothing_resolved(purpose: str, tried: list[str]) -> ModelResolutionError:
    return ModelResolutionError(
        f"no concrete {purpose} model: every field is empty or 'any' (tried {', '.join(tried)}); "
        "pin a model in one of them or set defaults.model in config.yaml"
    )


def resolve_builtin(ref: str | None, purpose: str, scope: Any) -> ModelChoice:
    """The kernel's own chain for ``ref`` (spec 000); it always answers or raises.

    - ``turn`` (``scope``: :class:`ModelScope`): an empty/``any`` ref resolves slot
      ``main``; a slot id resolves that slot's chain, then the defaults; any other string
      is used as is (source ``override``).
    - ``summarizer`` (:class:`ModelScope`): empty/``any`` -> the ``summarizer`` slot chain,
      else the agent's engine model (source ``agent``); a slot id -> that slot's chain
      (a row with no ``model`` field, or nothing concrete, -> the agent engine); the
      engine's own model string -> source ``agent``; anything else -> ``override``.
    - ``judge`` (:class:`JudgeScope`): a concrete ref, else the scope's ``override``, is
      an explicit caller override (source ``override``); otherwise the
      :data:`JUDGE_STEPS` in order.

    :raises ModelResolutionError: unknown purpose, wrong scope type, or nothing concrete.
    """
    ref = ref or ""
    if purpose not in PURPOSES:
        raise ModelResolutionError(
            f"unknown model purpose {purpose!r}; expected one of {', '.join(PURPOSES)}"
        )
    if purpose == "judge":
        if isinstance(scope, JudgeScope):
            return _resolve_judge(ref, scope)
    elif isinstance(scope, ModelScope):
        return _resolve_turn(ref, scope) if purpose == "turn" else _resolve_summarizer(ref, scope)
    expected = JudgeScope if purpose == "judge" else ModelScope
    raise ModelResolutionError(
        f"{purpose} model resolution needs a {expected.__name__}, got {type(scope).__name__}"
    )


def resolve_model(runtime: Runtime, ref: str | None, purpose: str, scope: Any) -> ModelChoice:
    """Resolve ``ref`` through the ``mas_resolve_model_ref`` hook (plugins first, kernel last).

    :param runtime: the runtime whose plugin manager is asked.
    :param ref: the manifest value (``""``/``"any"``, a slot id, or a LiteLLM string).
    :param purpose: ``"turn"``, ``"summarizer"`` or ``"judge"``.
    :param scope: a :class:`ModelScope` (turn, summarizer) or :class:`JudgeScope` (judge).
    :raises ModelResolutionError: nothing concrete, or a plugin answered with something
        other than a :class:`ModelChoice`.
    """
    answers = runtime.call_hook(
        "mas_resolve_model_ref", ref=ref or "", purpose=purpose, scope=scope
    )
    choice = answers[0] if answers else None
    if not isinstance(choice, ModelChoice):
        raise ModelResolutionError(
            f"mas_resolve_model_ref returned {type(choice).__name__} for {purpose} ref "
            f"{ref!r}; a resolver must return a ModelChoice or None"
        )
    log.debug("%s model ref=%r -> %s (source=%s)", purpose, ref, choice.model, choice.source)
    return choice


__all__ = [
    "INHERIT",
    "SOURCE_AGENT",
    "SOURCE_OVERRIDE",
    "JUDGE_STEPS",
    "PURPOSES",
    "JudgeScope",
    "ModelChoice",
    "ModelResolutionError",
    "ModelRow",
    "ModelScope",
    "RowValue",
    "concrete",
    "is_inherit",
    "map_model",
    "package_default_model",
    "resolve_builtin",
    "resolve_model",
]
