"""``chrome_tokens.TokenTable``: token ids computed once across calls, in the order a fresh
lookup per call would compute them."""

from __future__ import annotations

import numpy as np

from tbprof.readers.chrome_tokens import TokenTable


def test_token_table_interns_each_token_once_in_token_order_of_each_batch() -> None:
    """Batches interned one after the other (as the args' batches are): each batch's tokens not
    seen before computed in ascending order, each once; a lookup reads the ids computed (another
    thread maps a batch's rows while the next batch is interned)."""
    computed: list[int] = []

    def fn(t: int) -> int:
        computed.append(t)
        return 100 + len(computed)

    table = TokenTable(fn, np.int64, 20)
    first = np.array([5, -3, 7, 5], np.int64)
    second = np.array([7, 9, 5, 11, 9, -1], np.int64)
    table.intern(np.unique(first))
    looked_up = table.lookup(first)
    table.intern(np.unique(second))
    assert computed == [-3, 5, 7, -1, 9, 11]  # batch by batch, ascending within a batch
    assert looked_up.tolist() == [102, 101, 103, 102]
    assert table.lookup(second).tolist() == [103, 105, 102, 106, 105, 104]
    table.intern(np.array([11, 12], np.int64))
    assert computed[-1] == 12 and len(computed) == 7  # 11 once
