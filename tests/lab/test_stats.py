"""Intervals and paired comparisons: Wilson for 0/1 values, seeded bootstrap, sign test."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas.library.lab.stats import (
    bootstrap_mean,
    estimate,
    format_p,
    paired,
    sign_test,
    stable_seed,
    wilson,
)

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


def test_wilson_matches_the_textbook_values() -> None:
    # 1 of 12 (sliding_window's FactRecall in the demo): the t interval reached below 0.
    low, high = wilson(1, 12)
    assert low == pytest.approx(0.01486, abs=1e-4) and high == pytest.approx(0.3539, abs=1e-4)
    assert wilson(0, 12) == (0.0, pytest.approx(0.2425, abs=1e-4))
    assert wilson(12, 12) == (pytest.approx(0.7575, abs=1e-4), 1.0)
    with pytest.raises(ValueError, match="successes/n"):
        wilson(3, 2)


@given(st.integers(min_value=1, max_value=500).flatmap(
    lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))))
def test_wilson_stays_inside_0_1_and_contains_the_share(case: tuple[int, int]) -> None:
    successes, n = case
    low, high = wilson(successes, n)
    assert 0.0 <= low <= successes / n <= high <= 1.0
    assert low < high  # never a point, even at 0 or n successes


@given(st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=60))
def test_binary_samples_get_wilson(values: list[float]) -> None:
    e = estimate(values)
    assert e is not None and e.method == "wilson" and e.low is not None and e.high is not None
    assert 0.0 <= e.low <= e.mean <= e.high <= 1.0
    counted = estimate(values, proportion=False)
    assert counted is not None and counted.method == ("bootstrap" if len(values) > 1 else "none")


@given(st.lists(finite, min_size=2, max_size=30), st.integers(min_value=0, max_value=2**31))
def test_bootstrap_is_seeded_and_lies_within_the_sample(values: list[float], seed: int) -> None:
    low, high = bootstrap_mean(values, seed, resamples=200)
    assert (low, high) == bootstrap_mean(values, seed, resamples=200)
    slack = 1e-9 * max(1.0, max(abs(v) for v in values))
    assert min(values) - slack <= low <= high <= max(values) + slack


def test_estimate_picks_the_method_from_the_data() -> None:
    assert estimate([]) is None
    single = estimate([3.5])
    assert single is not None and single.method == "none" and single.low is None
    mixed = estimate([0.5, 1.0, 0.75, 1.0])
    assert mixed is not None and mixed.method == "bootstrap" and mixed.mean == 0.8125
    assert mixed.low is not None and mixed.high is not None and 0.5 <= mixed.low < mixed.high <= 1.0
    constant = estimate([7.0, 7.0, 7.0])
    assert constant is not None and (constant.low, constant.high) == (7.0, 7.0)


def test_sign_test_is_exact() -> None:
    assert sign_test([1.0] * 12) == pytest.approx(2 / 2**12)
    assert sign_test([1.0, -1.0]) == 1.0
    assert sign_test([0.0, 0.0]) == 1.0  # ties only: no evidence either way
    # 9 of 10 the same way: 2 * (1 + 10) / 1024
    assert sign_test([1.0] * 9 + [-1.0]) == pytest.approx(22 / 1024)


def test_p_values_read_as_written() -> None:
    # not "p=<0.001", as the claims once printed
    assert [format_p(p) for p in (2 / 2**12, 22 / 1024, 1.0)] == ["p<0.001", "p=0.021", "p=1"]


@given(st.lists(finite, min_size=1, max_size=30))
def test_sign_test_is_a_probability_and_symmetric(differences: list[float]) -> None:
    p = sign_test(differences)
    assert 0.0 < p <= 1.0
    assert p == pytest.approx(sign_test([-d for d in differences]))


def test_paired_counts_wins_in_the_claimed_direction() -> None:
    result = paired([-2.0, -3.0, 0.0, 1.0], sign=-1.0, seed=1, resamples=500)
    assert result is not None
    assert (result.wins, result.losses, result.ties, result.n) == (2, 1, 1, 4)
    assert result.effect == -1.0 and result.low is not None and result.high is not None
    assert result.low <= result.effect <= result.high
    assert paired([], sign=1.0, seed=0) is None
    one = paired([2.0], sign=1.0, seed=0)
    assert one is not None and one.low is None and math.isclose(one.effect, 2.0)


def test_stable_seed_does_not_depend_on_the_process() -> None:
    # A fixed crc32 value, whatever PYTHONHASHSEED is: intervals are the same in every run.
    assert stable_seed(0, "summarising", "FactRecall") == 2025673202
    assert len({stable_seed(0, "a", "b"), stable_seed(1, "a", "b"), stable_seed(0, "b", "a")}) == 3
