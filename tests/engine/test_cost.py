"""Spec 003's cost formula and the session ledger's cost status."""

from __future__ import annotations

import pytest

from mas.runtime.catalog import Pricing
from mas.runtime.engine import UsageLedger, call_cost
from mas.runtime.protocols import Usage

FLASH = Pricing(0.30, 0.03, 2.50, "2026-10-06", "catalog")


def test_the_formula_splits_cached_and_uncached_input():
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=200_000, cached_tokens=400_000)
    # 600k uncached x 0.30 + 400k cached x 0.03 + 200k output x 2.50, per million
    assert call_cost(usage, FLASH) == pytest.approx(0.18 + 0.012 + 0.5)


def test_unknown_cached_rate_charges_the_input_rate():
    usage = Usage(1000, 0, 1000)
    assert call_cost(usage, Pricing(2.0, None, 4.0, None, "x")) == pytest.approx(0.002)


def test_cached_tokens_beyond_the_prompt_are_not_negative_input():
    assert call_cost(Usage(10, 0, 50), FLASH) == pytest.approx(10 * 0.03 / 1e6)


def test_missing_usage_or_pricing_cannot_be_priced():
    assert call_cost(None, FLASH) is None
    assert call_cost(Usage(1, 1, 0), None) is None


def test_ledger_status_turns_unavailable_and_stays_so():
    ledger = UsageLedger()
    assert ledger.cost_status == "ok" and ledger.cost == 0.0
    ledger.record_live("m", Usage(100, 10, 0), 0.25)
    ledger.record_live("m", None, None)
    ledger.record_live("m", Usage(100, 10, 50), 0.5)
    assert ledger.cost == pytest.approx(0.75)
    assert ledger.cost_status == "pricing_or_usage_unavailable"
    assert (ledger.prompt_tokens, ledger.completion_tokens, ledger.cached_tokens) == (200, 20, 50)
    assert ledger.last_usage_source == "provider"


def test_cached_responses_add_no_cost_but_keep_usage():
    ledger = UsageLedger()
    ledger.record_cached("m", Usage(100, 10, 0))
    assert ledger.cost == 0.0 and ledger.live_calls == 0
    assert ledger.last_usage == Usage(100, 10, 0)
    assert ledger.last_usage_source == "cached_response"


def test_rates_are_undefined_before_any_lookup():
    ledger = UsageLedger()
    assert ledger.request_hit_rate is None
    ledger.record_lookup("infra_llm_cache", hit=False)
    assert ledger.layers["infra_llm_cache"].hit_rate == 0.0
