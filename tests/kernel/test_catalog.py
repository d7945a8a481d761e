"""The local model catalog: shipped data, prefix stripping, LiteLLM-map fallback, parsing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mas.runtime.catalog import (
    Catalog,
    CatalogEntry,
    CatalogError,
    Pricing,
    builtin_entries,
    default_catalog,
    entry_from_litellm,
    litellm_map_path,
    lookup_keys,
    parse_catalog,
)


def test_gemini_flash_matches_spec_003() -> None:
    entry = builtin_entries()["gemini-2.5-flash"]
    assert entry.context_window == 1_048_576
    assert entry.pricing == Pricing(0.30, 0.03, 2.50, "2026-10-06", "catalog")


@pytest.mark.parametrize(
    "model",
    ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "o3", "o4-mini",
     "claude-sonnet-4-5", "claude-haiku-4-5", "gemini-2.5-pro", "offline/default"],
)
def test_shipped_entries_are_complete_and_dated(model: str) -> None:
    entry = builtin_entries()[model]
    assert entry.context_window is not None and entry.context_window >= 100_000
    assert entry.pricing is not None
    assert entry.pricing.as_of is not None and entry.pricing.as_of.startswith("20")
    assert entry.pricing.output_per_million >= entry.pricing.input_per_million


def test_lookup_keys_strip_provider_prefixes_one_by_one() -> None:
    assert list(lookup_keys("openrouter/openai/gpt-4o")) == [
        "openrouter/openai/gpt-4o", "openai/gpt-4o", "gpt-4o"
    ]
    assert list(lookup_keys(" gpt-4o ")) == ["gpt-4o"]


@pytest.mark.parametrize(
    ("model", "window"),
    [("openai/gpt-4o", 128_000), ("vertex_ai/gemini-2.5-flash", 1_048_576),
     ("gemini/gemini-2.5-flash", 1_048_576), ("offline/default", 128_000)],
)
def test_prefixed_names_find_the_catalog_entry(model: str, window: int) -> None:
    catalog = Catalog(builtin_entries())  # no fallback: the hit must come from our file
    assert catalog.context_window(model) == window


def test_own_entries_win_over_fallback_at_every_key() -> None:
    asked: list[str] = []

    def fallback(key: str) -> CatalogEntry | None:
        asked.append(key)
        return CatalogEntry(key, 1, None, "fallback")

    own = {"gpt-4o": CatalogEntry("gpt-4o", 128_000, None, "catalog")}
    catalog = Catalog(own, fallback=fallback)
    assert catalog.lookup("azure/gpt-4o") == own["gpt-4o"]
    assert asked == []
    assert catalog.lookup("azure/unknown") == CatalogEntry("azure/unknown", 1, None, "fallback")
    assert asked == ["azure/unknown"]


def test_miss_everywhere_is_none() -> None:
    catalog = Catalog({}, fallback=lambda key: None)
    assert catalog.lookup("acme/nothing") is None
    assert catalog.context_window("acme/nothing") is None
    assert catalog.pricing("acme/nothing") is None


def test_litellm_record_scaled_to_per_million() -> None:
    raw = {"max_input_tokens": 16385, "input_cost_per_token": 5e-07,
           "cache_read_input_token_cost": None, "output_cost_per_token": 1.5e-06}
    entry = entry_from_litellm("gpt-3.5-turbo", raw, "9.9")
    assert entry is not None
    assert entry.context_window == 16385
    assert entry.source == "litellm-map 9.9"
    assert entry.pricing is not None
    assert entry.pricing.input_per_million == pytest.approx(0.5)
    assert entry.pricing.cached_input_per_million is None
    assert entry.pricing.output_per_million == pytest.approx(1.5)


@pytest.mark.parametrize(
    "raw",
    [None, "text", {}, {"max_input_tokens": "many", "input_cost_per_token": None}],
)
def test_litellm_records_without_data_are_ignored(raw: Any) -> None:
    assert entry_from_litellm("x", raw, "1") is None


def test_default_catalog_falls_back_to_litellm_map() -> None:
    entry = default_catalog().lookup("gpt-3.5-turbo")  # not in our file
    assert "gpt-3.5-turbo" not in builtin_entries()
    assert entry is not None and entry.source.startswith("litellm-map ")
    assert entry.context_window is not None and entry.context_window > 0


def test_catalog_miss_does_not_import_litellm() -> None:
    # A fresh interpreter, so nothing else in the test session has imported litellm yet.
    code = textwrap.dedent(
        """
        import sys
        from mas.runtime.catalog import default_catalog, litellm_map
        miss = default_catalog().lookup("acme/no-such-model-anywhere")
        print(miss is None, len(litellm_map()) > 0, "litellm" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    map_read = litellm_map_path() is not None
    assert out.stdout.split() == ["True", str(map_read), "False"]


# -- parsing ----------------------------------------------------------------------------


def test_parse_catalog_reads_entries() -> None:
    entries = parse_catalog({"models": {
        "m": {"context_window": 8192, "as_of": "2026-01-02",
              "pricing": {"input_per_million_tokens": 1, "output_per_million_tokens": 2}},
        "n": {"context_window": 4096},
    }})
    assert entries["m"].pricing == Pricing(1.0, None, 2.0, "2026-01-02", "catalog")
    assert entries["n"] == CatalogEntry("n", 4096, None, "catalog")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({}, "'models' must be a mapping"),
        ({"models": {"m": 5}}, "models.m: must be a mapping (got 5)"),
        ({"models": {"m": {"context_window": 0}}},
         "models.m.context_window: must be a positive integer (got 0)"),
        ({"models": {"m": {"context_window": True}}}, "must be a positive integer (got True)"),
        ({"models": {"m": {"window": 5}}}, "models.m.window: unknown field"),
        ({"models": {"m": {"pricing": [1]}}}, "models.m.pricing: must be a mapping"),
        ({"models": {"m": {"pricing": {"output_per_million_tokens": 1}}}},
         "models.m.pricing.input_per_million_tokens: required rate is missing"),
        ({"models": {"m": {"pricing": {"input_per_million_tokens": -1,
                                       "output_per_million_tokens": 1}}}},
         "input_per_million_tokens: must be a non-negative number (got -1)"),
        ({"models": {"m": {"pricing": {"input_per_million_tokens": 1,
                                       "output_per_million_tokens": 1, "input": 2}}}},
         "models.m.pricing.input: unknown field"),
    ],
)
def test_parse_catalog_rejects_bad_documents(doc: Any, message: str) -> None:
    with pytest.raises(CatalogError, match=re.escape(message)):
        parse_catalog(doc)


def test_shipped_file_is_valid_json_with_only_known_fields() -> None:
    from importlib import resources

    text = resources.files("mas.runtime").joinpath("data", "catalog.json").read_text("utf-8")
    assert len(parse_catalog(json.loads(text))) == len(builtin_entries()) >= 15


def test_user_guide_lists_every_catalog_entry_with_its_window() -> None:
    guide = Path(__file__).resolve().parents[2] / "docs" / "models.md"
    text = guide.read_text("utf-8")
    for key, entry in builtin_entries().items():
        assert f"| `{key}` | {entry.context_window:,} |" in text, key
