"""``chrome_tokens.TokenTable``: token ids computed once across calls, in the order a fresh
lookup per call would compute them."""

from __future__ import annotations

import numpy as np

from tbprof.readers.chrome_tokens import TokenTable


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
