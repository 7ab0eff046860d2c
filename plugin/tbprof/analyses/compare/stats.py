"""Statistics of an A/B comparison: distributions of per-step times and a confident shift.

A step-time change is only called a change when the per-step spread says it is not noise.
The estimate is the Hodges-Lehmann shift (the median of every candidate-minus-baseline
pairwise difference) and its interval comes from the Mann-Whitney U distribution: the k-th
smallest and k-th largest pairwise differences, with k the U quantile of the confidence level
(exact for small samples, the normal approximation above ``EXACT_MAX_PAIRS`` pairs). It needs
no normality, is robust to a slow first step or a GC pause, and works for 3 steps as well as
for 400. Relative changes are shifts of log(step time), so they are ratios
(``exp(shift) - 1``). See docs/formulas.md ("compare").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from tbprof.store.memo import Memo

DEFAULT_CONFIDENCE = 0.95
EXACT_MAX_PAIRS = 2500  # n * m up to this: exact U distribution (50 x 50 steps)
# n * m up to this: the sorted n x m matrix of differences (32 MB); beyond, order statistics of
# the differences are found by bisection without the matrix (30 k steps a side would be 7 GB).
MATRIX_MAX_PAIRS = 1 << 22


def distribution(values: np.ndarray) -> dict[str, Any]:
    """count, mean, median, p10, p90, sample stddev (n-1), min, max of ``values`` (NaN when empty).

    Percentiles interpolate linearly between order statistics (numpy's default).
    """
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        nan = float("nan")
        return {"count": 0, "mean": nan, "median": nan, "p10": nan, "p90": nan, "stddev": nan,
                "min": nan, "max": nan}
    p10, p50, p90 = np.percentile(v, [10, 50, 90])
    return {"count": int(v.size), "mean": float(v.mean()), "median": float(p50), "p10": float(p10),
            "p90": float(p90), "stddev": float(np.std(v, ddof=1)) if v.size > 1 else 0.0,
            "min": float(v.min()), "max": float(v.max())}


# The U distributions computed, in the process's one memory budget (store/memo.py), charged at
# their arrays' size: n * m + 1 float64s, up to 20 kB each (EXACT_MAX_PAIRS).
_U_CDFS = Memo()


def u_null_cdf(n: int, m: int) -> np.ndarray:
    """P(U <= u) for u = 0..n*m under no difference (no ties): an array shared by every caller
    (read-only), memoised per (n, m) in the memory budget."""
    return _U_CDFS.get((n, m), lambda: _count_u(n, m))


def _count_u(n: int, m: int) -> np.ndarray:
    """``u_null_cdf`` by counting arrangements.

    counts[a][b][u] = arrangements of a baseline and b candidate values with U = u, where U
    counts (baseline, candidate) pairs with the candidate larger; the largest value is either
    a candidate (it beats all a baseline values: shift by a) or a baseline value (no pair).
    """
    prev = [np.zeros(n * m + 1) for _ in range(m + 1)]  # row a-1
    for b in range(m + 1):
        prev[b][0] = 1.0  # a = 0: one arrangement, U = 0
    for a in range(1, n + 1):
        cur = [np.zeros(n * m + 1) for _ in range(m + 1)]
        cur[0][0] = 1.0
        for b in range(1, m + 1):
            c = prev[b].copy()  # the largest value is a baseline value
            c[a:] += cur[b - 1][:-a]  # the largest is a candidate value: it beats all a
            cur[b] = c
        prev = cur
    counts = prev[m]
    cdf = np.cumsum(counts) / counts.sum()
    cdf.flags.writeable = False
    return cdf


def u_rank(n: int, m: int, confidence: float) -> int:
    """k such that [d_(k), d_(nm+1-k)] (1-based sorted pairwise differences) covers the shift
    with at least ``confidence``; 0 when the samples are too small for that confidence."""
    alpha_half = (1.0 - confidence) / 2.0
    if n * m <= EXACT_MAX_PAIRS:
        cdf = u_null_cdf(n, m)
        # Largest k with P(U <= k - 1) <= alpha/2.
        k = 0
        while k < len(cdf) and cdf[k] <= alpha_half + 1e-12:
            k += 1
        return k
    z = NormalDist().inv_cdf(1.0 - alpha_half)
    sd = math.sqrt(n * m * (n + m + 1) / 12.0)
    return max(0, math.floor(n * m / 2.0 - z * sd + 0.5))


@dataclass(frozen=True)
class Shift:
    """Candidate minus baseline: the estimate and its interval (None: not enough samples)."""

    estimate: float
    low: float | None
    high: float | None
    confidence: float
    method: str
    n_base: int
    n_cand: int

    @property
    def significant(self) -> bool:
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)


def _pairwise(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sort((b[None, :] - a[:, None]).ravel())


def kth_difference(a_sorted: np.ndarray, b_sorted: np.ndarray, k: int) -> float:
    """The k-th smallest (1-based) of the n*m differences b_j - a_i, in O((n + m) log m) per
    bisection step and at most ~64 steps (the float64 bisection runs out of representable
    midpoints), without building the differences.

    count(t) = #{(i, j): b_j <= a_i + t} is one ``searchsorted`` of ``a + t`` into ``b``; the
    answer is the smallest t with count(t) >= k (to the last bit of float64).
    """
    def count(t: float) -> int:
        return int(np.searchsorted(b_sorted, a_sorted + t, side="right").sum())

    lo = float(b_sorted[0] - a_sorted[-1])  # every difference is >= lo
    hi = float(b_sorted[-1] - a_sorted[0])  # and <= hi
    if count(lo) >= k:
        return lo
    while True:  # invariant: count(lo) < k <= count(hi)
        mid = lo + (hi - lo) / 2.0
        if not lo < mid < hi:
            return hi
        if count(mid) >= k:
            hi = mid
        else:
            lo = mid


class _Differences:
    """Sorted pairwise differences b - a, as a matrix when small, by selection when large."""

    def __init__(self, a: np.ndarray, b: np.ndarray) -> None:
        self.n_pairs = a.size * b.size
        self.matrix = _pairwise(a, b) if self.n_pairs <= MATRIX_MAX_PAIRS else None
        self.a, self.b = np.sort(a), np.sort(b)

    def kth(self, k: int) -> float:  # 1-based
        if self.matrix is not None:
            return float(self.matrix[k - 1])
        return kth_difference(self.a, self.b, k)

    def median(self) -> float:
        if self.matrix is not None:
            return float(np.median(self.matrix))
        half = self.n_pairs // 2
        if self.n_pairs % 2:
            return self.kth(half + 1)
        return (self.kth(half) + self.kth(half + 1)) / 2.0


def shift(a: np.ndarray, b: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> Shift:
    """Hodges-Lehmann shift b - a with its Mann-Whitney interval (same unit as the inputs)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    n, m = a.size, b.size
    if n == 0 or m == 0:
        return Shift(float("nan"), None, None, confidence, "none", n, m)
    d = _Differences(a, b)
    est = d.median()
    k = u_rank(n, m, confidence)
    method = "hodges_lehmann_exact" if n * m <= EXACT_MAX_PAIRS else "hodges_lehmann_normal"
    if k < 1:
        return Shift(est, None, None, confidence, method, n, m)
    return Shift(est, d.kth(k), d.kth(n * m + 1 - k), confidence, method, n, m)


def relative_shift(a: np.ndarray, b: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> Shift:
    """The shift as a percentage: on log values when every value is positive (a ratio,
    ``100 * (exp(shift) - 1)``), else the plain shift divided by the baseline median."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if a.size and b.size and np.all(a > 0) and np.all(b > 0):
        s = shift(np.log(a), np.log(b), confidence)

        def pct(x: float | None) -> float | None:
            return None if x is None else 100.0 * math.expm1(x)

        return Shift(100.0 * math.expm1(s.estimate), pct(s.low), pct(s.high), confidence,
                     s.method + "_log", s.n_base, s.n_cand)
    s = shift(a, b, confidence)
    base = float(np.median(a)) if a.size else 0.0
    if base <= 0:
        # No baseline to divide by (an op that is new in the candidate): infinite growth when
        # the candidate's interval is above zero.
        def inf(x: float) -> float:
            return math.inf if x > 0 else (0.0 if x == 0 else -math.inf)

        low = None if s.low is None else inf(s.low)
        high = None if s.high is None else inf(s.high)
        return Shift(inf(s.estimate), low, high, confidence, s.method + "_from_zero", s.n_base, s.n_cand)

    def rel(x: float | None) -> float | None:
        return None if x is None else 100.0 * x / base

    return Shift(100.0 * s.estimate / base, rel(s.low), rel(s.high), confidence, s.method + "_over_median",
                 s.n_base, s.n_cand)
