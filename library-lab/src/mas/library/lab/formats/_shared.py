"""What both benchmark readers need: validation with located problems, and the item."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from mas.library.lab.dataset import Item
from mas.runtime.errors import ManifestError, Problem
from mas.runtime.spec.problems import problems_from_validation

Model = TypeVar("Model", bound=BaseModel)


def parsed(model: type[Model], data: Any, source: str, where: str) -> Model:
    """``data`` validated as ``model``.

    :raises ManifestError: one problem per field, located under ``where`` (``[3].qa[5]``).
    """
    if not isinstance(data, dict):
        raise ManifestError([Problem(source, where, "must be a JSON object",
                                     type(data).__name__, True)])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ManifestError(problems_from_validation(exc, source, where, model=model)) from None


def built_item(data: dict[str, Any], source: str, where: str, id_field: str) -> Item:
    """The lab item of one element; text that cannot be written as UTF-8 is refused here,
    before it reaches ``item.json``.

    :param id_field: the element's field the item's ``id`` comes from, which a problem
        with the id names (``[0].sample_id``: the user's field, not the lab's).
    """
    try:
        item = parsed(Item, data, source, where)
    except ManifestError as exc:
        raise ManifestError([
            replace(p, location=f"{where}.{id_field}") if p.location == f"{where}.id" else p
            for p in exc.problems]) from None
    try:
        item.model_dump_json().encode("utf-8")
    except ValueError:  # pydantic's serialization error, or the encoder's
        raise ManifestError([Problem(source, where, "holds a lone surrogate (such as "
                                     "\\ud800), which is not Unicode text")]) from None
    return item


def answer_text(answer: str | int | float | None) -> list[str]:
    """The expected strings of a question (none when the file gives no answer)."""
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return []
    return [answer.strip() if isinstance(answer, str) else str(answer)]
