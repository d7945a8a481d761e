"""``mas-ctl plugins TYPE``: a type's description, provider and params schema (issue 14.3)."""

from __future__ import annotations

import json


def test_plugins_type_shows_description_and_params_schema(mas_ctl) -> None:  # type: ignore[no-untyped-def]
    done = mas_ctl("plugins", "Sliding-Window")
    assert done.code == 0, done.err
    [entry] = json.loads(done.out)
    assert (entry["kind"], entry["name"], entry["plugin"]) == (
        "context_manager",
        "sliding_window",
        "standard",
    )
    assert entry["description"]
    assert entry["params"]["additionalProperties"] is False
    assert "keep_turns" in entry["params"]["properties"]


def test_plugins_type_restricted_to_a_kind(mas_ctl) -> None:  # type: ignore[no-untyped-def]
    done = mas_ctl("plugins", "llm", "--kind", "summarizer")
    assert done.code == 0, done.err
    assert [e["kind"] for e in json.loads(done.out)] == ["summarizer"]


def test_plugins_unknown_type_is_one_line_with_the_closest_match(mas_ctl) -> None:  # type: ignore[no-untyped-def]
    done = mas_ctl("plugins", "slidng_window")
    assert done.code == 2
    assert done.out == ""
    [line] = done.err.strip().splitlines()
    assert "unknown registered type 'slidng_window' (did you mean 'sliding_window'?)" in line
