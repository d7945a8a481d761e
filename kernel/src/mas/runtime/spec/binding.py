"""Bindings: the ``{type, params}`` blocks that name a registered type in a manifest.

Every form spec 000 allows normalizes to the same :class:`Binding`::

    summarizer: drop                                   # bare type string
    summarizer: {type: llm, params: {model: summarizer}}
    summarizer: {type: llm, model: gpt-4o-mini}        # shorthand: model moves into params
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mas.runtime.errors import ManifestError, MasError, Problem, UnknownTypeError
from mas.runtime.protocols import BindContext
from mas.runtime.spec.problems import problems_from_validation

SHORTHAND_KEYS = ("model",)
"""Keys allowed beside ``type`` that mean the same inside ``params``."""


class Binding(BaseModel):
    """A normalized binding: the type string and its raw (not yet validated) params."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(min_length=1, description="Registered type string of this kind.")
    params: dict[str, Any] = Field(default_factory=dict, description="The type's params.")

    @model_validator(mode="before")
    @classmethod
    def _normalize(cls, raw: Any) -> Any:
        if isinstance(raw, str):
            return {"type": raw, "params": {}}
        if not isinstance(raw, dict):
            return raw
        shorthand = {key: raw[key] for key in SHORTHAND_KEYS if key in raw}
        if not shorthand:
            return raw
        params = raw.get("params") or {}
        if not isinstance(params, dict):
            return raw
        clash = sorted(set(shorthand) & set(params))
        if clash:
            raise ValueError(f"{clash[0]!r} given both beside type and inside params")
        rest = {key: value for key, value in raw.items() if key not in SHORTHAND_KEYS}
        return {**rest, "params": {**params, **shorthand}}


def bind(kind: str, binding: Binding, ctx: BindContext) -> Any:
    """Validate ``binding.params`` against the registered type's ``Params`` and build it.

    :param kind: the registry kind, e.g. ``"summarizer"``.
    :param binding: the normalized binding.
    :param ctx: the agent being bound; ``ctx.location`` is this binding's YAML path.
    :raises ManifestError: unknown type (listing available names), invalid params (one
        problem per field), or params the factory rejected with ``ValueError`` or
        ``TypeError`` (one problem at ``params``); a :class:`MasError` from the factory
        (a nested binding's) propagates. A factory raising anything else is its
        plugin's fault: the plugin is reported and left out, and the binding fails as
        one naming a type of a plugin that failed to load (``KeyboardInterrupt`` passes).
    """
    registry = ctx.runtime.registries[kind]
    try:
        entry = registry.get(binding.type)
    except UnknownTypeError as exc:
        raise ManifestError([Problem(ctx.source, _at(ctx.location, "type"), str(exc))]) from exc
    try:
        params = entry.validate_params(binding.params)
    except ValidationError as exc:
        raise ManifestError(problems_from_validation(
            exc, ctx.source, _at(ctx.location, "params"), model=entry.params)) from exc
    try:
        return entry.factory(params, ctx)
    except ValidationError as exc:
        raise ManifestError(
            problems_from_validation(exc, ctx.source, _at(ctx.location, "params"))
        ) from exc
    except (ValueError, TypeError) as exc:
        # A plugin may reject params its model cannot express (one field against another,
        # a file that must exist) by raising at bind time: that is user input, not a bug.
        message = f"{binding.type}: {exc}"
        raise ManifestError([Problem(ctx.source, _at(ctx.location, "params"), message)]) from exc
    except MasError:
        raise  # meant for the user, as a nested binding's ManifestError is
    except BaseException as exc:  # a plugin's bug, SystemExit too: never a traceback
        if entry.provider.name == "builtin":
            raise  # the kernel's own bug keeps its traceback
        ctx.runtime.fail_factory(entry, exc, stage="bind")
        unknown = registry.unknown(binding.type)
        raise ManifestError([Problem(ctx.source, _at(ctx.location, "type"), str(unknown))]) from exc


def _at(location: str, key: str) -> str:
    return f"{location}.{key}" if location else key
