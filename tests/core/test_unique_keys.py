"""``kernels.unique_keys``: the distinct texts of a plane (readers/plane_builder.py ``decode_texts``)
found as numpy's ``unique`` finds them, which fixes the order strings are interned in."""

from __future__ import annotations

import numpy as np
import pytest

from tbprof._core import kernels


def _keys(case: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    if case == "empty":
        return np.zeros(0, np.uint64)
    if case == "one repeated":  # jax_large's host plane: one text on every str stat
        return np.full(5000, 0xDEADBEEF, np.uint64)
    if case == "all distinct":
        return rng.permutation(np.arange(3000, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    if case == "few distinct":
        return rng.choice(np.array([3, 2**64 - 1, 0, 2**63, 17], np.uint64), size=4000)
    # Keys that differ only in their low bits, then only in their high bits: one probe chain each.
    return np.concatenate([np.arange(500, dtype=np.uint64), np.arange(500, dtype=np.uint64) << np.uint64(54),
                           np.arange(500, dtype=np.uint64)])


@pytest.mark.parametrize("case", ["empty", "one repeated", "all distinct", "few distinct", "clustered"])
def test_unique_keys_matches_numpy_unique(case: str) -> None:
    keys = _keys(case)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    got_first, got_inverse = kernels.unique_keys(keys)
    assert got_first.tolist() == first.tolist()
    assert got_inverse.tolist() == inverse.ravel().tolist()
    # And what the reader relies on: the first position holds the key of its rank.
    assert np.array_equal(keys[got_first][got_inverse], keys)
