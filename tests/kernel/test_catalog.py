"""Model facts: LiteLLM's installed map first, the dated overrides on top, parsing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from importlib import resources
from pathlib import Path
from typing import Any

import importlib_metadata
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

MAP_MODELS = ["gpt-4o", "gpt-4.1-mini", "o3", "claude-sonnet-4-5", "claude-haiku-4-5",
              "gemini-2.5-pro", "gemini-2.5-flash"]


@pytest.fixture(scope="module")
def model_cost() -> dict[str, Any]:
    """The installed LiteLLM's own model map, as litellm itself loads it."""
    from mas.runtime.engine._litellm import load_litellm

    return dict(load_litellm().model_cost)


@pytest.mark.parametrize("model", MAP_MODELS)
def test_windows_and_prices_come_from_the_installed_litellm_map(model: str, model_cost: dict[str, Any]) -> None:
    record = model_cost[model]
    entry = default_catalog().lookup(model)
    assert entry is not None
    assert entry.context_window == record["max_input_tokens"]
    assert entry.source == f"litellm-map {importlib_metadata.version('litellm')}"
    price = entry.pricing
    assert price is not None and price.source == entry.source and price.litellm_key == model
    assert price.input_per_million == pytest.approx(record["input_cost_per_token"] * 1e6)
    assert price.output_per_million == pytest.approx(record["output_cost_per_token"] * 1e6)
    assert price.cached_input_per_million == pytest.approx(record["cache_read_input_token_cost"] * 1e6)
    write = record.get("cache_creation_input_token_cost")
    assert price.cache_write_per_million == (pytest.approx(write * 1e6) if write else None)


def test_gemini_flash_matches_spec_003() -> None:
    price = default_catalog().pricing("vertex_ai/gemini-2.5-flash")
    assert price is not None
    rates = (price.input_per_million, price.cached_input_per_million, price.output_per_million)
    assert rates == pytest.approx((0.30, 0.03, 2.50))
    assert default_catalog().context_window("gemini-2.5-flash") == 1_048_576


def test_anthropic_cache_writes_carry_their_premium() -> None:
    price = default_catalog().pricing("anthropic/claude-sonnet-4-5")
    assert price is not None
    write, cached = price.cache_write_per_million, price.cached_input_per_million
    assert write is not None and cached is not None
    assert write > price.input_per_million > cached


def test_every_override_is_dated_referenced_and_needed(model_cost: dict[str, Any]) -> None:
    # An override that repeats the map would go stale on the next LiteLLM upgrade: each
    # one must cover a model the map lacks, or a field on which it disagrees with the map.
    text = resources.files("mas.runtime").joinpath("data", "catalog.json").read_text("utf-8")
    raw = json.loads(text)["models"]
    for key, own in builtin_entries().items():
        assert own.source == f"catalog {raw[key]['as_of']}" and raw[key].get("reference"), key
        mapped = entry_from_litellm(key, model_cost.get(key), "now") if key in model_cost else None
        if mapped is None:
            continue
        differs = own.context_window is not None and own.context_window != mapped.context_window
        if own.pricing is not None and mapped.pricing is not None:
            ours, theirs = own.pricing, mapped.pricing
            differs = differs or (ours.input_per_million, ours.cached_input_per_million,
                                  ours.output_per_million) != (theirs.input_per_million,
                                                               theirs.cached_input_per_million,
                                                               theirs.output_per_million)
        assert differs, f"{key}: the override repeats LiteLLM's map"


def test_the_offline_model_comes_from_the_overrides() -> None:
    entry = default_catalog().lookup("offline/default")
    assert entry is not None and entry.source == "catalog 2026-11-30"
    assert entry.context_window == 128_000
    assert entry.pricing == Pricing(0.0, 0.0, 0.0, "2026-11-30", "catalog 2026-11-30")


def test_lookup_keys_strip_provider_prefixes_one_by_one() -> None:
    assert list(lookup_keys("openrouter/openai/gpt-4o")) == [
        "openrouter/openai/gpt-4o", "openai/gpt-4o", "gpt-4o"
    ]
    assert list(lookup_keys(" gpt-4o ")) == ["gpt-4o"]


def test_prefixed_names_find_entries_in_both_sources() -> None:
    assert default_catalog().context_window("openai/gpt-4o") == 128_000
    assert default_catalog().context_window("gemini/gemini-2.5-flash") == 1_048_576
    overrides_only = Catalog(builtin_entries())
    assert overrides_only.context_window("offline/default") == 128_000
    assert overrides_only.context_window("gpt-4o") is None


PRIMARY_PRICE = Pricing(1.0, 0.1, 2.0, None, "primary", litellm_key="m")
OWN_PRICE = Pricing(3.0, None, 4.0, "2026-01-01", "catalog 2026-01-01")


def _primary(key: str) -> CatalogEntry | None:
    return CatalogEntry(key, 1000, PRIMARY_PRICE, "primary") if key.endswith("m") else None


@pytest.mark.parametrize(
    ("own", "window", "window_source", "price"),
    [
        (CatalogEntry("m", 64, None, "catalog 2026-01-01"), 64, "catalog 2026-01-01", PRIMARY_PRICE),
        (CatalogEntry("m", None, OWN_PRICE, "catalog 2026-01-01"), 1000, "primary", OWN_PRICE),
        (CatalogEntry("m", 64, OWN_PRICE, "catalog 2026-01-01"), 64, "catalog 2026-01-01", OWN_PRICE),
    ],
)
def test_an_override_wins_only_for_the_fields_it_sets(own: CatalogEntry, window: int, window_source: str, price: Pricing) -> None:
    entry = Catalog({"m": own}, primary=_primary).lookup("azure/m")
    assert entry == CatalogEntry("m", window, price, window_source)


def test_either_source_alone_answers_and_a_miss_everywhere_is_none() -> None:
    asked: list[str] = []

    def primary(key: str) -> CatalogEntry | None:
        asked.append(key)
        return None

    own = {"gpt-4o": CatalogEntry("gpt-4o", 128_000, None, "catalog 2026-01-01")}
    catalog = Catalog(own, primary=primary)
    assert catalog.lookup("azure/gpt-4o") == own["gpt-4o"]
    assert asked == ["azure/gpt-4o", "gpt-4o"]  # the map is asked at every key first
    assert Catalog({}, primary=_primary).lookup("x/m") == CatalogEntry("x/m", 1000, PRIMARY_PRICE, "primary")
    missing = Catalog({}, primary=lambda key: None)
    assert missing.lookup("acme/nothing") is None
    assert missing.context_window("acme/nothing") is None
    assert missing.pricing("acme/nothing") is None


def test_litellm_record_scaled_to_per_million() -> None:
    raw = {"max_input_tokens": 16385, "input_cost_per_token": 5e-07,
           "cache_read_input_token_cost": None, "output_cost_per_token": 1.5e-06,
           "cache_creation_input_token_cost": 6.25e-07}
    entry = entry_from_litellm("gpt-3.5-turbo", raw, "9.9")
    assert entry is not None
    assert entry.context_window == 16385
    assert entry.source == "litellm-map 9.9"
    assert entry.pricing is not None
    assert entry.pricing.input_per_million == pytest.approx(0.5)
    assert entry.pricing.cached_input_per_million is None
    assert entry.pricing.output_per_million == pytest.approx(1.5)
    assert entry.pricing.cache_write_per_million == pytest.approx(0.625)
    assert entry.pricing.litellm_key == "gpt-3.5-turbo"


@pytest.mark.parametrize(
    "raw",
    [None, "text", {}, {"max_input_tokens": "many", "input_cost_per_token": None}],
)
def test_litellm_records_without_data_are_ignored(raw: Any) -> None:
    assert entry_from_litellm("x", raw, "1") is None


def test_models_the_overrides_lack_come_from_the_map() -> None:
    entry = default_catalog().lookup("gpt-3.5-turbo")
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


@pytest.mark.parametrize(
    ("model", "window_source", "pricing_source", "cost_logic"),
    [
        ("anthropic/claude-sonnet-4-5", "litellm-map {v}", "litellm-map {v}", "litellm"),
        ("offline/default", "catalog 2026-11-30", "catalog 2026-11-30", "rates"),
        ("acme/no-such-model-anywhere", "fallback", "unpriced", None),
    ],
)
def test_compile_says_which_source_won(write: Any, mas_ctl: Any, model: str, window_source: str, pricing_source: str, cost_logic: str | None) -> None:
    version = importlib_metadata.version("litellm")
    agent = write("agent.yaml", f"""
        apiVersion: mas/v1
        kind: Agent
        metadata: {{name: facts}}
        spec:
          models: [{{id: main, model: {model}}}]
        """)
    result = mas_ctl("compile", "--json", agent)
    assert result.code == 0, result.err
    (status,) = json.loads(result.out)["agents"]
    assert status["window"]["source"] == window_source.format(v=version)
    assert status["pricing"]["source"] == pricing_source.format(v=version)
    assert status["pricing"].get("cost_logic") == cost_logic
    infra = write("infra.yaml", """
        apiVersion: mas/v1
        kind: Infra
        metadata: {name: proxy}
        spec:
          generation:
            context_window: 32768
            pricing: {input_per_million_tokens: 1.0, output_per_million_tokens: 4.0}
        """)
    over = json.loads(mas_ctl("compile", "--json", "--infra", infra, agent).out)["agents"][0]
    assert over["window"] == {"value": 32768, "source": "infra.generation.context_window", "warning": None}
    assert (over["pricing"]["source"], over["pricing"]["cost_logic"]) == ("infra.generation.pricing", "rates")


# -- parsing ----------------------------------------------------------------------------


def test_parse_catalog_reads_entries() -> None:
    entries = parse_catalog({"models": {
        "m": {"context_window": 8192, "as_of": "2026-01-02",
              "pricing": {"input_per_million_tokens": 1, "output_per_million_tokens": 2,
                          "cache_write_per_million_tokens": 1.25}},
        "n": {"context_window": 4096, "as_of": "2026-01-03"},
    }})
    assert entries["m"].pricing == Pricing(1.0, None, 2.0, "2026-01-02", "catalog 2026-01-02", 1.25)
    assert entries["n"] == CatalogEntry("n", 4096, None, "catalog 2026-01-03")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({}, "'models' must be a mapping"),
        ({"models": {"m": 5}}, "models.m: must be a mapping (got 5)"),
        ({"models": {"m": {"context_window": 5}}}, "models.m.as_of: required date"),
        ({"models": {"m": {"context_window": 0, "as_of": "d"}}},
         "models.m.context_window: must be a positive integer (got 0)"),
        ({"models": {"m": {"context_window": True, "as_of": "d"}}}, "must be a positive integer (got True)"),
        ({"models": {"m": {"window": 5}}}, "models.m.window: unknown field"),
        ({"models": {"m": {"pricing": [1], "as_of": "d"}}}, "models.m.pricing: must be a mapping"),
        ({"models": {"m": {"pricing": {"output_per_million_tokens": 1}, "as_of": "d"}}},
         "models.m.pricing.input_per_million_tokens: required rate is missing"),
        ({"models": {"m": {"as_of": "d", "pricing": {"input_per_million_tokens": -1,
                                                     "output_per_million_tokens": 1}}}},
         "input_per_million_tokens: must be a non-negative number (got -1)"),
        ({"models": {"m": {"as_of": "d", "pricing": {"input_per_million_tokens": 1,
                                                     "output_per_million_tokens": 1, "input": 2}}}},
         "models.m.pricing.input: unknown field"),
    ],
)
def test_parse_catalog_rejects_bad_documents(doc: Any, message: str) -> None:
    with pytest.raises(CatalogError, match=re.escape(message)):
        parse_catalog(doc)


def test_shipped_file_is_valid_json_with_only_known_fields() -> None:
    text = resources.files("mas.runtime").joinpath("data", "catalog.json").read_text("utf-8")
    assert len(parse_catalog(json.loads(text))) == len(builtin_entries()) >= 1


def test_user_guide_lists_every_override_with_its_window() -> None:
    guide = Path(__file__).resolve().parents[2] / "docs" / "models.md"
    text = guide.read_text("utf-8")
    for key, entry in builtin_entries().items():
        assert f"| `{key}` | {entry.context_window:,} |" in text, key
