"""Timing primitives shared by every suite: a monotonic stopwatch and robust summaries.

Benchmarks on a shared 2-core machine are noisy, so every figure is a median
(with p99 where the tail matters), and ratios are taken between medians
measured in the same run, interleaved where the suite allows.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """Run ``fn`` once; its wall time in seconds and its result."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def percentile(values: Iterable[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by the nearest-rank method (no interpolation)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Summary:
    """The distribution of one timed quantity, in seconds."""

    n: int
    median: float
    p99: float
    mean: float
    total: float

    @classmethod
    def of(cls, samples: list[float]) -> Summary:
        if not samples:
            return cls(0, math.nan, math.nan, math.nan, 0.0)
        return cls(
            len(samples),
            statistics.median(samples),
            percentile(samples, 99),
            statistics.fmean(samples),
            sum(samples),
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator``, NaN when either side is missing or zero."""
    if not denominator or math.isnan(denominator) or math.isnan(numerator):
        return math.nan
    return numerator / denominator
