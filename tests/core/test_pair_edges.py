"""``kernels.pair_edges`` (the grouping's producer/consumer, launch and iterator links) against the
definition written out as loops: for each parent in input order, the children of its (type, id)
key in input order; one parent per key (the last) where asked; a crowded key links nothing."""

from __future__ import annotations

import numpy as np
import pytest

from tbprof._core.kernels import pair_edges


def expected(pk: np.ndarray, pn: np.ndarray, ck: np.ndarray, cn: np.ndarray, limit: int,
             last_only: bool) -> tuple[list[int], list[int]]:
    keys_p = [tuple(k) for k in pk.tolist()]
    keys_c = [tuple(k) for k in ck.tolist()]
    src: list[int] = []
    dst: list[int] = []
    for i, key in enumerate(keys_p):
        if last_only and any(keys_p[j] == key for j in range(i + 1, len(keys_p))):
            continue  # a later parent of the same key replaces this one
        children = [j for j, k in enumerate(keys_c) if k == key]
        n_parents = 1 if last_only else keys_p.count(key)
        if limit > 0 and n_parents >= limit and len(children) >= limit:
            continue
        for j in children:
            src.append(int(pn[i]))
            dst.append(int(cn[j]))
    return src, dst


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("n_types", "limit", "last_only"), [(1, 0, False), (3, 0, True), (2, 3, False),
                                                              (90, 0, False), (1, 2, False)])
def test_edges_follow_the_definition(seed: int, n_types: int, limit: int, last_only: bool) -> None:
    rng = np.random.default_rng(seed)
    n_par, n_child = int(rng.integers(0, 60)), int(rng.integers(0, 60))
    pk = np.stack([rng.integers(0, n_types, n_par), rng.integers(-5, 12, n_par)], axis=1).astype(np.int64)
    ck = np.stack([rng.integers(0, n_types, n_child), rng.integers(-5, 12, n_child)], axis=1).astype(np.int64)
    pn = rng.permutation(1000)[:n_par].astype(np.int64)
    cn = rng.permutation(1000)[:n_child].astype(np.int64)
    src, dst = pair_edges(pk, pn, ck, cn, limit, last_only)
    assert (src.tolist(), dst.tolist()) == expected(pk, pn, ck, cn, limit, last_only)


def test_keys_that_differ_only_in_high_bits_still_join() -> None:
    """Ids apart only above bit 40 (a weak hash would put them all in one slot and probe for each):
    every child finds its own parent."""
    n = 50_000
    ids = np.arange(n, dtype=np.int64) << 41
    keys = np.stack([np.zeros(n, np.int64), ids], axis=1)
    nodes = np.arange(n, dtype=np.int64)
    src, dst = pair_edges(keys, nodes, keys[::-1].copy(), nodes[::-1] + n, 0, False)
    assert src.tolist() == nodes.tolist()
    assert dst.tolist() == (nodes + n).tolist()


def test_no_parents_or_no_children() -> None:
    empty = np.zeros((0, 2), np.int64)
    one = np.array([[1, 2]], np.int64)
    for pk, ck in ((empty, one), (one, empty), (empty, empty)):
        src, dst = pair_edges(pk, np.arange(len(pk)), ck, np.arange(len(ck)), 0, False)
        assert src.shape == dst.shape == (0,)
