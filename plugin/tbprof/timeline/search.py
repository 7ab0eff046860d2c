"""Search over the whole trace: event names and string stats (tf_op, hlo_op, hlo_module, ...).

The query is matched once against the string table (a few thousand strings), never per
event; events then match by ``np.isin``-style lookups of their name id, their display name
and their string stats (own and metadata). XProf searches only the loaded window; this
searches everything and pages through the matches in time order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tbprof.domain.answer_size import capped_len, capped_name, check_answer_bytes
from tbprof.domain.planes import device_planes_of
from tbprof.domain.regex import RegexError, searcher
from tbprof.errors import BadParameter
from tbprof.store.tables import KIND_REF, KIND_STR, ProfileStore
from tbprof.timeline.tracks import TrackIndex, track_index

MAX_QUERY_CHARS = 500
_MATCH_BYTES = 150  # a match's numbers and keys in the answer


class SearchError(BadParameter):
    """A query that cannot be run (bad regular expression, empty)."""


@dataclass
class Matches:
    """All matches of one query, in time order."""

    plane: np.ndarray  # int32 plane index
    row: np.ndarray  # int64 plane row
    start_ps: np.ndarray  # int64
    matched_strings: int  # how many distinct strings of the table matched


def _string_matcher(query: str, regex: bool) -> Any:
    if not query:
        raise SearchError("the search query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise SearchError(f"the search query is longer than {MAX_QUERY_CHARS} characters")
    if regex:
        try:
            return searcher(query, ignore_case=True, what="search regex")
        except RegexError as e:
            raise SearchError(str(e)) from None
    needle = query.casefold()
    return lambda s: needle in s.casefold()


def _plane_matches(store: ProfileStore, plane_index: int, is_match: np.ndarray) -> np.ndarray:
    plane = store.planes[plane_index]
    hit = is_match[plane.name_id]
    # Display names live on the metadata; string stats on events and on metadata.
    meta_hit = is_match[plane.meta_display_name_id] if plane.meta_display_name_id.shape[0] else \
        np.zeros(0, dtype=bool)
    ms = plane.meta_stats
    if len(ms):
        text = (ms.kind == KIND_STR) | (ms.kind == KIND_REF)
        owners = ms.owner[text][is_match[ms.value[text]]]
        if owners.shape[0]:
            meta_hit = meta_hit.copy() if meta_hit.shape[0] else np.zeros(plane.meta_ids.shape[0], dtype=bool)
            meta_hit[owners] = True
    if meta_hit.shape[0] and meta_hit.any():
        hit |= meta_hit[plane.meta_idx]
    st = plane.stats
    if len(st):
        text = (st.kind == KIND_STR) | (st.kind == KIND_REF)
        vals = st.value[text]
        ok = is_match[np.clip(vals, 0, is_match.shape[0] - 1)] & (vals >= 0) & (vals < is_match.shape[0])
        hit[st.owner[text][ok]] = True
    return np.nonzero(hit)[0]


def find_all(store: ProfileStore, query: str, regex: bool = False) -> Matches:
    """Every event matching ``query`` (case-insensitive substring, or regex), in time order."""
    matcher = _string_matcher(query, regex)  # a bad query raises before anything is cached
    return store.memo(("timeline", "search", query, regex), lambda: _find_all(store, matcher))


def _find_all(store: ProfileStore, matcher: Any) -> Matches:
    ids = store.strings.ids_matching(matcher)
    is_match = np.zeros(len(store.strings), dtype=bool)
    is_match[ids] = True
    is_match[0] = False  # the empty string matches every substring query; it names nothing
    planes, rows, starts = [], [], []
    if ids.shape[0]:
        index = track_index(store)
        shown = {store.planes[g.plane].index for g in index.groups}
        for p in sorted(shown):
            r = _plane_matches(store, p, is_match)
            planes.append(np.full(r.shape[0], p, dtype=np.int32))
            rows.append(r.astype(np.int64))
            starts.append(store.planes[p].start_ps[r])
    if planes:
        plane = np.concatenate(planes)
        row = np.concatenate(rows)
        start = np.concatenate(starts)
        order = np.lexsort((row, plane, start))
        result = Matches(plane[order], row[order], start[order], int(ids.shape[0]))
    else:
        result = Matches(np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int64), 0)
    return result


def track_of(index: TrackIndex, store: ProfileStore, plane: int, row: int) -> int:
    """Track id showing event ``row`` of ``plane`` (its line's track)."""
    line = int(store.planes[plane].line_idx[row])
    return index.by_line.get((plane, line), -1)


def search(store: ProfileStore, query: str, regex: bool = False, offset: int = 0, limit: int = 100,
           from_ps: int | None = None) -> dict[str, Any]:
    """A page of matches: ``limit`` matches from ``offset`` (or from the first at/after ``from_ps``)."""
    m = find_all(store, query, regex)
    total = int(m.row.shape[0])
    if from_ps is not None:
        offset = int(np.searchsorted(m.start_ps, from_ps, side="left"))
    offset = max(0, min(offset, total))
    end = min(offset + limit, total)
    index = track_index(store)
    names = [store.strings[int(store.planes[int(m.plane[k])].name_id[int(m.row[k])])] for k in range(offset, end)]
    check_answer_bytes(sum(capped_len(n) + _MATCH_BYTES for n in names), f"{len(names):,} matches",
                       "ask for fewer with a smaller limit")
    out = []
    for k, name in zip(range(offset, end), names, strict=True):
        p, r = int(m.plane[k]), int(m.row[k])
        plane = store.planes[p]
        out.append({"plane": p, "row": r, "track": track_of(index, store, p, r),
                    "start_ps": int(plane.start_ps[r]), "dur_ps": int(plane.dur_ps[r]),
                    "depth": int(plane.depth[r]), "name": capped_name(name)})
    # A kernel's name is also on its CPU launch, which comes first in time: the viewer starts at
    # the first match on a device, where the kernel itself runs.
    on_device = np.flatnonzero(np.isin(m.plane, np.asarray(device_planes_of(store), dtype=np.int32)))
    first_device = int(on_device[0]) if on_device.shape[0] else None
    return {"query": query, "regex": regex, "total": total, "offset": offset, "count": len(out),
            "first_device_offset": first_device,
            "matched_strings": m.matched_strings, "matches": out,
            "prev_offset": max(offset - limit, 0) if offset > 0 else None,
            "next_offset": end if end < total else None}
