"""``chrome_tokens.token_pairs``: the distinct (pid, tid) token pairs of the Chrome reader, found
without a sort of the rows, are those ``np.unique`` finds over a row-wise code, in the same order,
whether the pairs fit a table of every combination or the combinations are sorted."""

from __future__ import annotations

import numpy as np
import pytest

from tbprof.readers.chrome_tokens import token_pairs


def _reference(a: np.ndarray, b: np.ndarray, n_tokens: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    code = (a.astype(np.int64) + 3) * (n_tokens + 3) + (b.astype(np.int64) + 3)
    uniq, inverse = np.unique(code, return_inverse=True)
    return inverse.reshape(-1), uniq // (n_tokens + 3) - 3, uniq % (n_tokens + 3) - 3


@pytest.mark.parametrize(("n_rows", "distinct"), [(1, 1), (5000, 8), (300, 290)], ids=["one", "few", "many"])
def test_token_pairs_are_numpys_unique_pairs(n_rows: int, distinct: int) -> None:
    rng = np.random.default_rng(distinct)
    n_tokens = 1000
    # Token ids from -3 (the global track) up, as the scanner's columns hold them.
    a = rng.integers(-3, distinct - 3, n_rows).astype(np.int32)
    b = rng.choice(np.arange(-3, n_tokens), distinct)[rng.integers(0, distinct, n_rows)].astype(np.int32)
    got = token_pairs(a, b, n_tokens)
    want = _reference(a, b, n_tokens)
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w)


def test_many_combinations_are_sorted_not_tabled() -> None:
    # 400 distinct a x 400 distinct b (160,000 combinations) over 400 rows: past the table's bound.
    a = np.arange(400, dtype=np.int32)
    b = np.arange(400, dtype=np.int32)[::-1].copy()
    pair, pids, tids = token_pairs(a, b, 1000)
    assert pair.tolist() == list(range(400))
    assert np.array_equal(pids, a) and np.array_equal(tids, b)
