"""How far apart two sets of step times are, with an interval that needs no assumption about their
distribution: the Hodges-Lehmann shift and its Mann-Whitney (Wilcoxon rank-sum) confidence interval.

Of the n*m differences new - base of every pair of steps, sorted d(1) <= ... <= d(nm), the interval
is [d(k), d(nm+1-k)] with k the largest count such that P(U <= k-1) <= (1 - confidence) / 2 under
the null hypothesis (U: the Mann-Whitney statistic, exact below EXACT_PAIRS pairs, else its normal
approximation). With too few steps for the confidence asked (fewer than 4 against 4 for 95 %), the
interval is the range of all differences and `confidence` says what it reaches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist, median

CONFIDENCE = 0.95
# Pairs (n*m) up to which the distribution of U is counted exactly.
EXACT_PAIRS = 2500


@dataclass(frozen=True)
class Shift:
    """new - base: the Hodges-Lehmann estimate and its interval, in the samples' unit."""

    estimate: float
    low: float
    high: float
    confidence: float  # what the interval reaches (CONFIDENCE unless the steps are too few)

    @property
    def beyond_noise(self) -> bool:
        """The interval leaves out 0: the samples differ at `confidence`."""
        return self.low > 0 or self.high < 0


def rank_sum_counts(n: int, m: int) -> list[int]:
    """How many of the C(n+m, n) orderings give U = 0, 1, ..., n*m: the coefficients of the Gaussian
    binomial [n+m choose n]_q = prod_{i=1..n} (1 - q^(m+i)) / (1 - q^i), in exact integers."""
    size = n * m + 1
    coef = [1] + [0] * (size - 1)
    for i in range(1, n + 1):
        for k in range(size - 1, m + i - 1, -1):  # times (1 - q^(m+i))
            coef[k] -= coef[k - m - i]
        for k in range(i, size):  # divided by (1 - q^i)
            coef[k] += coef[k - i]
    return coef


def _lower_rank(n: int, m: int, confidence: float) -> tuple[int, float]:
    """(k, reached confidence): k >= 1, the 1-based rank of the interval's low end."""
    tail = (1.0 - confidence) / 2.0
    if n * m <= EXACT_PAIRS:
        counts, total = rank_sum_counts(n, m), math.comb(n + m, n)
        k, below = 0, 0  # below: orderings with U <= k - 1
        while k < len(counts) and (below + counts[k]) / total <= tail:
            below += counts[k]
            k += 1
        if k == 0:
            return 1, 1.0 - 2.0 * counts[0] / total
        return k, 1.0 - 2.0 * below / total
    sigma = math.sqrt(n * m * (n + m + 1) / 12.0)
    k = math.floor(n * m / 2.0 - NormalDist().inv_cdf(1.0 - tail) * sigma + 0.5)
    return max(1, k), confidence


def shift(base: list[float], new: list[float], confidence: float = CONFIDENCE) -> Shift | None:
    """The shift new - base with its interval; None unless both sides have a sample."""
    if not base or not new:
        return None
    diffs = sorted(b - a for a in base for b in new)
    k, reached = _lower_rank(len(base), len(new), confidence)
    return Shift(median(diffs), diffs[k - 1], diffs[len(diffs) - k], reached)
