"""``auto``: the value users write for "derive it at run time", and how compile prints it.

A field that accepts ``auto`` stores ``None``. ``mas-ctl compile`` prints ``auto`` back only
for fields that accept it, and leaves every other unset field out, so that its output
loads and compiles to the same result.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field, ValidationError

AUTO = "auto"
"""What a manifest writes for a value resolved at run time (a window, a cap, a reserve)."""


def auto_to_none(value: Any) -> Any:
    """``auto`` (any case, surrounding spaces allowed) as ``None``; anything else unchanged."""
    if isinstance(value, str) and value.strip().lower() == AUTO:
        return None
    return value


def _schema_allows_auto(schema: dict[str, Any]) -> None:
    # JSON Schema of the field: what validation accepts, so an editor accepts `auto` too.
    # validation folds case and spaces, so the schema does as well.
    schema.setdefault("anyOf", []).append(
        {"type": "string", "pattern": r"^\s*[aA][uU][tT][oO]\s*$", "examples": [AUTO]}
    )


AutoInt = Annotated[
    int | None, BeforeValidator(auto_to_none), Field(json_schema_extra=_schema_allows_auto)
]
"""A positive integer, or ``auto`` / omitted for the value derived at run time."""


def dump_with_autos(model: BaseModel) -> dict[str, Any]:
    """``model`` as JSON data: unset fields that accept ``auto`` print ``auto``, the other
    unset (``None``) fields are left out, nested models likewise."""
    data: dict[str, Any] = {}
    dumped = model.model_dump(mode="json")
    for name, value in dumped.items():
        current = getattr(model, name)
        if isinstance(current, BaseModel):
            data[name] = dump_with_autos(current)
        elif current is None:
            if _accepts_auto(model, dumped, name):
                data[name] = AUTO
        else:
            data[name] = value
    return data


def _accepts_auto(model: BaseModel, dumped: dict[str, Any], name: str) -> bool:
    # Ask the model itself rather than a list of names, so a plugin's own auto fields
    # print the same way.
    try:
        probe = type(model).model_validate({**dumped, name: AUTO})
    except ValidationError:
        return False
    return getattr(probe, name) is None
