"""Every ``args`` entry of a Chrome trace's collected events as a stat row: the scanner's rows of
an event found by its bounds, null arguments dropped, keys and text values (strings, huge
integers' digits, arrays' canonical JSON) interned, each distinct one once. Events go in batches
so that the temporaries stay small; in memory, a batch's rows and its distinct keys and texts are
gathered on other threads (one or two batches ahead) while the one before is interned, and its
rows mapped to string ids on other threads again once it is: the calling thread interns only the
distinct tokens, in batch order (it numbers the strings)."""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from tbprof._core import chrome_pass, jsonscan, kernels
from tbprof._core.wire import default_threads
from tbprof.readers.chrome_columns import MemoryWork, StatSink, Work, chunks
from tbprof.readers.chrome_tokens import TokenTable
from tbprof.store import tables
from tbprof.store.arrays import sorted_unique

# Events whose args are turned into stat rows per batch (a few int64 temporaries per stat row).
_ARGS_EVENTS = 1 << 17
# The most batches gathered ahead of the interning (and mapped behind it) at once where there
# are threads for them: each batch in flight adds to the conversion's peak memory, more than two
# past what they save in time (bench/measurements.md, "Batches of args in flight").
_ARGS_IN_FLIGHT = 2
# A batch's stat rows: owners, name ids, kinds, values.
_Stats = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass
class _Batch:
    """A batch of events' argument rows, gathered, not yet interned: the distinct key tokens and
    text value tokens beside the rows."""

    owner: np.ndarray
    key_tok: np.ndarray
    kind: np.ndarray
    value: np.ndarray
    text: np.ndarray
    distinct_keys: np.ndarray
    distinct_texts: np.ndarray


class ArgStats:
    """The args of events of the scanner's columns ``cols`` as rows of ``stats`` (owner: the
    collected event), keys through ``keys``, text values through ``texts``."""

    def __init__(self, work: Work, cols: dict[str, np.ndarray], stats: StatSink, keys: TokenTable,
                 texts: TokenTable) -> None:
        self.work = work
        self.cols = cols
        self.stats = stats
        self.keys = keys
        self.texts = texts
        self._bounds: np.ndarray | None = None
        self._rows_of_event: np.ndarray | None = None  # an event's row in the scanner's columns

    def renumber(self, rows: np.ndarray) -> None:
        """From now on event ``i`` is the scanner's event ``rows[i]`` (the event columns were reduced
        to those rows; the stat columns were not)."""
        self.bounds()  # of every event, counted from the stat owners before they go
        self._rows_of_event = rows

    def bounds(self) -> np.ndarray:
        """Each event's first stat row in the scanner's columns, then their end (computed once)."""
        if self._bounds is None:
            # The scanner writes an event's rows together, events in file order: owners ascend.
            n = self.cols["ph"].shape[0]
            owner = self.cols["st_owner"]
            bounds = self.work.empty("stat_bounds", np.int64, n + 1)
            if n + 1 <= self.work.chunk_events:  # in memory: one compiled pass over the owners
                bounds[:] = chrome_pass.owner_bounds(owner, n, default_threads())
            else:
                for lo, hi in chunks(n + 1, self.work.chunk_events):
                    bounds[lo:hi] = np.searchsorted(owner, np.arange(lo, hi, dtype=owner.dtype))
            self._bounds = bounds
            del owner
            self.work.drop(self.cols.pop("st_owner"))  # the bounds say it all now
        return self._bounds

    def rows_of(self, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The scanner's stat rows of ``events`` (event by event, keys in file order) and, for
        each row, its event's position in ``events``."""
        bounds = self.bounds()
        if self._rows_of_event is not None:
            events = self._rows_of_event[events]
        lo = bounds[events]
        counts = bounds[events + 1] - lo
        pos = np.repeat(np.arange(events.shape[0]), counts)
        starts = np.cumsum(counts) - counts
        rows = lo[pos] + (np.arange(pos.shape[0]) - starts[pos])
        return rows, pos

    def add(self, first: int, events: np.ndarray) -> None:
        """Every ``args`` entry of ``events`` (collected as first, first + 1, ...) as a stat."""
        self.add_to(first + np.arange(events.shape[0]), events)

    def add_scanner_rows(self, first: int, rows: np.ndarray) -> None:
        """``add`` for events given by their rows in the scanner's columns (as numbered before
        ``renumber``)."""
        self._add_rows(first + np.arange(rows.shape[0]), rows)

    def add_to(self, owners: np.ndarray, events: np.ndarray) -> None:
        """The args of ``events`` as stats of the collected events ``owners`` (one each), in
        batches of events so that the temporaries stay small: a batch's rows gathered, their
        distinct keys and texts interned (in batch order: it numbers the strings), the rows mapped
        to string ids and appended (in batch order). In memory, with more than one thread, the
        gathering and the mapping run on other threads, ahead of and behind the interning."""
        self._add_rows(owners, events if self._rows_of_event is None else self._rows_of_event[events])

    def _add_rows(self, owners: np.ndarray, events: np.ndarray) -> None:
        """``add_to`` for events given by their rows in the scanner's columns."""
        step = _ARGS_EVENTS
        batches = [(owners[lo:lo + step], events[lo:lo + step]) for lo in range(0, events.shape[0], step)]
        self.bounds()  # computed once, before another thread reads it
        if len(batches) < 2 or not isinstance(self.work, MemoryWork) or default_threads() < 2:
            for batch in batches:
                rows = self._batch_rows(*batch)
                if rows is not None:
                    self._intern(rows)
                    self.stats.append(*self._mapped(rows))
            return
        # Batches gathered ahead of the interning, and mapped behind it, at once: one each with two
        # threads, more where there are cores for them (each batch in flight holds its rows).
        in_flight = max(1, min(default_threads() - 1, _ARGS_IN_FLIGHT))
        with ThreadPoolExecutor(max_workers=2 * in_flight) as pool:
            gathering = deque(pool.submit(self._batch_rows, *batch) for batch in batches[:in_flight])
            mapping: deque[Future[_Stats]] = deque()
            for i in range(len(batches)):
                rows = gathering.popleft().result()
                if i + in_flight < len(batches):
                    gathering.append(pool.submit(self._batch_rows, *batches[i + in_flight]))
                if rows is not None:
                    self._intern(rows)
                    mapping.append(pool.submit(self._mapped, rows))
                del rows
                while len(mapping) > in_flight or (mapping and mapping[0].done()):
                    self.stats.append(*mapping.popleft().result())
            for done in mapping:
                self.stats.append(*done.result())

    def _batch_rows(self, owners: np.ndarray, events: np.ndarray) -> _Batch | None:
        """The scanner's stat rows of ``events`` but for null arguments (they say nothing):
        owners, key tokens, kinds, values, which values are texts, and the distinct key and text
        tokens (numpy and compiled loops only: safe beside the interning thread)."""
        c = self.cols
        rows, pos = kernels.args_rows(events, self.bounds(), c["st_kind"], tables.KIND_NONE)
        if rows.shape[0] == 0:
            return None
        kind = c["st_kind"][rows]
        text = (kind == tables.KIND_STR) | (kind == jsonscan.KIND_JSON)
        key_tok = c["st_key"][rows]
        value = c["st_value"][rows]
        return _Batch(owners[pos].astype(np.int32), key_tok, kind, value, text, sorted_unique(key_tok),
                      sorted_unique(value[text]))

    def _intern(self, rows: _Batch) -> None:
        """A batch's new keys, then its new texts (strings, huge integers' digits, arrays'
        canonical text), interned: each distinct one once, in token order."""
        self.keys.intern(rows.distinct_keys)
        self.texts.intern(rows.distinct_texts)

    def _mapped(self, rows: _Batch) -> _Stats:
        """A batch's rows as stat rows, its keys and texts interned already (safe beside the
        interning thread: it reads interned entries only)."""
        value, kind, text = rows.value, rows.kind, rows.text
        if text.any():
            value[text] = self.texts.lookup(value[text])
            kind[text] = tables.KIND_STR
        return rows.owner, self.keys.lookup(rows.key_tok), kind.astype(np.int8), value

    def drop_bounds(self) -> None:
        """Frees the bounds once every args entry is read."""
        if self._bounds is not None:
            self.work.drop(self._bounds)
            self._bounds = None
