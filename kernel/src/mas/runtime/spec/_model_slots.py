"""The vocabulary of model resolution: inherit values, source labels, rows and choices.

Private to :mod:`mas.runtime.spec.model_ref`, which re-exports the public names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml

from mas.runtime.errors import MasError

INHERIT = "any"
"""The manifest value meaning "no pin here: inherit from the next slot"."""

PURPOSES = ("turn", "summarizer", "judge")
"""What a model reference can be resolved for."""

MAIN_SLOT = "main"
SUMMARIZER_SLOT = "summarizer"
JUDGE_SLOT = "judge"

# Source labels that are not per-slot (the per-slot ones are built by the helpers below).
SOURCE_AGENT = "agent"
SOURCE_OVERRIDE = "override"
SOURCE_EXPERIMENT_MODEL = "experiment.model"
SOURCE_CONFIG_DEFAULT = "defaults.model"
SOURCE_PACKAGE_DEFAULT = "package.defaults.model"


class ModelResolutionError(MasError, LookupError):
    """No concrete model could be found, or a resolver answered with the wrong type."""


def is_inherit(value: str | None) -> bool:
    """True for a missing, empty or ``any`` value: the slot does not pin a model."""
    return value is None or value.strip().lower() in ("", INHERIT)


def concrete(value: str | None) -> str | None:
    """The pinned model string (stripped), or ``None`` when ``value`` inherits."""
    return None if value is None or is_inherit(value) else value.strip()


def agent_row_source(slot: str) -> str:
    """Source label of the agent's own ``spec.models[]`` row ``slot``."""
    return f"spec.models[id={slot}]"


def mas_row_source(slot: str) -> str:
    """Source label of the enclosing MAS's ``spec.models[]`` row ``slot``."""
    return f"mas.spec.models[id={slot}]"


def experiment_slot_source(slot: str) -> str:
    """Source label of the experiment (or lab) slot map entry ``slot``."""
    return f"experiment.models.{slot}"


@lru_cache(maxsize=1)
def package_default_model() -> str:
    """The ``model`` of the kernel's ``data/defaults.yaml`` (read once per process)."""
    text = resources.files("mas.runtime").joinpath("data", "defaults.yaml").read_text("utf-8")
    data = yaml.safe_load(text) or {}
    model = concrete(data.get("model")) if isinstance(data, dict) else None
    if model is None:
        raise ModelResolutionError("mas.runtime data/defaults.yaml: 'model' must be a model string")
    return model


def map_model(model: str, mappings: Mapping[str, str] | None) -> str:
    """The deployed model for ``model`` under infra model mappings (one exact-match hop)."""
    if not mappings:
        return model
    mapped = concrete(mappings.get(model))
    return mapped if mapped is not None else model


@dataclass(frozen=True)
class ModelRow:
    """One ``spec.models[]`` row of an Agent or MAS manifest.

    :ivar id: the slot id (``main``, ``summarizer``, or any name the manifest chooses).
    :ivar model: the model string; ``"any"`` inherits; ``None`` means the row has no
        ``model`` field at all.
    :ivar context_window: explicit input window override, ``None`` for auto.
    :ivar max_tokens: completion reserve / output limit, ``None`` when unset.
    """

    id: str
    model: str | None
    context_window: int | None = None
    max_tokens: int | None = None


@dataclass(frozen=True)
class ModelChoice:
    """A resolved model and the field that supplied it.

    :ivar model: the concrete LiteLLM model string (before infra model mappings).
    :ivar source: the winning field, e.g. ``spec.models[id=summarizer]`` or ``override``.
    :ivar slot: the slot whose row settings (``context_window``, ``max_tokens``) apply to
        this model, or ``None`` for a raw override string.
    """

    model: str
    source: str
    slot: str | None = None
