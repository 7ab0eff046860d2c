"""Every memoised value of the process under one byte budget, with single flight.

Converted stores, what analyses derive from a store (step assignment, op metrics, tfprof
node stats, trace search matches), tool results, encoded trace windows and JSON bodies all
live in one LRU bounded in bytes (``MemoryBudget``), so no cache can grow on its own: 50
option variants of one tool, 64 MB of trace windows per store, a tfprof step per request
all compete for the same budget and the least recently used value goes first.

Sizes are estimates: numpy ``nbytes``, ``len`` of bytes and text, plus a per-object
overhead, summed through containers and objects (``estimate_bytes``).

Single flight: a caller that asks while another thread computes the same key waits for that
computation instead of repeating it. In-flight markers are removed when the computation ends,
so nothing but the budgeted values stays behind.

The budget: ``$TBPROF_MEMORY_BYTES`` (default 4 GiB), read when it is first used. The one
exception: a store that lives for one computation in a worker keeps its derived values to
itself (``PrivateMemo``) and drops them with it.
"""

from __future__ import annotations

import itertools
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

import numpy as np

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

DEFAULT_MEMORY_BYTES = 4 << 30
MEMORY_ENV = "TBPROF_MEMORY_BYTES"

_OBJECT_BYTES = 64  # a small Python object and its reference
_SAMPLE_ITEMS = 256  # large containers: the first items' mean size times the count
_MAX_DEPTH = 12


def estimate_bytes(value: Any) -> int:
    """Approximate memory held by ``value`` (arrays, bytes, text, containers, objects)."""
    return _estimate(value, 0, set())


def _estimate(value: Any, depth: int, seen: set[int]) -> int:
    if value is None or isinstance(value, (bool, int, float)):
        return 32
    if isinstance(value, str):
        return 49 + len(value)
    if isinstance(value, (bytes, bytearray)):
        return 33 + len(value)
    if isinstance(value, np.ndarray):
        if id(value) in seen:
            return 0
        seen.add(id(value))
        return 112 + (0 if isinstance(value, np.memmap) else int(value.nbytes))
    if isinstance(value, np.generic):
        return 32 + int(value.nbytes)
    if id(value) in seen or depth > _MAX_DEPTH:
        return 0 if id(value) in seen else _OBJECT_BYTES
    seen.add(id(value))
    if isinstance(value, dict):
        return 64 + _items(list(value.items()), depth, seen, pairs=True)
    if isinstance(value, (list, tuple, set, frozenset)):
        return 56 + 8 * len(value) + _items(list(value), depth, seen)
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int) and not callable(nbytes):
        return _OBJECT_BYTES + nbytes
    fields = getattr(value, "__dict__", None)
    total = _OBJECT_BYTES
    if isinstance(fields, dict):
        total += _items(list(fields.items()), depth, seen, pairs=True)
    for name in getattr(type(value), "__slots__", ()):
        total += _estimate(getattr(value, name, None), depth + 1, seen)
    return total


def _items(items: list[Any], depth: int, seen: set[int], pairs: bool = False) -> int:
    if not items:
        return 0
    sample = items[:_SAMPLE_ITEMS]
    if pairs:
        size = sum(_estimate(k, depth + 1, seen) + _estimate(v, depth + 1, seen) for k, v in sample)
    else:
        size = sum(_estimate(v, depth + 1, seen) for v in sample)
    return size * len(items) // len(sample)


_MISSING = object()


class MemoryBudget:
    """One LRU of values from many owners (``Memo`` namespaces), bounded in bytes.

    The entry just stored is never the one evicted, so a single value larger than the whole
    budget is still returned to its caller (and dropped by the next insertion).
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used_bytes = 0
        self._lru: OrderedDict[tuple[int, Hashable], tuple[Any, int]] = OrderedDict()
        self._by_owner: dict[int, set[Hashable]] = {}
        # Reentrant, and values are released only after it is let go: dropping the last
        # reference to a store runs its Memo's finalizer (``drop_owner``), which may happen
        # inside any of these methods, or in a garbage collection that any allocation here starts.
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._lru)

    def keys(self) -> set[tuple[int, Hashable]]:
        """The (owner, key) of every value held now (a snapshot)."""
        with self._lock:
            return set(self._lru)

    def get(self, owner: int, key: Hashable) -> Any:
        with self._lock:
            hit = self._lru.get((owner, key))
            if hit is None:
                return _MISSING
            self._lru.move_to_end((owner, key))
            return hit[0]

    def contains(self, owner: int, key: Hashable) -> bool:
        with self._lock:
            return (owner, key) in self._lru

    def put(self, owner: int, key: Hashable, value: Any, size_bytes: int) -> None:
        released: list[Any] = []  # freed after the lock (see __init__)
        with self._lock:
            full = (owner, key)
            old = self._lru.pop(full, None)
            if old is not None:
                self.used_bytes -= old[1]
                released.append(old)
            self._lru[full] = (value, size_bytes)
            self._by_owner.setdefault(owner, set()).add(key)
            self.used_bytes += size_bytes
            while self.used_bytes > self.max_bytes and len(self._lru) > 1:
                (o, k), evicted = self._lru.popitem(last=False)
                self.used_bytes -= evicted[1]
                released.append(evicted)
                keys = self._by_owner.get(o)
                if keys is not None:
                    keys.discard(k)
                    if not keys:
                        del self._by_owner[o]
        del released

    def drop(self, owner: int, key: Hashable) -> None:
        with self._lock:
            hit = self._lru.pop((owner, key), None)
            if hit is not None:
                self.used_bytes -= hit[1]
                keys = self._by_owner.get(owner)
                if keys is not None:
                    keys.discard(key)
        del hit

    def drop_owner(self, owner: int) -> None:
        """Forgets every value of one owner (a store that is gone, a cleared memo)."""
        released: list[Any] = []
        with self._lock:
            for k in self._by_owner.pop(owner, ()):
                hit = self._lru.pop((owner, k), None)
                if hit is not None:
                    self.used_bytes -= hit[1]
                    released.append(hit)
        del released


_budget: MemoryBudget | None = None
_budget_lock = threading.Lock()


def budget_bytes_from_env() -> int:
    raw = os.environ.get(MEMORY_ENV, "").strip()
    return int(raw) if raw.isdigit() else DEFAULT_MEMORY_BYTES


def shared_budget() -> MemoryBudget:
    """The process-wide budget (created on first use, from ``$TBPROF_MEMORY_BYTES``)."""
    global _budget
    with _budget_lock:
        if _budget is None:
            _budget = MemoryBudget(budget_bytes_from_env())
        return _budget


_owner_ids = itertools.count(1)


class Memo:
    """A namespace of memoised values in a ``MemoryBudget`` (the shared one by default).

    Values of a Memo are dropped from the budget when the Memo is garbage collected (its
    store was evicted and nothing uses it any more) or cleared.
    """

    def __init__(self, budget: MemoryBudget | None = None, estimate: bool = True) -> None:
        self._budget = budget
        # False: values whose caller gives no size count 0 bytes (a store that lives for one
        # computation, see ProfileStore.skip_memo_sizes: its values go with it).
        self.estimate = estimate
        self._owner = next(_owner_ids)
        self._inflight: dict[Hashable, Future[Any]] = {}
        self._lock = threading.Lock()
        self._finalizer: weakref.finalize | None = None

    @property
    def budget(self) -> MemoryBudget:
        if self._budget is None:
            self._budget = shared_budget()
        if self._finalizer is None:
            # Holds the budget and the owner id, not this Memo, so the Memo can be collected.
            self._finalizer = weakref.finalize(self, self._budget.drop_owner, self._owner)
        return self._budget

    def get(self, key: Hashable, compute: Callable[[], T], size: Callable[[T], int] = estimate_bytes) -> T:
        budget = self.budget
        hit = budget.get(self._owner, key)
        if hit is not _MISSING:
            return hit
        with self._lock:
            future = self._inflight.get(key)
            owner = future is None
            if owner:
                hit = budget.get(self._owner, key)  # finished between our two looks
                if hit is not _MISSING:
                    return hit
                future = self._inflight[key] = Future()
        assert future is not None
        if not owner:
            return future.result()
        try:
            value = compute()
            budget.put(self._owner, key, value, size(value) if self.estimate or size is not estimate_bytes else 0)
        except BaseException as e:
            with self._lock:
                del self._inflight[key]
            future.set_exception(e)
            raise
        with self._lock:
            del self._inflight[key]
        future.set_result(value)
        return value

    def contains(self, key: Hashable) -> bool:
        return self.budget.contains(self._owner, key)

    def used(self) -> bool:
        """Whether a value was ever asked for (the budget is taken on first use)."""
        return self._finalizer is not None

    def clear(self) -> None:
        self.budget.drop_owner(self._owner)

    def clear_key(self, key: Hashable) -> None:
        self.budget.drop(self._owner, key)


class PrivateMemo:
    """``Memo.get`` for the values of one object that lives for one computation and is then
    dropped with them (a worker's store, while it builds the host's partial): held by the
    object alone, outside the shared budget, with no lock, in-flight future or finalizer per
    value (a measurable share of a small host's partial: bench/measurements.md#services). Two
    threads asking at once may both compute a value (derived values are pure); the first
    stored is the one every caller gets."""

    def __init__(self) -> None:
        self._values: dict[Hashable, Any] = {}

    def get(self, key: Hashable, compute: Callable[[], T], size: Callable[[T], int] | None = None) -> T:
        try:
            found: T = self._values[key]
            return found
        except KeyError:
            pass
        value: T = self._values.setdefault(key, compute())
        return value

    def contains(self, key: Hashable) -> bool:
        return key in self._values


class SmallLru(Generic[K, V]):
    """A cache of many small values on a hot path, bounded in bytes by an estimate per entry.

    For entries too small and too often read to go through ``MemoryBudget``'s lock and
    bookkeeping (a parsed op name: ``domain/tf_op.parse_tf_op``). ``entry_bytes(key, value)``
    estimates what an entry holds. Least recently used by generation: entries go into
    ``recent``; when its bytes would pass half of ``max_bytes``, the older generation is dropped
    and ``recent`` becomes it; an entry read from the older generation moves back to ``recent``.
    So an entry read since the last turn survives it, and the two never hold more than
    ``max_bytes``. A hit in ``recent`` is one dict read (``recent_get``), as cheap as
    ``functools.lru_cache``'s; writes take a lock so the byte counts stay exact, and the
    dicts are changed in place so ``recent_get`` stays bound to the live one.
    """

    def __init__(self, max_bytes: int, entry_bytes: Callable[[K, V], int]) -> None:
        self.max_bytes = max_bytes
        self._entry_bytes = entry_bytes
        self._recent: dict[K, V] = {}
        self._older: dict[K, V] = {}
        self._recent_bytes = 0
        self._older_bytes = 0
        self._lock = threading.Lock()
        # The fast path: a read of the recent generation only (a miss here is not yet a miss: ``get``).
        self.recent_get: Callable[[K], V | None] = self._recent.get

    @property
    def used_bytes(self) -> int:
        return self._recent_bytes + self._older_bytes

    def __len__(self) -> int:
        return len(self._recent.keys() | self._older.keys())

    def __contains__(self, key: K) -> bool:
        return key in self._recent or key in self._older

    def get(self, key: K) -> V | None:
        value = self._recent.get(key)
        return self.get_older(key) if value is None else value

    def get_older(self, key: K) -> V | None:
        """The slow half of ``get``, after ``recent_get`` missed: the older generation."""
        value = self._older.get(key)
        if value is not None:
            self.put(key, value)  # read again: it joins the recent generation
        return value

    def put(self, key: K, value: V) -> None:
        size = self._entry_bytes(key, value)
        with self._lock:
            if key in self._recent:
                return
            if self._recent_bytes + size > self.max_bytes // 2:
                # In place (see the class): the older generation goes, the recent one takes its place.
                self._older.clear()
                self._older.update(self._recent)
                self._older_bytes = self._recent_bytes
                self._recent.clear()
                self._recent_bytes = 0
            self._recent[key] = value
            self._recent_bytes += size

    def clear(self) -> None:
        with self._lock:
            self._recent.clear()
            self._older.clear()
            self._recent_bytes = self._older_bytes = 0
