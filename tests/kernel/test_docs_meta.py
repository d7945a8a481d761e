"""Meta-tests: every hookspec is documented and tested; every manifest field is documented."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from mas.runtime import hookspecs
from mas.runtime.spec.binding import Binding
from mas.runtime.spec.experiment import Experiment, LocalConfig
from mas.runtime.spec.manifests import Agent, Infra, Mas, Metadata, Overlay

ROOT = Path(__file__).resolve().parents[2]
HOOKS = sorted(name for name, _ in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("mas_"))


def test_every_hookspec_has_a_docstring_with_params() -> None:
    for name in HOOKS:
        doc = inspect.getdoc(getattr(hookspecs, name)) or ""
        assert doc, name
        for param in inspect.signature(getattr(hookspecs, name)).parameters:
            assert f":param {param}:" in doc, (name, param)
        assert ":return:" in doc, name


def test_every_hookspec_is_in_the_docs() -> None:
    text = (ROOT / "docs" / "hooks.md").read_text()
    assert [h for h in HOOKS if f"`{h}(" not in text] == []


def test_every_hookspec_is_exercised_by_a_test() -> None:
    this = Path(__file__).name
    sources = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py") if p.name != this)
    assert [h for h in HOOKS if h not in sources] == []


def _models_in(annotation: object) -> list[tuple[type[BaseModel], bool]]:
    """Nested models of a field annotation, each with whether it sits in a list."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [] if annotation in (Binding, Metadata) else [(annotation, False)]
    found = []
    for arg in typing.get_args(annotation):
        in_list = typing.get_origin(annotation) is list
        found.extend((model, in_list or nested) for model, nested in _models_in(arg))
    return found


def _field_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    paths = []
    for name, field in model.model_fields.items():
        path = f"{prefix}.{field.alias or name}" if prefix else field.alias or name
        paths.append(path)
        for inner, in_list in _models_in(field.annotation):
            paths.extend(_field_paths(inner, path + ("[]" if in_list else "")))
    return paths


@pytest.mark.parametrize(
    ("model", "page"),
    [(Agent, "agent"), (Mas, "mas"), (Infra, "infra"), (Overlay, "overlay"),
     (Experiment, "experiment"), (LocalConfig, "config")],
)
def test_every_manifest_field_is_documented(model: type[BaseModel], page: str) -> None:
    text = (ROOT / "docs" / "manifests" / f"{page}.md").read_text()
    containers = {"spec", "metadata", "experiment", "defaults"}
    # A container field counts as documented when its sub-fields are.
    missing = [
        p for p in _field_paths(model)
        if f"`{p}`" not in text and p not in containers and f"`{p}." not in text
        and f"`{p}[]." not in text
    ]
    assert missing == []
