"""``events.trace_args``: each event's stats that no other column holds, as one JSON object text.

Built per plane with numpy over the store's long stat tables, never a Python loop per event or
per stat: a key's text is encoded once per stat name, in two forms (``{"key": `` opening an
object, ``, "key": `` after another), a text value once per distinct string, numbers by
``str``/``repr`` mapped over the column; an owner's last value carries ``}`` and a newline, and
the keys and values of a chunk of rows are joined into one text that ``str.split`` cuts into the
objects. A JSON text never holds a raw newline (the encoder escapes control characters in keys
and values alike), so the cuts fall between objects only. Rows are joined a chunk at a time,
which bounds the pieces (Python strings) alive at once.

An event's object is its metadata's stats, then its own (an own value wins over its metadata's
under the same name, as XProf reads stats). Events without stats of their own share their
metadata's text; events without any such stat are NULL (None).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from tbprof.store.tables import KIND_BYTES, KIND_DOUBLE, KIND_NONE, KIND_REF, KIND_STR, KIND_UINT64, Plane, StatTable

# The encoder of every key and text value (json.dumps would build one per call).
_JSON = json.JSONEncoder(ensure_ascii=False)
# Stat rows made into text at once: bounds the transient strings (a key, a value and their
# joined text per row) to a small share of the memory budget.
CHUNK_ROWS = 1 << 18


def _object_array(items: list[str]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


class _Texts:
    """JSON texts of a host's strings, encoded once each and only when a stat uses them."""

    def __init__(self, strings: np.ndarray, prefix: str = "", suffix: str = "") -> None:
        self.strings = strings  # ``columns.text_table``: the host's strings and a trailing None
        self.encoded = np.empty(strings.shape[0], dtype=object)
        self.done = np.zeros(strings.shape[0], dtype=bool)
        self.prefix, self.suffix = prefix, suffix

    def of(self, ids: np.ndarray) -> np.ndarray:
        """``ids``' strings as JSON texts (``ids`` within the table)."""
        todo = np.unique(ids[~self.done[ids]])
        if todo.shape[0]:
            # (The table's trailing None: a stat whose name id is out of range, named "".)
            self.encoded[todo] = _object_array([self.prefix + _JSON.encode(t if t is not None else "") + self.suffix
                                                for t in self.strings[todo].tolist()])
            self.done[todo] = True
        return self.encoded[ids]


def _values(kind: np.ndarray, value: np.ndarray, texts: _Texts, blobs: list[bytes]) -> np.ndarray:
    """Each stat row's value as JSON text, as ``json.dumps`` writes it."""
    n = kind.shape[0]
    n_strings = texts.strings.shape[0] - 1
    values = np.empty(n, dtype=object)  # None until a kind below fills it; "null" where none does
    is_double = kind == KIND_DOUBLE
    if is_double.any():
        doubles = value[is_double].view(np.float64)
        finite = np.isfinite(doubles)
        numbers = np.empty(doubles.shape[0], dtype=object)
        numbers[finite] = _object_array(list(map(repr, doubles[finite].tolist())))
        values[is_double] = numbers
    is_uint = kind == KIND_UINT64
    if is_uint.any():
        values[is_uint] = _object_array(list(map(str, value[is_uint].view(np.uint64).tolist())))
    is_int = ~np.isin(kind, (KIND_DOUBLE, KIND_UINT64, KIND_STR, KIND_REF, KIND_BYTES, KIND_NONE))
    if is_int.any():
        values[is_int] = _object_array(list(map(str, value[is_int].tolist())))
    is_text = ((kind == KIND_STR) | (kind == KIND_REF)) & (value >= 0) & (value < n_strings)
    if is_text.any():
        values[is_text] = texts.of(value[is_text])
    is_bytes = kind == KIND_BYTES
    if is_bytes.any():  # rare (XSpace's serialized protos): one text per row
        values[is_bytes] = _object_array([_JSON.encode(blobs[b].hex()) if 0 <= b < len(blobs) else "null"
                                          for b in value[is_bytes].tolist()])
    values[values == None] = "null"  # noqa: E711 (elementwise: the rows no kind filled)
    return values


def _keys(stat_id: np.ndarray, first: np.ndarray, opening: _Texts, following: _Texts) -> np.ndarray:
    """Each stat row's ``{"key": `` (an object's first) or ``, "key": ``."""
    n_strings = opening.strings.shape[0] - 1
    named = (stat_id >= 0) & (stat_id < n_strings)
    ids = stat_id if named.all() else np.where(named, stat_id, n_strings)  # the trailing None: ""
    return np.where(first, opening.of(ids), following.of(ids))


def _objects(owner: np.ndarray, stat_id: np.ndarray, kind: np.ndarray, value: np.ndarray,
             strings: np.ndarray, blobs: list[bytes]) -> tuple[np.ndarray, list[str]]:
    """The distinct owners of the stat rows (grouped by owner, in object order) and each one's
    JSON object."""
    opening, following, texts = _Texts(strings, "{", ": "), _Texts(strings, ", ", ": "), _Texts(strings)
    owners: list[np.ndarray] = []
    objects: list[str] = []
    n = owner.shape[0]
    lo = 0
    while lo < n:
        hi = min(n, lo + CHUNK_ROWS)
        if hi < n:  # cut before the first row of the owner at ``hi`` (after its last, if that is ``lo``)
            cut = lo + int(np.searchsorted(owner[lo:], owner[hi], side="left"))
            hi = cut if cut > lo else lo + int(np.searchsorted(owner[lo:], owner[hi], side="right"))
        o = owner[lo:hi]
        first = np.empty(o.shape[0], dtype=bool)
        first[0] = True
        np.not_equal(o[1:], o[:-1], out=first[1:])
        last = np.empty_like(first)
        last[-1] = True
        last[:-1] = first[1:]
        values = _values(kind[lo:hi], value[lo:hi], texts, blobs)
        values[last] += "}\n"
        pieces = np.empty(2 * o.shape[0], dtype=object)
        pieces[0::2] = _keys(stat_id[lo:hi], first, opening, following)
        pieces[1::2] = values
        del values
        objects.extend("".join(pieces.tolist()).split("\n")[:-1])
        owners.append(o[first])
        lo = hi
    return (np.concatenate(owners) if owners else np.zeros(0, dtype=owner.dtype)), objects


def _kept(table: StatTable, skip: Collection[int]) -> np.ndarray:
    return ~np.isin(table.stat_id, np.fromiter(skip, dtype=np.int64, count=len(skip)))


def _ragged_rows(lo: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(l, l + c) for l, c in zip(lo, counts)])`` without the loop."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(lo.astype(np.int64) - (np.cumsum(counts) - counts), counts)
    return starts + np.arange(total, dtype=np.int64)


# Owners with at most this many stat rows are deduplicated by comparing each row with the few
# before it (a pass per distance); an owner with more takes a sort of all the rows instead.
_WINDOW_ROWS = 16


def _one_per_name(owner: np.ndarray, stat_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of rows grouped by owner, where an owner has a stat name more than once, as a dict keeps
    it: the first row's place with the last row's value. (rows kept, the row each takes its value
    from), both in row order."""
    n = owner.shape[0]
    rows = np.arange(n, dtype=np.int64)
    if n < 2:
        return rows, rows
    starts = np.flatnonzero(np.concatenate(([True], owner[1:] != owner[:-1])))
    widest = int(np.diff(np.append(starts, n)).max())
    if widest > _WINDOW_ROWS:
        return _one_per_name_sorted(owner, stat_id)
    later = np.zeros(n, dtype=bool)  # a row an earlier row of the same owner and name precedes
    source = rows.copy()
    for d in range(1, widest):
        same = (owner[d:] == owner[:-d]) & (stat_id[d:] == stat_id[:-d])
        if same.any():
            at = np.flatnonzero(same)  # rows at and at + d repeat a name
            later[at + d] = True
            np.maximum.at(source, at, at + d)
    if not later.any():
        return rows, rows
    kept = np.flatnonzero(~later)
    return kept, source[kept]


def _one_per_name_sorted(owner: np.ndarray, stat_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``_one_per_name`` by a stable sort of (owner, name) keys."""
    key = owner.astype(np.int64) * (int(stat_id.max(initial=0)) + 1) + stat_id
    by_key = np.argsort(key, kind="stable")
    sorted_key = key[by_key]
    repeated = sorted_key[1:] == sorted_key[:-1]
    rows = np.arange(owner.shape[0], dtype=np.int64)
    if not repeated.any():
        return rows, rows
    first = np.ones(owner.shape[0], dtype=bool)
    first[1:] = ~repeated
    last = np.ones(owner.shape[0], dtype=bool)
    last[:-1] = ~repeated
    source = rows.copy()
    source[by_key[first]] = by_key[last]
    kept = np.sort(by_key[first])
    return kept, source[kept]


@dataclass(frozen=True)
class TraceArgs:
    texts: np.ndarray  # object: one JSON text (or None) per event
    text_bytes: int  # memory of the distinct texts (``texts.nbytes`` counts references only)

    @property
    def nbytes(self) -> int:
        return int(self.texts.nbytes) + self.text_bytes


def trace_args_texts(plane: Plane, strings: np.ndarray, skip: Collection[int],
                     rows: slice | None = None) -> TraceArgs:
    """One JSON text (or None) per event of ``plane`` (of its events ``rows``, a step-1 slice,
    when given): its stats whose name id is not in ``skip`` (``strings``: the host's string table
    with a trailing None, ``columns.text_table``)."""
    lo, hi, _ = (rows or slice(0, plane.n_events)).indices(plane.n_events)
    out = np.empty(max(hi - lo, 0), dtype=object)  # None: no stat
    text_bytes = 0
    meta_idx = np.asarray(plane.meta_idx)
    meta, own = plane.meta_stats, plane.stats
    meta_keep = _kept(meta, skip)
    m_owner, m_stat, m_kind, m_value = (a[meta_keep] for a in (meta.owner, meta.stat_id, meta.kind, meta.value))
    # The own rows of the events asked for (a table sorted by owner: one contiguous run).
    first, last = (int(i) for i in np.searchsorted(own.owner, np.array([lo, hi], dtype=own.owner.dtype)))
    own_cols = [a[first:last] for a in (own.owner, own.stat_id, own.kind, own.value)]
    own_keep = ~np.isin(own_cols[1], np.fromiter(skip, dtype=np.int64, count=len(skip)))
    o_owner, o_stat, o_kind, o_value = (a[own_keep] for a in own_cols)

    # Events with a metadata stat and none of their own: their metadata's text, one per metadata.
    if m_owner.shape[0]:
        keep, source = _one_per_name(m_owner, m_stat)
        metas, meta_texts = _objects(m_owner[keep], m_stat[keep], m_kind[source], m_value[source], strings,
                                     plane.blobs)
        wanted_meta = meta_idx[lo:hi]
        found = np.minimum(np.searchsorted(metas, wanted_meta), metas.shape[0] - 1)
        has_meta = metas[found] == wanted_meta
        out[has_meta] = _object_array(meta_texts)[found[has_meta]]
        text_bytes += sum(map(sys.getsizeof, meta_texts))
    if not o_owner.shape[0]:
        return TraceArgs(out, text_bytes)

    # Events with stats of their own: their metadata's rows first, then theirs (a stable sort by
    # event of the two runs); where a name is in both, the own value wins, in the metadata's place.
    owner, stat, kind, value = o_owner.astype(np.int64), o_stat, o_kind, o_value
    if m_owner.shape[0]:
        starts = np.ones(owner.shape[0], dtype=bool)
        np.not_equal(owner[1:], owner[:-1], out=starts[1:])
        events = owner[starts]
        m_lo = np.searchsorted(m_owner, meta_idx[events], side="left")
        m_counts = np.searchsorted(m_owner, meta_idx[events], side="right") - m_lo
        m_rows = _ragged_rows(m_lo, m_counts)
        if m_rows.shape[0]:
            owner = np.concatenate([np.repeat(events, m_counts), owner])
            order = np.argsort(owner, kind="stable")
            owner = owner[order]
            stat, kind, value = (np.concatenate([m[m_rows], o])[order] for m, o in
                                 ((m_stat, o_stat), (m_kind, o_kind), (m_value, o_value)))
    keep, source = _one_per_name(owner, stat)
    if keep.shape[0] < owner.shape[0]:
        owner, stat, kind, value = owner[keep], stat[keep], kind[source], value[source]
    owners, texts = _objects(owner, stat, kind, value, strings, plane.blobs)
    out[owners - lo] = _object_array(texts)
    return TraceArgs(out, text_bytes + sum(map(sys.getsizeof, texts)))
