"""Turn pydantic validation errors into one-line :class:`~mas.runtime.errors.Problem` s."""

from __future__ import annotations

import difflib
import json
import re
import types
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from mas.runtime.errors import Problem


def join_path(prefix: str, loc: Sequence[str | int]) -> str:
    """Join a YAML path prefix and a pydantic ``loc`` as ``a.b[0].c``."""
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif not _PLAIN_KEY.fullmatch(str(part)):
            # Keys with spaces, dots or control characters are quoted so the path stays
            # one unambiguous line.
            path += f"[{json.dumps(str(part))}]"
        else:
            path = f"{path}.{part}" if path else str(part)
    return path


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_\-]+")


def problems_from_validation(
    error: ValidationError, source: str, prefix: str = "",
    model: type[BaseModel] | None = None,
) -> list[Problem]:
    """One :class:`Problem` per pydantic error, located under ``prefix``.

    Pydantic's own location segments for union branches and tagged unions (such as
    ``function-after[...]``, or a discriminator's tag spelled in brackets, ``[turn]``)
    are dropped so the path matches what the user wrote; a validator's message comes
    without pydantic's ``Value error,`` before it.

    :param model: the model ``error`` came from: an unknown key is then told the field
        of its mapping it reads as, when one is close (``did you mean 'keep_turns'?``).
    """
    problems = []
    for item in error.errors(include_url=False):
        loc = [part for part in item["loc"] if not _is_internal(part)]
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown field (not allowed here)" + _did_you_mean(model, item["loc"])
        elif item["type"] == "value_error":
            # A validator's own sentence, without pydantic's "Value error, " before it.
            message = message.removeprefix("Value error, ")
        problems.append(
            Problem(
                source=source,
                location=join_path(prefix, loc),
                message=message,
                value=item.get("input"),
                has_value=item["type"] != "missing",
            )
        )
    return problems


def _is_internal(part: str | int) -> bool:
    return isinstance(part, str) and ("[" in part or part.startswith("function-"))


def _did_you_mean(model: type[BaseModel] | None, loc: Sequence[str | int]) -> str:
    """``; did you mean 'x'?`` for the unknown key at the end of ``loc``, or nothing."""
    if model is None or not loc:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), _keys_at(model, loc[:-1]), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _keys_at(model: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    """The keys the mapping at pydantic's location ``loc`` inside ``model`` accepts (none
    when the walk cannot tell which model it is)."""
    current: Any = model
    for part in loc:
        current = _inside(current, part)
        if current is None:
            return []
    current = _bare(current)
    # A union (its tag gone from the location) offers the keys of each model it holds.
    branches = map(_bare, get_args(current)) if get_origin(current) in (
        Union, types.UnionType) else [current]
    return [field.alias or name for branch in branches if _is_model(branch)
            for name, field in branch.model_fields.items()]


def _inside(annotation: Any, part: str | int) -> Any:
    """The annotation one location segment into ``annotation`` (``None``: not found)."""
    annotation = _bare(annotation)
    if isinstance(part, str) and _is_internal(part):
        return annotation  # a tagged union's tag: the branch is chosen by what follows
    if get_origin(annotation) in (Union, types.UnionType):
        for branch in map(_bare, get_args(annotation)):
            if getattr(branch, "__name__", None) == part:  # pydantic names the branch
                return branch
            found = _inside(branch, part)
            if found is not None:
                return found
        return None
    if _is_model(annotation):
        fields = annotation.model_fields
        named = next((f for n, f in fields.items() if part in (n, f.alias)), None)
        return None if named is None else named.annotation
    origin, args = get_origin(annotation), get_args(annotation)
    if isinstance(part, int) and isinstance(origin, type) and issubclass(origin, Sequence):
        return args[0] if args else None
    if isinstance(part, str) and isinstance(origin, type) and issubclass(origin, Mapping):
        return args[1] if len(args) == 2 else None
    return None


def _is_model(annotation: Any) -> bool:
    # A parametrised generic (list[int]) passes isinstance(..., type) on Python 3.10.
    return isinstance(annotation, type) and not get_args(annotation) and issubclass(
        annotation, BaseModel)


def _bare(annotation: Any) -> Any:
    """``annotation`` without its ``Annotated[...]`` metadata."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation
