"""The last caches bounded by a count (issue #26) are bounded in bytes: parsed op names
(domain/tf_op.parse_tf_op, a ``SmallLru`` with a byte estimate per entry) and the U
distributions of compare (analyses/compare/stats.u_null_cdf, in the one ``MemoryBudget``)."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

from tbprof.analyses.compare import stats as cs
from tbprof.domain import tf_op
from tbprof.service.profiles import Profiles
from tbprof.store.memo import Memo, MemoryBudget, SmallLru
from tests.conftest import SAMPLE_PROFILES


@pytest.fixture(scope="module")
def op_names(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Every distinct string of the jax_mlp and keras_cnn profiles (op names, and the rest)."""
    profiles = Profiles(SAMPLE_PROFILES, cache_dir=tmp_path_factory.mktemp("cache"))
    names: list[str] = []
    for run in profiles.index.runs().values():
        if run.name.split("/")[0] in ("jax_mlp", "keras_cnn"):
            for host in run.hosts:
                names += profiles.store(run, host).strings.as_list()
    out = list(dict.fromkeys(n for n in names if n))
    assert len(out) > 1000
    return out


def _size(key: str, value: str) -> int:
    return 100 + len(key)


def test_small_lru_is_bounded_in_bytes_and_keeps_what_was_read() -> None:
    lru: SmallLru[str, str] = SmallLru(10_000, _size)
    lru.put("first", "1")
    lru.put("kept", "2")
    for i in range(500):
        lru.put(f"key{i:04d}", str(i))
        assert lru.used_bytes <= lru.max_bytes
        assert lru.get("kept") == "2"  # read since every turn: never evicted
    assert "first" not in lru and lru.get("first") is None  # never read again: gone
    assert "key0000" not in lru and "key0499" in lru
    # What the entries it holds are charged: each at most twice (once per generation).
    held = [k for k in ["kept", *(f"key{i:04d}" for i in range(500))] if k in lru]
    assert sum(_size(k, "") for k in held) <= lru.used_bytes <= 2 * sum(_size(k, "") for k in held)


def test_parse_tf_op_cache_is_bounded_in_bytes_and_evicts(op_names: list[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    small: SmallLru[str, tf_op.TfOp] = SmallLru(64 << 10, tf_op._entry_bytes)
    monkeypatch.setattr(tf_op, "_PARSED", small)
    monkeypatch.setattr(tf_op, "_recent_parsed", small.recent_get)
    for name in op_names:
        assert tf_op.parse_tf_op(name) == tf_op._parse_tf_op(name)
        assert small.used_bytes <= small.max_bytes
    assert op_names[0] not in small and op_names[-1] in small
    assert tf_op.parse_tf_op(op_names[-1]) is tf_op.parse_tf_op(op_names[-1])  # a hit: the same object


def test_parse_tf_op_byte_estimate_covers_what_an_entry_holds(op_names: list[str]) -> None:
    """tracemalloc's count of what the parsed names take (TfOps, their strings, the dict
    slots) does not exceed what the cache charges for them, so the bound in bytes holds."""
    lru: SmallLru[str, tf_op.TfOp] = SmallLru(1 << 30, tf_op._entry_bytes)
    keys = [name + "" for name in op_names]  # the keys exist before: the cache holds references
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for key in keys:
            lru.put(key, tf_op._parse_tf_op(key))
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 0 < held <= lru.used_bytes


def test_u_distributions_are_charged_to_the_budget_and_evicted(monkeypatch: pytest.MonkeyPatch) -> None:
    budget = MemoryBudget(40_000)  # the two largest arrays (20 kB and 13 kB) fit, not the three
    monkeypatch.setattr(cs, "_U_CDFS", Memo(budget))
    pairs = [(50, 50), (40, 40), (30, 50), (20, 20)]  # 2501, 1601, 1501, 401 float64s
    for n, m in pairs:
        cdf = cs.u_null_cdf(n, m)
        assert cdf.shape == (n * m + 1,) and not cdf.flags.writeable
        assert budget.used_bytes <= budget.max_bytes
    charged = {k: size for (_, k), (_, size) in budget._lru.items() if isinstance(k, tuple)}
    assert (50, 50) not in charged  # the least recently used went first
    for (n, m), size in charged.items():
        assert size >= 8 * (n * m + 1)  # at least the array's bytes
    assert cs.u_null_cdf(20, 20) is cs.u_null_cdf(20, 20)  # memoised
    assert np.allclose(cs.u_null_cdf(3, 4)[-1], 1.0)
