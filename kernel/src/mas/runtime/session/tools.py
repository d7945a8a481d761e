"""Python-function tools with JSON schemas, as an agent session calls them."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


@dataclass(frozen=True)
class Tool:
    """A function the model may call.

    :ivar name: the tool name the model uses.
    :ivar description: what it does, shown to the model.
    :ivar parameters: JSON Schema of its keyword arguments.
    :ivar function: called with the model's arguments; its result is sent back as text.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any]

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: dict[str, Any] | None = None,
    ) -> Tool:
        """Build a tool from a typed function: its name, docstring and annotations."""
        return cls(
            name=name or function.__name__,
            description=description or (inspect.getdoc(function) or "").split("\n\n")[0],
            parameters=parameters or schema_of(function),
            function=function,
        )

    @property
    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def invoke(self, arguments: str | dict[str, Any] | None) -> tuple[str, bool]:
        """Run the tool on the model's arguments; returns ``(text, ok)``.

        Bad arguments and exceptions come back as an error text for the model (``ok`` is
        false) rather than ending the turn.
        """
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
            if not isinstance(args, dict):
                raise TypeError("arguments must be a JSON object")
            result = self.function(**args)
        except Exception as exc:  # the model sees the error and may try again
            return f"error: {type(exc).__name__}: {exc}", False
        return result if isinstance(result, str) else json.dumps(result, default=str), True


def schema_of(function: Callable[..., Any]) -> dict[str, Any]:
    """JSON Schema of ``function``'s keyword arguments from its annotations and defaults."""
    hints = get_type_hints(function)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in inspect.signature(function).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(name, str)
        properties[name] = {"type": _JSON_TYPES.get(annotation, "string")}
        if param.default is inspect.Parameter.empty:
            required.append(name)
        else:
            properties[name]["default"] = param.default
    return {"type": "object", "properties": properties, "required": required}
