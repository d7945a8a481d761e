"""Deep merge of Overlay patches into manifest specs.

Semantics (documented in docs/overlay.md):

- mapping + mapping: merged key by key, recursively;
- a list of mappings that all have ``id`` (like ``spec.models``) + such a list: rows merged
  by ``id``; rows with new ids are appended in patch order;
- any other value, lists included: the patch value replaces the target value;
- ``null`` in the patch: removes the key.
"""

from __future__ import annotations

import copy
from typing import Any


def deep_merge(target: Any, patch: Any) -> Any:
    """Return ``target`` with ``patch`` merged in; neither argument is modified."""
    if isinstance(target, dict) and isinstance(patch, dict):
        merged = copy.deepcopy(target)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            elif key in merged:
                merged[key] = deep_merge(merged[key], value)
            else:
                merged[key] = copy.deepcopy(value)
        return merged
    if _rows_with_ids(target) and _rows_with_ids(patch):
        return _merge_rows(target, patch)
    return copy.deepcopy(patch)


def _rows_with_ids(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(row, dict) and "id" in row for row in value)
    )


def _merge_rows(target: list[dict[str, Any]], patch: list[dict[str, Any]]) -> list[Any]:
    merged = [copy.deepcopy(row) for row in target]
    index = {row["id"]: i for i, row in enumerate(merged)}
    for row in patch:
        if row["id"] in index:
            position = index[row["id"]]
            merged[position] = deep_merge(merged[position], row)
        else:
            index[row["id"]] = len(merged)
            merged.append(copy.deepcopy(row))
    return merged
