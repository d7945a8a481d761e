"""Window, completion-reserve and pricing resolution (spec 003)."""

from __future__ import annotations

import logging
import re

import pytest
from pydantic import BaseModel

from mas.runtime.catalog import Catalog, CatalogEntry, CatalogError, Pricing
from mas.runtime.spec.windows import (
    FALLBACK_CONTEXT_WINDOW,
    ReserveChoice,
    WindowChoice,
    WindowSettingError,
    resolve_pricing,
    resolve_reserve,
    resolve_window,
)

CATALOG_PRICE = Pricing(1.0, 0.1, 4.0, "2026-01-01", "catalog")
CATALOG = Catalog(
    {
        "known": CatalogEntry("known", 64_000, CATALOG_PRICE, "catalog"),
        "deployed": CatalogEntry("deployed", 200_000, None, "catalog"),
    }
)
MAPPINGS = {"alias": "deployed"}

# -- window ---------------------------------------------------------------------------------


def test_agent_window_wins() -> None:
    choice = resolve_window("known", agent_context_window=8_000, infra_context_window=16_000,
                            catalog=CATALOG)
    assert choice == WindowChoice(8_000, "spec.models[].context_window")


def test_infra_window_beats_catalog() -> None:
    choice = resolve_window("known", infra_context_window=16_000, catalog=CATALOG)
    assert choice == WindowChoice(16_000, "infra.generation.context_window")


def test_catalog_window_for_the_model_after_mappings() -> None:
    assert resolve_window("known", catalog=CATALOG) == WindowChoice(64_000, "catalog")
    assert resolve_window("alias", infra_mappings=MAPPINGS, catalog=CATALOG).value == 200_000
    assert resolve_window("provider/known", catalog=CATALOG).value == 64_000


def test_unknown_model_falls_back_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mas.runtime.spec.windows"):
        choice = resolve_window("acme/custom", catalog=CATALOG)
    assert choice.value == FALLBACK_CONTEXT_WINDOW == 128_000
    assert choice.source == "fallback"
    assert choice.warning is not None
    assert "acme/custom" in choice.warning
    assert "spec.models[].context_window" in choice.warning
    assert "generation.context_window" in choice.warning
    assert choice.warning in caplog.text


def test_fallback_warning_names_both_model_and_deployment() -> None:
    choice = resolve_window("alias", infra_mappings={"alias": "acme/x"}, catalog=CATALOG)
    assert choice.warning is not None and "alias (deployed as acme/x)" in choice.warning


def test_known_models_carry_no_warning() -> None:
    assert resolve_window("known", catalog=CATALOG).warning is None


def test_default_catalog_is_used_when_none_given() -> None:
    choice = resolve_window("vertex_ai/gemini-2.5-flash")
    assert choice.value == 1_048_576 and choice.source.startswith("litellm-map ")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"agent_context_window": 0}, "spec.models[].context_window"),
        ({"agent_context_window": -5}, "spec.models[].context_window"),
        ({"infra_context_window": "big"}, "infra.spec.generation.context_window"),
        ({"infra_context_window": True}, "infra.spec.generation.context_window"),
    ],
)
def test_bad_window_overrides_name_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(WindowSettingError, match=rf"^{re.escape(field)}: must be"):
        resolve_window("known", catalog=CATALOG, **kwargs)  # type: ignore[arg-type]


# -- reserve ---------------------------------------------------------------------------------


def test_reserve_order() -> None:
    first = resolve_reserve(output_budget=12_000, binding_max_tokens=500)
    assert first == (12_000, "output_budget")
    assert resolve_reserve(binding_max_tokens=500) == ReserveChoice(500, "spec.models[].max_tokens")
    value, source = resolve_reserve()
    assert (value, source) == (2_000, "fallback")


def test_bad_reserve_names_the_field() -> None:
    with pytest.raises(WindowSettingError, match=r"spec.models\[\].max_tokens: .*\(got 0\)"):
        resolve_reserve(binding_max_tokens=0)
    with pytest.raises(WindowSettingError, match=r"output budget: .*\(got -1\)"):
        resolve_reserve(output_budget=-1)


# -- pricing ---------------------------------------------------------------------------------


def test_catalog_pricing_after_mappings() -> None:
    assert resolve_pricing("known", catalog=CATALOG) == CATALOG_PRICE
    mapped = resolve_pricing("alias", infra_mappings={"alias": "known"}, catalog=CATALOG)
    assert mapped == CATALOG_PRICE


def test_unknown_or_unpriced_model_is_none() -> None:
    assert resolve_pricing("acme/custom", catalog=CATALOG) is None
    assert resolve_pricing("deployed", catalog=CATALOG) is None


def test_infra_pricing_block_overrides_catalog() -> None:
    block = {"input_per_million_tokens": 0.30, "cached_input_per_million_tokens": 0.03,
             "output_per_million_tokens": 2.50}
    price = resolve_pricing("known", infra_pricing=block, catalog=CATALOG)
    assert price == Pricing(0.30, 0.03, 2.50, None, "infra.generation.pricing")


def test_infra_pricing_pydantic_block_is_read_as_data() -> None:
    class Block(BaseModel):
        input_per_million_tokens: float
        cached_input_per_million_tokens: float | None = None
        output_per_million_tokens: float

    price = resolve_pricing("known", infra_pricing=Block(input_per_million_tokens=1,
                                                          output_per_million_tokens=3))
    assert price == Pricing(1.0, None, 3.0, None, "infra.generation.pricing")


def test_infra_pricing_object_is_used_as_is() -> None:
    mine = Pricing(9.0, None, 9.0, None, "infra.generation.pricing")
    assert resolve_pricing("known", infra_pricing=mine, catalog=CATALOG) is mine


def test_bad_infra_pricing_names_the_field() -> None:
    message = "infra.spec.generation.pricing.output_per_million_tokens: required rate is missing"
    with pytest.raises(CatalogError, match=re.escape(message)):
        resolve_pricing("known", infra_pricing={"input_per_million_tokens": 1}, catalog=CATALOG)


def test_default_catalog_prices_gemini_flash_as_spec_003() -> None:
    price = resolve_pricing("vertex_ai/gemini-2.5-flash")
    assert price is not None
    assert (price.input_per_million, price.cached_input_per_million, price.output_per_million) == (
        pytest.approx((0.30, 0.03, 2.50))
    )
    assert price.source.startswith("litellm-map ")
