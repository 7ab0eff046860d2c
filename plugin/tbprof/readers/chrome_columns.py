"""Where the Chrome trace reader keeps its per-event and per-stat columns while it builds a store.

In memory (``MemoryWork``, the in-memory reader: every step sees whole columns, one chunk) or in
scratch files of the cache entry being written (``EntryWork``, a file larger than the memory
budget: readers/chrome_stream.py). In an entry the columns are ``.npy`` files mapped with
``np.memmap``: their pages are file-backed, so the kernel writes them back and drops them under
memory pressure and they do not count as the process' anonymous memory; the builder walks them in
chunks of ``chunk_events`` rows, so what stays in anonymous memory is one chunk's temporaries plus
what the builder checks against the budget (``Limit``). The same builder code runs on both: eager
reading is streaming with an unlimited chunk.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from tbprof.cache.entry_writer import Appender, EntryWriter
from tbprof.errors import ProfileReadError
from tbprof.readers.plane_builder import Limit


def chunks(n: int, step: int) -> Iterator[tuple[int, int]]:
    """[lo, hi) ranges of at most ``step`` rows covering ``0..n`` (one empty range when n is 0)."""
    if n == 0:
        yield 0, 0
        return
    for lo in range(0, n, step):
        yield lo, min(n, lo + step)


class Sink:
    """A column that grows by appends; ``done`` returns it whole (an array or a mapping)."""

    def append(self, values: np.ndarray) -> None:
        raise NotImplementedError

    def done(self) -> np.ndarray:
        raise NotImplementedError


class _MemorySink(Sink):
    def __init__(self, dtype: Any) -> None:
        self.dtype = np.dtype(dtype)
        self.parts: list[np.ndarray] = []

    def append(self, values: np.ndarray) -> None:
        self.parts.append(np.asarray(values, dtype=self.dtype))

    def done(self) -> np.ndarray:
        parts, self.parts = self.parts, []
        return np.concatenate(parts) if parts else np.zeros(0, self.dtype)


class _FileSink(Sink):
    def __init__(self, work: EntryWork, name: str, dtype: Any) -> None:
        self.work = work
        self.name = name
        self.appender: Appender = work.writer.appender(name, dtype)

    def append(self, values: np.ndarray) -> None:
        self.appender.append(values)

    def done(self) -> np.ndarray:
        self.appender.close()
        arr: np.ndarray = self.work.writer.open(self.name)
        return arr


class MemoryWork:
    """Columns in memory, whole (``chunk_events`` covers any file)."""

    chunk_events = 1 << 62
    limit: Limit | None = None

    def empty(self, name: str, dtype: Any, rows: int) -> np.ndarray:
        return np.empty(rows, dtype=dtype)

    def zeros(self, name: str, dtype: Any, rows: int) -> np.ndarray:
        return np.zeros(rows, dtype=dtype)

    def sink(self, name: str, dtype: Any) -> Sink:
        return _MemorySink(dtype)

    def plane_column(self, pi: int, name: str, dtype: Any, rows: int) -> np.ndarray:
        """A column of plane ``pi`` of the store being built."""
        return np.empty(rows, dtype=dtype)

    def drop(self, *arrays: Any) -> None:
        """Nothing to remove: the caller's last reference goes with its variables."""

    def check(self, need_bytes: int, what: str) -> None:
        """In memory the whole need was checked before reading (cache/memory_guard.py)."""


class EntryWork:
    """Scratch columns (``x_<name>``) in the folder of the entry ``writer`` writes, walked in
    chunks of ``chunk_events`` rows; steps that need memory growing with the file check ``limit``."""

    def __init__(self, writer: EntryWriter, limit: Limit, chunk_events: int) -> None:
        self.writer = writer
        self.limit = limit
        self.chunk_events = chunk_events
        self._serial = 0

    def scratch_name(self, name: str) -> str:
        """A new scratch column's file name (``x<serial>_<name>``: removed before the entry is committed)."""
        self._serial += 1
        return f"x{self._serial}_{name}"

    def empty(self, name: str, dtype: Any, rows: int) -> np.ndarray:
        arr: np.ndarray = self.writer.create(self.scratch_name(name), dtype, rows)
        return arr

    def zeros(self, name: str, dtype: Any, rows: int) -> np.ndarray:
        return self.empty(name, dtype, rows)  # a new file's reserved blocks read as zeros

    def sink(self, name: str, dtype: Any) -> Sink:
        return _FileSink(self, self.scratch_name(name), dtype)

    def plane_column(self, pi: int, name: str, dtype: Any, rows: int) -> np.ndarray:
        """A column of plane ``pi``, created as the entry's own file (``p<pi>_<name>.npy``)."""
        arr: np.ndarray = self.writer.create(f"p{pi}_{name}", dtype, rows)
        return arr

    def drop(self, *arrays: Any) -> None:
        """Removes scratch columns (memory maps of this entry's files) once they are used: the
        mapping keeps its pages until the array goes, the disk space is freed with the file."""
        for arr in arrays:
            name = getattr(arr, "filename", None)
            if name and os.path.basename(name).startswith("x") and \
                    os.path.realpath(os.path.dirname(name)) == os.path.realpath(self.writer.folder):
                try:
                    os.unlink(name)
                except FileNotFoundError:
                    pass

    def check(self, need_bytes: int, what: str) -> None:
        self.limit.check(need_bytes, what)


Work = MemoryWork | EntryWork


class StatSink:
    """Stat rows (owner event in collection order, name id, kind, value) appended in segments;
    ``segments`` hands them back in the order they came, each segment once."""

    def __init__(self, work: Work) -> None:
        self.memory = isinstance(work, MemoryWork)
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.cols = [work.sink(name, dtype) for name, dtype in
                     (("st_owner", np.int32), ("st_key", np.int32), ("st_kind", np.int8), ("st_value", np.int64))]
        self.bounds: list[tuple[int, int]] = []
        self.rows = 0
        self._open: tuple[np.ndarray, ...] | None = None

    def append(self, owner: np.ndarray, key: np.ndarray, kind: np.ndarray, value: np.ndarray) -> None:
        if self.memory:
            self.parts.append((owner, key, kind, value))
            return
        for col, values in zip(self.cols, (owner, key, kind, value), strict=True):
            col.append(values)
        self.bounds.append((self.rows, self.rows + int(owner.shape[0])))
        self.rows += int(owner.shape[0])

    def _opened(self) -> tuple[np.ndarray, ...]:
        if self._open is None:
            self._open = tuple(col.done() for col in self.cols)
        return self._open

    def segments(self, consume: bool) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """The segments in order; ``consume``: each is dropped once handed out (the last pass)."""
        if self.memory:
            if not consume:
                yield from self.parts
                return
            while self.parts:
                yield self.parts.pop(0)
            return
        owner, key, kind, value = self._opened()
        for lo, hi in self.bounds:
            yield owner[lo:hi], key[lo:hi], kind[lo:hi], value[lo:hi]


# The scanner's columns (``jsonscan.Scanner.columns``) and their bytes per event and per stat row.
SCANNER_EVENT_COLUMNS = (("ph", np.int32), ("ts_us", np.int64), ("ts_sub_ps", np.int32), ("dur_ps", np.int64),
                         ("pid", np.int32),
                         ("tid", np.int32), ("name", np.int32), ("cat", np.int32), ("id", np.int32),
                         ("bind_id", np.int32), ("flags", np.uint8))
SCANNER_STAT_COLUMNS = (("st_owner", np.int32), ("st_key", np.int32), ("st_kind", np.int8), ("st_value", np.int64))
_EVENT_BYTES = sum(np.dtype(d).itemsize for _, d in SCANNER_EVENT_COLUMNS)
_STAT_BYTES = sum(np.dtype(d).itemsize for _, d in SCANNER_STAT_COLUMNS)
_MAX_EVENTS = (1 << 31) - 1  # stat owners are int32


class Spill:
    """A streaming conversion's scanner columns, drained to scratch files of the entry whenever
    they pass ``drain_bytes`` (so the scanner's own buffers stay bounded), and its limits."""

    def __init__(self, work: EntryWork, drain_bytes: int, json_limit_bytes: int, json_limit_reason: str) -> None:
        self.work = work
        self.drain_bytes = drain_bytes
        self.json_limit_bytes = json_limit_bytes  # decompressed JSON this conversion accepts
        self.json_limit_reason = json_limit_reason
        self.events = 0
        self.resets = 0
        self.sinks: dict[str, _FileSink] | None = None

    def too_much_json(self, limit_bytes: int) -> str:
        return f"the gzip content expands beyond {limit_bytes / 1e6:.0f} MB, {self.json_limit_reason}"

    def _start(self) -> None:
        for sink in (self.sinks or {}).values():  # a repeated 'traceEvents': the last one wins
            sink.appender.close()
            os.unlink(sink.appender.path)
        self.sinks = {name: _FileSink(self.work, self.work.scratch_name(name), dtype)
                      for name, dtype in (*SCANNER_EVENT_COLUMNS, *SCANNER_STAT_COLUMNS)}
        self.events = 0

    def drain(self, sc: Any, final: bool) -> None:
        """Moves the scanner's columns to the files once they hold ``drain_bytes`` (always when
        ``final``); owners become event numbers of the whole file."""
        if not final and sc.n_events * _EVENT_BYTES + sc.n_stats * _STAT_BYTES < self.drain_bytes:
            return
        if self.sinks is None or sc.event_resets != self.resets:
            self.resets = sc.event_resets
            self._start()
        assert self.sinks is not None
        cols = sc.columns(np)
        n = int(cols["ph"].shape[0])
        if self.events + n > _MAX_EVENTS:
            raise ProfileReadError(self.work.limit.source, f"the trace holds more than {_MAX_EVENTS:,} events, more "
                                   "than tbprof reads from one file")
        cols["st_owner"] += np.int32(self.events)
        for name, arr in cols.items():
            self.sinks[name].append(arr)
        self.events += n

    def columns(self) -> dict[str, np.ndarray]:
        assert self.sinks is not None
        return {name: sink.done() for name, sink in self.sinks.items()}
