"""``chrome_tokens.token_pairs``: the distinct (pid, tid) token pairs of the Chrome reader, found
without a sort of the rows, are those ``np.unique`` finds over a row-wise code, in the same order,
whether the pairs fit a table of every combination or the combinations are sorted."""

from __future__ import annotations

import numpy as np
import pytest

from tbprof.readers.chrome_tokens import TokenTable, token_pairs


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


def test_token_table_with_ids_known_earlier_computes_as_without() -> None:
    """Ids read by ``known`` before other calls computed some of them (as the args' gathering
    thread reads them while the interning thread goes on): the same ids, each computed once, in
    the same order as calls without them."""
    def run(stale: bool) -> tuple[list[np.ndarray], list[int]]:
        computed: list[int] = []

        def fn(t: int) -> int:
            computed.append(t)
            return 100 + len(computed)

        table = TokenTable(fn, np.int64, 20)
        first = np.array([5, -3, 7, 5], np.int64)
        second = np.array([7, 9, 5, 11, 9, -1], np.int64)
        known = table.known(second)  # before ``first`` is computed: every entry -1
        assert (known < 0).all()
        out = [table(first), table(second, known if stale else None)]
        out.append(table(np.array([11, 12], np.int64), table.known(np.array([11, 12], np.int64))))
        return out, computed

    (with_known, order_with), (without, order_without) = run(True), run(False)
    assert order_with == order_without == [-3, 5, 7, -1, 9, 11, 12]
    for a, b in zip(with_known, without, strict=True):
        assert np.array_equal(a, b)
    assert with_known[1].tolist() == [103, 105, 102, 106, 105, 104]
