"""Every ``args`` entry of a Chrome trace's collected events as a stat row: the scanner's rows of
an event found by its bounds, null arguments dropped, keys and text values (strings, huge
integers' digits, arrays' canonical JSON) interned, each distinct one once. Events go in batches
so that the temporaries stay small; in memory, a batch's rows are gathered on a second thread
while the one before is interned (interning stays in batch order: it numbers the strings), and
the ids of its keys already interned (most of them: a trace has few distinct keys) are looked
up there too, so that the interning thread looks up only the rest."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from tbprof._core import chrome_pass, jsonscan, kernels
from tbprof._core.wire import default_threads
from tbprof.readers.chrome_columns import MemoryWork, StatSink, Work, chunks
from tbprof.readers.chrome_tokens import TokenTable
from tbprof.store import tables

# Events whose args are turned into stat rows per batch (a few int64 temporaries per stat row).
_ARGS_EVENTS = 1 << 17


@dataclass
class _Batch:
    """A batch of events' argument rows, gathered, not yet interned."""

    owner: np.ndarray
    key_tok: np.ndarray
    kind: np.ndarray
    value: np.ndarray
    text: np.ndarray
    # The keys' string ids known when gathered (-1: looked up when interned).
    key_known: np.ndarray


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
        lo = bounds[events]
        counts = bounds[events + 1] - lo
        pos = np.repeat(np.arange(events.shape[0]), counts)
        starts = np.cumsum(counts) - counts
        rows = lo[pos] + (np.arange(pos.shape[0]) - starts[pos])
        return rows, pos

    def add(self, first: int, events: np.ndarray) -> None:
        """Every ``args`` entry of ``events`` (collected as first, first + 1, ...) as a stat."""
        self.add_to(first + np.arange(events.shape[0]), events)

    def add_to(self, owners: np.ndarray, events: np.ndarray) -> None:
        """The args of ``events`` as stats of the collected events ``owners`` (one each), in
        batches of events so that the temporaries stay small. In memory, with more than one
        thread, a batch's rows are gathered on a second thread while the one before is interned
        (interning stays in batch order: it numbers the strings)."""
        step = _ARGS_EVENTS
        batches = [(owners[lo:lo + step], events[lo:lo + step]) for lo in range(0, events.shape[0], step)]
        self.bounds()  # computed once, before a second thread reads it
        if len(batches) < 2 or not isinstance(self.work, MemoryWork) or default_threads() < 2:
            for batch in batches:
                self._add_rows(self._batch_rows(*batch))
            return
        with ThreadPoolExecutor(max_workers=1) as pool:
            ahead = pool.submit(self._batch_rows, *batches[0])
            for i in range(len(batches)):
                rows = ahead.result()
                if i + 1 < len(batches):
                    ahead = pool.submit(self._batch_rows, *batches[i + 1])
                self._add_rows(rows)

    def _batch_rows(self, owners: np.ndarray, events: np.ndarray) -> _Batch | None:
        """The scanner's stat rows of ``events`` but for null arguments (they say nothing):
        owners, key tokens, kinds, values, which values are texts and the ids of the keys
        interned so far (numpy and compiled loops only: safe beside the interning thread)."""
        c = self.cols
        rows, pos = kernels.args_rows(events, self.bounds(), c["st_kind"], tables.KIND_NONE)
        if rows.shape[0] == 0:
            return None
        kind = c["st_kind"][rows]
        text = (kind == tables.KIND_STR) | (kind == jsonscan.KIND_JSON)
        key_tok = c["st_key"][rows]
        return _Batch(owners[pos].astype(np.int32), key_tok, kind, c["st_value"][rows], text, self.keys.known(key_tok))

    def _add_rows(self, rows: _Batch | None) -> None:
        if rows is None:
            return
        key = self.keys(rows.key_tok, rows.key_known)
        value, kind, text = rows.value, rows.kind, rows.text
        if text.any():
            # Strings, huge integers' digits, arrays' canonical text: each distinct one interned once.
            value[text] = self.texts(value[text])
            kind[text] = tables.KIND_STR
        self.stats.append(rows.owner, key, kind.astype(np.int8), value)

    def drop_bounds(self) -> None:
        """Frees the bounds once every args entry is read."""
        if self._bounds is not None:
            self.work.drop(self._bounds)
            self._bounds = None
