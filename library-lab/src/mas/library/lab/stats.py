"""Intervals that fit the data, and paired comparisons for claims.

- A sample of 0/1 values (FactRecall, a binary judge metric) is a proportion: its 95%
  interval is Wilson's score interval, which stays inside [0, 1] and does not collapse to
  a point at 0 or 1 successes the way the normal approximation does.
- Any other sample gets a seeded percentile bootstrap of the mean: no normality assumed,
  and the same seed gives the same interval on every run.
- A claim compares two flavours on the same dataset items: the effect is the mean paired
  difference, its interval a seeded paired bootstrap, and an exact two-sided sign test
  gives the p-value (ties dropped), so a verdict never rests on the overlap of two
  independent intervals.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

Z95 = 1.959963984540054
"""The 97.5th percentile of the standard normal."""

RESAMPLES = 2000
"""Bootstrap resamples per interval (the default of ``aggregate``'s ``resamples``)."""

Method = Literal["wilson", "wilson_pooled", "bootstrap", "none"]

MIN_BOOTSTRAP_N = 5
"""Fewer values than this and a percentile bootstrap has too few distinct resamples to mean
anything (at n = 3 there are 10): the report says so instead of printing the interval."""

METHODS: dict[str, str] = {
    "wilson": "Wilson score interval (0/1 values)",
    "wilson_pooled": "Wilson score interval over the probes of every session (evidence)",
    "bootstrap": "seeded percentile bootstrap of the mean",
    "none": "no interval (fewer than 2 values)",
}
"""What each interval method is, in words for the table and the report."""


@dataclass(frozen=True)
class Estimate:
    """A sample mean, its 95% interval and how the interval was computed.

    :ivar low: lower bound, ``None`` when no interval could be computed (``method`` none).
    :ivar method: ``wilson`` for 0/1 samples, ``bootstrap`` otherwise, ``none`` for n < 2
        non-binary samples.
    """

    mean: float
    low: float | None
    high: float | None
    n: int
    method: Method = "none"

    def to_json(self) -> dict[str, Any]:
        """As JSON data."""
        return asdict(self)

    def too_small(self) -> str | None:
        """Why the interval says nothing, in words, or ``None`` when it stands.

        A bootstrap over fewer than :data:`MIN_BOOTSTRAP_N` values, or one of zero width
        (every session gave the same value), is not an interval a reader should trust.
        """
        if self.method != "bootstrap":
            return None
        if self.n < MIN_BOOTSTRAP_N:
            return f"n={self.n}: too few for an interval"
        if self.low == self.high:
            return f"all {self.n} equal"
        return None

    def overlaps(self, other: Estimate) -> bool:
        """Whether the two intervals overlap (a missing interval overlaps everything)."""
        if self.low is None or self.high is None or other.low is None or other.high is None:
            return True
        return not (self.high < other.low or other.high < self.low)


def is_binary(values: Sequence[float]) -> bool:
    """Whether every value is 0 or 1 (a proportion)."""
    return bool(values) and all(v in (0.0, 1.0) for v in values)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for ``successes`` out of ``n`` (``n`` >= 1)."""
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"successes/n: need 0 <= successes <= n and n >= 1 (got {successes}/{n})")
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At 0 and n successes the bound is exactly 0 (or 1); computed, it is off by rounding.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def stable_seed(seed: int, *labels: str) -> int:
    """A seed for one interval, from the run's seed and labels (flavour, metric).

    Derived with crc32, not ``hash()``, so it is the same in every process: an interval does
    not depend on the order metrics are visited in, nor on PYTHONHASHSEED.
    """
    return zlib.crc32("\x1f".join([str(seed), *labels]).encode())


def bootstrap_mean(values: Sequence[float], seed: int,
                   resamples: int = RESAMPLES) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of the mean of ``values`` (at least 2)."""
    if len(values) < 2:
        raise ValueError(f"values: need at least 2 for a bootstrap (got {len(values)})")
    rng = random.Random(seed)
    n = len(values)
    means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(resamples))
    return _percentile(means, 0.025), _percentile(means, 0.975)


def _percentile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile ``q`` of an already sorted sequence."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def estimate(values: Sequence[float], *, seed: int = 0, resamples: int = RESAMPLES,
             proportion: bool = True) -> Estimate | None:
    """Mean and 95% interval of ``values``; ``None`` for an empty sample.

    :param proportion: the values are shares of a whole (a recall, a binary judge score):
        all-0/1 samples then get Wilson's interval. Counts (calls, tokens) pass ``False``
        and always get the bootstrap, even when every session happened to count 0 or 1.
    """
    n = len(values)
    if n == 0:
        return None
    mean = math.fsum(values) / n
    if proportion and is_binary(values):
        low, high = wilson(round(mean * n), n)
        return Estimate(mean, low, high, n, "wilson")
    if n < 2:
        return Estimate(mean, None, None, n, "none")
    low, high = bootstrap_mean(values, seed, resamples)
    return Estimate(mean, low, high, n, "bootstrap")


def pooled(successes: int, trials: int) -> Estimate | None:
    """The share ``successes / trials`` pooled over sessions, with Wilson's interval
    (``None`` when there is no trial); ``n`` is the trials (probes), not the sessions."""
    if trials < 1:
        return None
    low, high = wilson(successes, trials)
    return Estimate(successes / trials, low, high, trials, "wilson_pooled")


def sign_test(differences: Sequence[float]) -> float:
    """Exact two-sided sign-test p-value of ``differences`` (zeros dropped; 1.0 if none left)."""
    positive = sum(1 for d in differences if d > 0)
    negative = sum(1 for d in differences if d < 0)
    n = positive + negative
    if n == 0:
        return 1.0
    extreme = min(positive, negative)
    tail: float = math.fsum(math.comb(n, k) for k in range(extreme + 1)) / 2 ** n
    return min(1.0, 2.0 * tail)


@dataclass(frozen=True)
class Paired:
    """A paired comparison of two flavours on one metric, over the sessions both ran.

    :ivar effect: mean of (this flavour − the other) over the paired sessions.
    :ivar low: lower bound of the paired-bootstrap 95% interval of ``effect`` (``None`` when
        fewer than 2 pairs).
    :ivar wins: pairs where the difference points the claimed way; ``losses`` the other way;
        ``ties`` no difference.
    :ivar p_value: exact two-sided sign test over wins and losses.
    """

    effect: float
    low: float | None
    high: float | None
    n: int
    wins: int
    losses: int
    ties: int
    p_value: float

    def to_json(self) -> dict[str, Any]:
        """As JSON data."""
        return asdict(self)


def paired(differences: Sequence[float], *, sign: float, seed: int,
           resamples: int = RESAMPLES) -> Paired | None:
    """The paired comparison of ``differences`` (better − than); ``sign`` -1 when lower wins."""
    n = len(differences)
    if n == 0:
        return None
    effect = math.fsum(differences) / n
    low: float | None = None
    high: float | None = None
    if n >= 2:
        low, high = bootstrap_mean(differences, seed, resamples)
    wins = sum(1 for d in differences if sign * d > 0)
    losses = sum(1 for d in differences if sign * d < 0)
    return Paired(effect, low, high, n, wins, losses, n - wins - losses, sign_test(differences))


def format_value(value: float) -> str:
    """Compact number: 3 significant digits under 1,000, thousands separators above."""
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if value == int(value) and abs(value) >= 10:
        return f"{value:.0f}"
    return f"{value:.3g}"


def format_p(p: float) -> str:
    """A p-value as it is written: ``p=0.0039`` (two significant digits), ``p<0.001``."""
    return "p<0.001" if p < 0.001 else f"p={p:.2g}"
