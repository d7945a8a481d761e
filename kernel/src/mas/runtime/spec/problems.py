"""Turn pydantic validation errors into one-line :class:`~mas.runtime.errors.Problem` s."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from pydantic import ValidationError

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
    error: ValidationError, source: str, prefix: str = ""
) -> list[Problem]:
    """One :class:`Problem` per pydantic error, located under ``prefix``.

    Pydantic's own location segments for union branches and tagged unions (such as
    ``function-after[...]``, or a discriminator's tag spelled in brackets, ``[turn]``)
    are dropped so the path matches what the user wrote; a validator's message comes
    without pydantic's ``Value error,`` before it.
    """
    problems = []
    for item in error.errors(include_url=False):
        loc = [part for part in item["loc"] if not _is_internal(part)]
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown field (not allowed here)"
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
