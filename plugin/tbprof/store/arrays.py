"""Array helpers every layer above the store shares."""

from __future__ import annotations

import numpy as np


def sorted_unique(x: np.ndarray, sorted_runs: bool = False) -> np.ndarray:
    """The distinct values of a 1-D array, ascending: what ``np.unique(x)`` gives, by sorting.

    numpy 2's plain ``np.unique`` (no ``return_*``) takes a hash-table path that is slower than a
    sort on large integer columns, and its first call imports ``numpy.ma`` (a visible part of a
    cold command). ``sorted_runs``: ``x`` is a few ascending arrays end to end, which numpy's
    stable sort (timsort) merges in a fraction of a full sort's time. Figures:
    bench/measurements.md#analyses.
    """
    if len(x) == 0:
        return np.asarray(x)
    x = np.sort(x, kind="stable" if sorted_runs else None)
    return x[np.concatenate([[True], x[1:] != x[:-1]])]
