"""JSON Schema of a manifest kind, with every registered type's params (what an editor
needs to catch what ``mas-ctl validate`` catches).

The pydantic model of a kind leaves a binding's ``params`` and a step's ``config`` open;
here each is replaced, from the runtime's registries (third-party plugins included), by a
choice of the registered types:

- a property named after a registry kind whose value is a binding (``context_manager``,
  ``summarizer``, ``identifier_extractor``, or a plugin's) accepts the string form (a
  type whose params need nothing) or ``{type, params}`` with that type's ``Params``
  schema, one ``oneOf`` branch per type told apart by ``type``; the ``model`` shorthand
  is allowed beside ``type`` where the params have a ``model``;
- an experiment step (``application.post[]``) gets its type's ``config`` schema;
- ``type`` strings match the way binding folds them (any case, ``-`` for ``_``, aliases).

A binding field named otherwise keeps a generic binding (still accepting the string form).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from pydantic import BaseModel

from mas.runtime.registry import KINDS, QUALIFIER, TypeEntry
from mas.runtime.runtime import Runtime
from mas.runtime.spec.binding import SHORTHAND_KEYS

DIALECT = "https://json-schema.org/draft/2020-12/schema"

Schema = dict[str, Any]

_STEP_KIND = "lab_step"
_NOT_BINDINGS = {"eval_metric", "model_provider", "cli_command", _STEP_KIND}
"""Kinds bound by id lists, providers or commands rather than by a binding field."""


def kind_schema(runtime: Runtime, model: type[BaseModel]) -> Schema:
    """The JSON Schema of ``model`` (a manifest kind), params filled from ``runtime``."""
    schema = model.model_json_schema(by_alias=True)
    return {"$schema": DIALECT, **_Filler(runtime, schema).fill()}


def folded_pattern(names: list[str]) -> str:
    """A regex matching what binding folds to one of ``names`` (case, ``-``/``_``, spaces)."""
    alternatives = sorted({_fold_chars(name) for name in names})
    return rf"^\s*({'|'.join(alternatives)})\s*$"


def _fold_chars(name: str) -> str:
    parts = []
    for char in name:
        if char == "_":
            parts.append("[-_]")
        elif char.isalpha():
            parts.append(f"[{char.lower()}{char.upper()}]")
        else:
            parts.append(re.escape(char))
    return "".join(parts)


class _Filler:
    """Replaces open bindings and step configs of one schema, adding ``$defs`` as needed."""

    def __init__(self, runtime: Runtime, schema: Schema) -> None:
        self.runtime = runtime
        self.schema = schema
        self.defs: dict[str, Schema] = schema.setdefault("$defs", {})

    def fill(self) -> Schema:
        self._walk({k: v for k, v in self.schema.items() if k != "$defs"})
        done: set[str] = set()
        while todo := [key for key in self.defs if key not in done]:
            for key in todo:
                done.add(key)
                if self.defs[key].get("title") == "StepSpec":
                    self.defs[key] = self._steps(self.defs[key])
                self._walk(self.defs[key])
        for key, value in list(self.defs.items()):
            if _is_binding(value):
                # The generic binding: a type string is as good as {type: ...}.
                self.defs[key] = {"anyOf": [{"type": "string", "minLength": 1}, value]}
        return self.schema

    def _walk(self, node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                self._walk(item)
            return
        if not isinstance(node, dict):
            return
        for name, sub in (node.get("properties") or {}).items():
            if name in KINDS and name not in _NOT_BINDINGS and self._refers_to_binding(sub):
                node["properties"][name] = self._retarget(sub, name)
        for key, value in node.items():
            if key != "$defs":
                self._walk(value)

    # -- bindings --------------------------------------------------------------------

    def _refers_to_binding(self, sub: Any) -> bool:
        refs = [sub, *sub.get("anyOf", [])] if isinstance(sub, dict) else []
        return any(self._target(r) is not None and _is_binding(self._target(r) or {})
                   for r in refs)

    def _target(self, ref: Any) -> Schema | None:
        if not isinstance(ref, dict) or "$ref" not in ref:
            return None
        return self.defs.get(str(ref["$ref"]).rsplit("/", 1)[-1])

    def _retarget(self, sub: Schema, kind: str) -> Schema:
        new = {"$ref": f"#/$defs/{self._kind_binding(kind)}"}
        out = {k: v for k, v in sub.items() if k not in ("$ref", "anyOf")}
        if "anyOf" in sub:
            out["anyOf"] = [new if self._refers_to_binding(r) else r for r in sub["anyOf"]]
        else:
            out.update(new)
        return out

    def _kind_binding(self, kind: str) -> str:
        key = f"binding.{kind}"
        if key in self.defs:
            return key
        self.defs[key] = {}  # reserved first: a params model may bind its own kind again
        registry = self.runtime.registries[kind]
        branches, bare = [], []
        for entry, names in registry.bindable():
            params = self._params(kind, entry)
            properties: Schema = {
                "type": {"type": "string", "pattern": folded_pattern(names),
                         "examples": [entry.name]},
                "params": {"$ref": f"#/$defs/{params}"},
            }
            fields = entry.params.model_fields
            for shorthand in SHORTHAND_KEYS:
                if shorthand in fields:
                    properties[shorthand] = copy.deepcopy(
                        self.defs[params].get("properties", {}).get(shorthand, {}))
            branches.append({"type": "object", "title": self._title(kind, entry),
                             "description": entry.description or f"{kind} {entry.name}",
                             "properties": properties, "required": ["type"],
                             "additionalProperties": False})
            if not self.defs[params].get("required"):
                bare.extend(names)
        choices: list[Schema] = [{"oneOf": branches}] if branches else []
        if bare:
            choices.insert(0, {"type": "string", "pattern": folded_pattern(bare)})
        self.defs[key] = {
            "description": f"A {kind} binding: a registered type string, or "
            "{type, params} with that type's params.",
            "anyOf": choices or [{"not": {}}],
        }
        return key

    def _title(self, kind: str, entry: TypeEntry) -> str:
        # A clashed name is held by several entries: each is titled by its plugin too.
        clashed = entry.name in self.runtime.registries[kind].clashes
        return f"{entry.provider.name}{QUALIFIER}{entry.name}" if clashed else entry.name

    def _params(self, kind: str, entry: TypeEntry) -> str:
        """Add ``entry``'s params schema (and its own defs) to ``$defs``; returns its key."""
        key = f"{kind}.{self._title(kind, entry)}"
        if key in self.defs:
            return key
        schema = entry.params.model_json_schema(
            by_alias=True, ref_template=f"#/$defs/{key}.{{model}}")
        for name, sub in schema.pop("$defs", {}).items():
            self.defs[f"{key}.{name}"] = sub
        self.defs[key] = schema
        return key

    # -- pipeline steps ----------------------------------------------------------------

    def _steps(self, spec: Schema) -> Schema:
        registry = self.runtime.registries[_STEP_KIND]
        branches = []
        for entry, names in registry.bindable():
            branch = copy.deepcopy(spec)
            branch["title"] = self._title(_STEP_KIND, entry)
            branch["properties"]["type"] = {
                "type": "string", "pattern": folded_pattern(names),
                "examples": [entry.name]}
            branch["properties"]["config"] = {"$ref": f"#/$defs/{self._params(_STEP_KIND, entry)}"}
            branches.append(branch)
        if not branches:
            return spec
        return {"description": spec.get("description", ""), "oneOf": branches}


def _is_binding(schema: Schema) -> bool:
    return schema.get("title") == "Binding" and set(schema.get("properties", {})) == {
        "type", "params"}
