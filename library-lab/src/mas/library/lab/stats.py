"""Means with 95% confidence intervals (Student's t), for per-flavour results."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

# Two-sided 95% critical values of Student's t for 1..30 degrees of freedom.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
_T95_LARGE = ((40, 2.021), (60, 2.000), (120, 1.980))


def t95(df: int) -> float:
    """The 97.5th percentile of Student's t with ``df`` degrees of freedom (``df`` >= 1)."""
    if df < 1:
        raise ValueError(f"df: must be at least 1 (got {df})")
    if df <= len(_T95):
        return _T95[df - 1]
    for limit, value in _T95_LARGE:
        if df <= limit:
            return value
    return 1.960


@dataclass(frozen=True)
class Estimate:
    """A sample mean and its 95% interval (``None`` bounds when n < 2)."""

    mean: float
    low: float | None
    high: float | None
    n: int

    def to_json(self) -> dict[str, Any]:
        """As JSON data."""
        return asdict(self)

    def overlaps(self, other: Estimate) -> bool:
        """Whether the two intervals overlap (a missing interval overlaps everything)."""
        if None in (self.low, self.high, other.low, other.high):
            return True
        return not (self.high < other.low or other.high < self.low)  # type: ignore[operator]


def estimate(values: Sequence[float]) -> Estimate | None:
    """Mean and 95% CI of ``values``; ``None`` for an empty sample."""
    n = len(values)
    if n == 0:
        return None
    mean = math.fsum(values) / n
    if n < 2:
        return Estimate(mean, None, None, n)
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    half = t95(n - 1) * math.sqrt(variance / n)
    return Estimate(mean, mean - half, mean + half, n)


def format_value(value: float) -> str:
    """Compact number: 3 significant digits under 1,000, thousands separators above."""
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if value == int(value) and abs(value) >= 10:
        return f"{value:.0f}"
    return f"{value:.3g}"
