"""``kernels.bucket_rows`` (a plane's stat columns gathered for several stats at once) against
the definition: the rows whose id maps to a bucket, bucket by bucket, ascending within each."""

from __future__ import annotations

import numpy as np
import pytest

from tbprof._core.kernels import bucket_gather, bucket_rows


@pytest.mark.parametrize("seed", range(4))
def test_rows_grouped_by_bucket(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 20, 5000).astype(np.int32)
    lut = np.full(20, -1, np.int32)
    wanted = rng.choice(20, 4, replace=False)
    lut[wanted] = np.arange(4, dtype=np.int32)
    rows, bounds = bucket_rows(ids, lut, 4)
    for b, stat in enumerate(wanted.tolist()):
        assert rows[bounds[b]:bounds[b + 1]].tolist() == np.flatnonzero(ids == stat).tolist()
    assert bounds[-1] == np.isin(ids, wanted).sum()


def test_gather_takes_the_rows_values() -> None:
    ids = np.array([3, 1, 3, 2, 1], np.int32)
    lut = np.array([-1, 1, -1, 0], np.int32)  # id 3 -> bucket 0, id 1 -> bucket 1
    owner = np.array([10, 11, 12, 13, 14], np.int32)
    kind = np.array([1, 2, 3, 4, 5], np.int8)
    value = np.array([100, 101, 102, 103, 104], np.int64)
    o, k, v, bounds = bucket_gather(ids, lut, 2, owner, kind, value)
    assert bounds.tolist() == [0, 2, 4]
    assert o.tolist() == [10, 12, 11, 14] and k.tolist() == [1, 3, 2, 5] and v.tolist() == [100, 102, 101, 104]


def test_a_bucket_beyond_the_count_raises() -> None:
    with pytest.raises(IndexError):
        bucket_rows(np.array([0], np.int32), np.array([5], np.int32), 2)
