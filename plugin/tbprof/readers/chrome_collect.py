"""The Chrome trace reader's pass over the scanner's columns: every event of a phase tbprof shows
collected (in collection order) with its thread's line, exact picosecond times from the earliest
event, interned name and category, and its ``args`` as stat rows; then handed to the plane
builder (``plane_collected.build_planes``), with the flow points bound by ``plane_flows``.
numpy and compiled passes (``_core/chrome_pass.pyx``: the phases' checks, a phase's kept rows,
the (pid, tid) pairs) over all events, Python once per distinct token, thread or object (never
once per event). The calling thread runs what numbers strings and lines, in file order; what
does not (the args' gathering and mapping, the flow points' identities and chains) runs on
other threads beside it, in memory. The mapping from phases to events is ``chrome_trace.py``'s
module docstring.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any

import numpy as np

from tbprof._core import chrome_pass, jsonscan, kernels
from tbprof._core.kernels import run_parts
from tbprof._core.wire import default_threads
from tbprof.cache.memory_guard import release_free_memory
from tbprof.errors import ProfileReadError
from tbprof.readers.chrome_args import ArgStats
from tbprof.readers.chrome_columns import SCANNER_EVENT_COLUMNS, MemoryWork, StatSink, Work, chunks
from tbprof.readers.chrome_events import MAX_ABS_TS_US, MAX_SPAN_PS, MAX_SPAN_US
from tbprof.readers.chrome_scan import Scan
from tbprof.readers.chrome_tokens import (
    GLOBAL,
    MISSING,
    LongNumber,
    Tokens,
    TokenTable,
    field_of,
    lut,
    lut_table,
)
from tbprof.readers.chrome_tracks import Tracks
from tbprof.readers.plane_collected import Collected, Layout, build_planes
from tbprof.readers.plane_flows import bind_flows, chains
from tbprof.store import tables
from tbprof.store.arrays import sorted_unique
from tbprof.store.strings import StringTable

FORMAT = "chrome_trace"
_PS_PER_US = 1_000_000
_NO_TIME = jsonscan.TIME_MISSING  # a ts or dur that is absent, not a number or beyond the limits


def _where(codes: np.ndarray, code: int, step: int) -> np.ndarray:
    """Indices of the events of phase code ``code``, found a chunk at a time."""
    parts = [lo + np.flatnonzero(codes[lo:hi] == code) for lo, hi in chunks(codes.shape[0], step)]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


# Phase codes of the reader (the scanner gives each event's phase as a token).
_PH_NONE, _PH_X, _PH_BE, _PH_INSTANT, _PH_C, _PH_OBJECT, _PH_FLOW, _PH_M, _PH_OTHER = range(9)
_PHASE_CODES = {"X": _PH_X, "B": _PH_BE, "E": _PH_BE, "i": _PH_INSTANT, "I": _PH_INSTANT, "R": _PH_INSTANT,
                "C": _PH_C, "N": _PH_OBJECT, "O": _PH_OBJECT, "D": _PH_OBJECT, "s": _PH_FLOW, "t": _PH_FLOW,
                "f": _PH_FLOW, "M": _PH_M, "": _PH_NONE}


# Anonymous bytes per row of the steps that hold whole columns even when streaming: events of the
# phases read whole (begin/end, instants, counters, objects: indices, times, lines, names and
# their sorts), every flow point's index, (cat, id) keys and part while the parts are bound.
_BYTES_PER_WHOLE_EVENT = 128
_BYTES_PER_FLOW_KEY = 48
# Fewer flow points than this are prepared on the calling thread (a thread costs more than it saves).
_FLOWS_AHEAD_MIN_POINTS = 1 << 14


class Collector:
    """Collects a trace's events from the scanner's columns and builds its store with the plane
    builder: numpy over all events, Python once per distinct token, thread or object."""

    def __init__(self, source: str, host: str, work: Work | None = None) -> None:
        self.source = source
        self.host = host
        self.work: Work = work if work is not None else MemoryWork()
        self.strings = StringTable()
        self.warnings: list[str] = []
        self.tracks = Tracks()
        # Event columns in collection order (start: picoseconds from the earliest event).
        self.ev_line = self.work.sink("ev_line", np.int64)
        self.ev_start = self.work.sink("ev_start_ps", np.int64)
        self.ev_dur = self.work.sink("ev_dur_ps", np.int64)
        self.ev_name = self.work.sink("ev_name", np.int32)
        self.ev_cat = self.work.sink("ev_cat", np.int32)
        self.n_events = 0
        # Stats: (event index in collection order, stat name id, kind, value).
        self.st_rows = StatSink(self.work)
        self.t0 = (0, 0)  # the earliest kept event's (whole µs, picoseconds above them)
        self.trace_end_ps = 0
        self.tok = Tokens([])
        self.n_tokens = 0
        self.int_flag = np.zeros(0, np.uint8)  # per token: an integer that fits int64 (value below)
        self.int_value = np.zeros(0, np.int64)
        self.cols: dict[str, np.ndarray] = {}
        self.args = ArgStats(self.work, {}, self.st_rows, TokenTable(int, np.int32, 0), TokenTable(int, np.int64, 0))

    def _drop_tokens(self) -> None:
        """Frees the scanner's token table and the per-token tables once no token is converted
        any more. The args' token tables call back into this collector (a reference cycle that
        only the cyclic collector would free, and a one-shot command may never run it): they go
        here, so the table is freed when the last reference goes."""
        self.tok = Tokens([])
        self.int_flag = np.zeros(0, np.uint8)
        self.int_value = np.zeros(0, np.int64)
        self.args = ArgStats(self.work, {}, self.st_rows, TokenTable(int, np.int32, 0), TokenTable(int, np.int64, 0))

    # --- helpers ---------------------------------------------------------------------------
    def _warn(self, count: int, what: str) -> None:
        if count:
            self.warnings.append(f"{count} {what}")

    def _lines(self, pid_tok: np.ndarray, tid_tok: np.ndarray) -> np.ndarray:
        """Line index of each (pid, tid) token pair: ``_line`` once per distinct pair, in the
        order the pairs first appear."""
        if pid_tok.shape[0] == 0:
            return np.zeros(0, np.int64)
        pair, pids, tids = chrome_pass.first_pairs(pid_tok, tid_tok)  # numbered as they first appear
        mapping = np.zeros(pids.shape[0], dtype=np.int64)
        for u, (p, t) in enumerate(zip(pids.tolist(), tids.tolist(), strict=True)):
            tid = "Global" if t == GLOBAL else self.tok.value(t)
            mapping[u] = self.tracks.line(self.tok.value(p), tid)
        return mapping[pair]

    def key_ids(self, toks: np.ndarray) -> np.ndarray:
        """One id per distinct identity of the token ids ``toks``, as a dict keyed by the values
        would give (``1``, ``1.0`` and ``true`` are one key): integer tokens are numbered in
        bulk, the others one by one in Python."""
        if toks.shape[0] == 0:
            return np.zeros(0, np.int64)
        mask = np.zeros(self.n_tokens + 3, dtype=np.bool_)
        mask[toks + 3] = True
        used = np.flatnonzero(mask) - 3
        flag = np.zeros(used.shape[0], dtype=np.bool_)
        real = used >= 0
        flag[real] = self.int_flag[used[real]] == 1
        ints = sorted_unique(self.int_value[used[flag]])
        table = np.zeros(self.n_tokens + 3, dtype=np.int64)
        table[used[flag] + 3] = np.searchsorted(ints, self.int_value[used[flag]])
        others: dict[Hashable, int] = {}
        for t in used[~flag].tolist():
            key = self.tok.key(t)
            if isinstance(key, int) or (isinstance(key, float) and key.is_integer()):  # floats here are finite
                as_int = int(key)
                at = int(np.searchsorted(ints, as_int)) if -(1 << 63) <= as_int < (1 << 63) else ints.shape[0]
                if at < ints.shape[0] and int(ints[at]) == as_int:
                    table[t + 3] = at
                    continue
                key = as_int
            table[t + 3] = ints.shape[0] + others.setdefault(key, len(others))
        return table[toks + 3]

    def _name_ids(self, toks: np.ndarray) -> np.ndarray:
        return lut(toks, lambda t: self.strings.intern(self.tok.text(t)), np.int32, self.n_tokens)

    def _cat_id(self, t: int) -> int:
        v = self.tok.value(t)
        return 0 if v is None else self.strings.intern(v if isinstance(v, str) else str(v))

    def cat_ids(self, toks: np.ndarray) -> np.ndarray:
        return lut(toks, self._cat_id, np.int32, self.n_tokens)

    def start_ps_of(self, idx: np.ndarray) -> np.ndarray:
        """The exact picoseconds of events ``idx`` (timed, not metadata) from the earliest one;
        they fit int64: the events span at most MAX_SPAN_US."""
        c = self.cols
        t0_us, t0_sub = self.t0
        return (c["ts_us"][idx] - np.int64(t0_us)) * _PS_PER_US + (c["ts_sub_ps"][idx].astype(np.int64) - t0_sub)

    def _append(self, line: np.ndarray, ts: np.ndarray, dur: np.ndarray, name_id: np.ndarray,
                cat_id: np.ndarray) -> int:
        first = self.n_events
        self.ev_line.append(line.astype(np.int64))
        self.ev_start.append(ts)
        self.ev_dur.append(dur)
        self.ev_name.append(name_id.astype(np.int32))
        self.ev_cat.append(cat_id.astype(np.int32))
        self.n_events += line.shape[0]
        return first

    def _append_events(self, idx: np.ndarray, line: np.ndarray, ts: np.ndarray, dur: np.ndarray) -> int:
        c = self.cols
        return self._append(line, ts, dur, self._name_ids(c["name"][idx]), self.cat_ids(c["cat"][idx]))

    # --- the pass --------------------------------------------------------------------------
    def build(self, scan: Scan) -> tables.ProfileStore:
        try:
            return self._build(scan)
        except LongNumber as e:
            if e.token != MISSING:
                e.field = field_of(self.cols, e.token)
            raise
        finally:
            self._drop_tokens()

    def _build(self, scan: Scan) -> tables.ProfileStore:
        # The builder owns the scan's columns and token table now and drops each when done with it.
        c = self.cols = scan.cols
        self.tok = Tokens(scan.tokens)
        self.n_tokens = len(scan.tokens)
        self.int_flag, self.int_value = scan.int_flag, scan.int_value
        scan.release()
        # Args keys and text values -> string ids.
        self.args = ArgStats(self.work, c, self.st_rows,
                             TokenTable(lambda t: self.strings.intern(self.tok.text(t)), np.int32, self.n_tokens),
                             TokenTable(lambda t: self.strings.intern(self.tok.canonical(t)), np.int64, self.n_tokens))
        n = c["ph"].shape[0]
        step = self.work.chunk_events
        self.work.check(n, f"the phases of {n:,} events")
        # Phases: the phase token's code (-1 absent or null, -2 not a string).
        ph_tok = c["ph"]
        ph_table = lut_table((ph_tok[lo:hi] for lo, hi in chunks(n, step)),
                              lambda t: _PH_NONE if t < 0 else _PHASE_CODES.get(self.tok.value(t), _PH_OTHER),
                              np.int8, self.n_tokens)
        # Phase codes, the phases' counts and the numbers' limits (the rules of chrome_events.py):
        # a ts or dur beyond them reads as absent; then the span of the timed events, the earliest
        # and the latest kept one (a phase shown) by (whole µs, picoseconds above them).
        codes = np.empty(n, np.int8)
        not_str = no_phase = 0
        other_counts = np.zeros(self.n_tokens, np.int64)
        ts, ts_sub, dur = c["ts_us"], c["ts_sub_ps"], c["dur_ps"]
        lo_us: float = math.inf
        hi_us: float = -math.inf
        t0: tuple[int, int] | None = None
        end: tuple[int, int] | None = None
        for lo, hi in chunks(n, step):
            (bad_ph, no_ph, any_timed, first_us, last_us, any_kept, t0_us, t0_sub, end_us,
             end_sub) = chrome_pass.phase_pass(ph_tok[lo:hi], ph_table, c["flags"][lo:hi], ts[lo:hi], ts_sub[lo:hi],
                                               dur[lo:hi], codes[lo:hi], other_counts, jsonscan.FLAG_EMPTY,
                                               _PH_NONE, _PH_M, _PH_OTHER, _NO_TIME, MAX_ABS_TS_US, MAX_SPAN_PS)
            not_str += bad_ph
            no_phase += no_ph
            if any_timed:
                lo_us, hi_us = min(lo_us, first_us), max(hi_us, last_us)
            if any_kept:
                t0 = (t0_us, t0_sub) if t0 is None else min(t0, (t0_us, t0_sub))
                end = (end_us, end_sub) if end is None else max(end, (end_us, end_sub))
        self._warn(not_str, "events whose phase ('ph') is not a string were ignored")
        self._warn(scan.non_objects, "trace entries that are not JSON objects were ignored")
        self._warn(no_phase, "events without a phase ('ph') were ignored")
        for ph, k in sorted((self.tok.value(t), int(other_counts[t])) for t in np.flatnonzero(other_counts).tolist()):
            self._warn(k, f"events of phase {ph!r}, which tbprof does not show, were ignored")
        if hi_us - lo_us > MAX_SPAN_US:
            raise ProfileReadError(self.source, f"the event timestamps span {(hi_us - lo_us) / 86400e6:.0f} days; "
                                   f"tbprof shows traces of up to {MAX_SPAN_US / 86400e6:.0f} days (is a 'ts' in "
                                   "the wrong unit?)")

        self._metadata(_where(codes, _PH_M, step))
        if t0 is None or end is None:
            return self._finish(None)
        # Unclosed slices and objects end where the trace ends: its last timestamp or the
        # end of its last complete event, whichever is later.
        self.t0 = t0
        self.trace_end_ps = (end[0] - t0[0]) * _PS_PER_US + (end[1] - t0[1])

        flows, untimed_flows = self._flow_points(codes)
        del ph_tok, ts, ts_sub, dur
        with ThreadPoolExecutor(max_workers=1) if self._flows_ahead(flows) else nullcontext() as pool:
            return self._collect(codes, flows, untimed_flows, pool)

    def _flow_points(self, codes: np.ndarray) -> tuple[np.ndarray, int]:
        """The rows of the flow points with a numeric ``ts``, and how many have none."""
        flows = _where(codes, _PH_FLOW, self.work.chunk_events)
        self.work.check(_BYTES_PER_FLOW_KEY * flows.shape[0], f"the identities of {flows.shape[0]:,} flow events")
        timed = self.cols["ts_us"][flows] != _NO_TIME
        return flows[timed], int(flows.shape[0] - timed.sum())

    def _flows_ahead(self, flows: np.ndarray) -> bool:
        """Whether the flow points are prepared on a thread while the rows are put in order."""
        return (isinstance(self.work, MemoryWork) and flows.shape[0] >= _FLOWS_AHEAD_MIN_POINTS
                and default_threads() > 1)

    def _collect(self, codes: np.ndarray, flows: np.ndarray, untimed_flows: int,
                 pool: ThreadPoolExecutor | None) -> tables.ProfileStore:
        c, step = self.cols, self.work.chunk_events
        args_of_complete: list[tuple[int, np.ndarray]] = []
        self._events_by_chunk(codes, _PH_X, args_of_complete if isinstance(self.work, MemoryWork) else None)
        if args_of_complete:
            # The complete events (most of a trace) are collected: the scanner's event columns
            # keep only the other events' rows before the complete events' args are read, so that
            # the stat rows made from those args do not come on top of every event's columns.
            codes = self._keep_rows(codes, np.flatnonzero(codes != _PH_X))
            flows = self._flow_points(codes)[0]
            for first, idx in args_of_complete:
                self.args.add_scanner_rows(first, idx)
            del args_of_complete
        for code, handle in ((_PH_BE, self._begin_end), (_PH_INSTANT, None), (_PH_C, self._counters),
                             (_PH_OBJECT, self._objects)):
            if handle is None:
                self._events_by_chunk(codes, code)
                continue
            idx = _where(codes, code, step)
            self.work.check(_BYTES_PER_WHOLE_EVENT * idx.shape[0], f"{idx.shape[0]:,} begin/end, counter or object "
                            "events")
            handle(idx)
        self._warn(untimed_flows, "flow ('s'/'t'/'f') events without a numeric 'ts' were dropped")
        # Every args entry is read now; the flows need only their identity columns.
        for name in ("st_owner", "st_key", "st_kind", "st_value", "dur_ps", "name"):
            if name in c:
                self.work.drop(c.pop(name))
        self.args.drop_bounds()
        del c, codes
        # The flow points' identities, times and chains need no event placed: made on ``pool``'s
        # thread while the rows are put in store order, bound once they are. Not earlier: beside
        # the events' collection their temporaries would add to its peak of memory.
        prepared = pool.submit(_FlowTimes, self, flows, True) if pool is not None and flows.shape[0] else None
        return self._finish((flows, prepared) if flows.shape[0] else None)

    def _keep_rows(self, codes: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """The scanner's event columns reduced to the events ``keep`` (ascending); their phase
        codes. The args read on through their events' rows in the scanner's stat columns
        (``ArgStats.renumber``)."""
        self.args.renumber(keep)
        c = self.cols
        kept = {name: np.empty(keep.shape[0], c[name].dtype) for name, _ in SCANNER_EVENT_COLUMNS if name in c}
        kept_codes = np.empty(keep.shape[0], codes.dtype)
        gathers = [(c[name], out) for name, out in kept.items()] + [(codes, kept_codes)]
        # On threads (numpy's take releases the GIL), a few columns to each.
        threads = max(1, min(default_threads(), len(gathers)))
        run_parts(_take_rows, [(keep, gathers[k::threads]) for k in range(threads)], name="tbprof-json-keep")
        del gathers
        c.update(kept)
        return kept_codes

    def _metadata(self, meta: np.ndarray) -> None:
        c, tok = self.cols, self.tok
        for i in meta.tolist():
            args: dict[str, Any] = {}
            for r in self.args.rows_of(np.array([i]))[0].tolist():
                kind, value = int(c["st_kind"][r]), int(c["st_value"][r])
                v: Any = value
                if kind == tables.KIND_NONE:
                    v = None
                elif kind == tables.KIND_DOUBLE:
                    v = float(np.int64(value).view(np.float64))
                elif kind == tables.KIND_UINT64:
                    v = value + (1 << 64)
                elif kind in (tables.KIND_STR, jsonscan.KIND_JSON):
                    v = tok.canonical(value)
                args[tok.text(int(c["st_key"][r]))] = v
            pid = tok.key(int(c["pid"][i]))
            tid = tok.key(int(c["tid"][i]))
            name = tok.value(int(c["name"][i]))
            if name == "process_name" and "name" in args:
                self.tracks.process_names[pid] = str(args["name"])
            elif name == "process_labels" and "labels" in args:
                self.tracks.process_labels[pid] = str(args["labels"])
            elif name == "process_sort_index" and isinstance(args.get("sort_index"), (int, float)):
                self.tracks.process_sort[pid] = float(args["sort_index"])
            elif name == "thread_name" and "name" in args:
                self.tracks.thread_names[(pid, tid)] = str(args["name"])
            elif name == "thread_sort_index" and isinstance(args.get("sort_index"), (int, float)):
                self.tracks.thread_sort[(pid, tid)] = float(args["sort_index"])

    def _timed(self, idx: np.ndarray, what: str) -> np.ndarray:
        ok = self.cols["ts_us"][idx] != _NO_TIME
        if not ok.all():
            self._warn(int((~ok).sum()), f"{what} without a numeric 'ts' were dropped")
            idx = idx[ok]
        return idx

    def _events_by_chunk(self, codes: np.ndarray, ph_code: int,
                         args_later: list[tuple[int, np.ndarray]] | None = None) -> None:
        """The ``X`` (complete) or the instant events, a chunk at a time: each is one event of its
        thread (a global instant: of the global track), its args its stats (read by the caller
        when ``args_later`` is given: the first collected event and the rows of each chunk)."""
        c = self.cols
        step = self.work.chunk_events
        n = codes.shape[0]
        complete = ph_code == _PH_X
        dropped_ts = dropped_dur = too_long = 0
        t0_us, t0_sub = self.t0

        def kept(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, int, int, int, bool, int]:
            # The rows of the phase that are timed and, complete events, of a duration >= 0 that
            # ends within the span limit (a start is at least the earliest event's, so such an
            # end fits int64 picoseconds); their starts; the counts dropped; the latest end.
            return chrome_pass.kept_events(codes, ph_code, c["ts_us"], c["ts_sub_ps"], c["dur_ps"], lo, hi, t0_us,
                                           t0_sub, _NO_TIME, complete, MAX_SPAN_PS)

        # Names and categories are interned first, over every kept event in token order (as one
        # pass over all of them would), then the chunks' args. In memory (one chunk) the rows
        # found for the tables are the loop's.
        whole = [kept(0, n)] if step >= n else None

        def tokens_of(col: str) -> Iterator[np.ndarray]:
            if whole is not None:
                yield c[col][whole[0][0]]
                return
            for lo, hi in chunks(n, step):
                yield c[col][kept(lo, hi)[0]]

        name_table = lut_table(tokens_of("name"), lambda t: self.strings.intern(self.tok.text(t)), np.int32,
                                self.n_tokens)
        cat_table = lut_table(tokens_of("cat"), self._cat_id, np.int32, self.n_tokens)
        for lo, hi in chunks(n, step):
            idx, ts, no_ts, negative, late, any_end, end_ps = whole.pop() if whole else kept(lo, hi)
            dropped_ts += no_ts
            dropped_dur += negative
            too_long += late
            if not idx.shape[0]:
                continue
            if complete:
                dur = c["dur_ps"][idx]
                if any_end:
                    self.trace_end_ps = max(self.trace_end_ps, end_ps)
                line = self._lines(c["pid"][idx], c["tid"][idx])
            else:
                dur = np.zeros(ts.shape[0], np.int64)
                # Global-scope instants ("s": "g") belong to no thread: chrome://tracing draws
                # them across the whole trace; here they get a track of their own.
                is_global = (c["flags"][idx] & jsonscan.FLAG_SCOPE_G) != 0
                line = self._lines(np.where(is_global, GLOBAL, c["pid"][idx]).astype(np.int32),
                                   np.where(is_global, GLOBAL, c["tid"][idx]).astype(np.int32))
            first = self._append(line, ts, dur, name_table[c["name"][idx] + 3], cat_table[c["cat"][idx] + 3])
            if args_later is not None:
                args_later.append((first, idx))
            else:
                self.args.add(first, idx)
        what = "complete ('X') events" if complete else "instant ('i') events"
        self._warn(dropped_ts, f"{what} without a numeric 'ts' were dropped")
        if complete:
            self._warn(dropped_dur, "complete ('X') events with a negative or non-numeric 'dur' were dropped")
            self._warn(too_long, f"complete ('X') events ending more than {MAX_SPAN_US / 86400e6:.0f} days after the "
                       "trace's first event were dropped")

    def _begin_end(self, idx: np.ndarray) -> None:
        if not idx.shape[0]:
            return
        c = self.cols
        idx = self._timed(idx, "begin/end ('B'/'E') events")
        ts = self.start_ps_of(idx)
        line = self._lines(c["pid"][idx], c["tid"][idx])
        is_begin = lut(c["ph"][idx], lambda t: t >= 0 and self.tok.value(t) == "B", np.bool_, self.n_tokens)
        # Time order per thread, ties in file order (an E and the next B at one timestamp).
        order = np.lexsort((np.arange(idx.shape[0]), ts, line))
        partner_sorted = kernels.match_begin_end(line[order], is_begin[order])
        partner = np.full(idx.shape[0], -1, dtype=np.int64)
        matched = partner_sorted >= 0
        partner[order[matched]] = order[partner_sorted[matched]]
        b_idx = np.flatnonzero(is_begin)
        b_partner = partner[b_idx]
        self._warn(int((partner[~is_begin] < 0).sum()),
                   "end ('E') events without an open begin on their thread were dropped")
        unclosed = b_partner < 0
        self._warn(int(unclosed.sum()), "begin ('B') events were never ended; they run to the end of the trace")
        b_ts = ts[b_idx]
        end = np.where(unclosed, self.trace_end_ps, ts[np.maximum(b_partner, 0)])
        dur = np.maximum(end - b_ts, 0)
        first = self._append_events(idx[b_idx], line[b_idx], b_ts, dur)
        self.args.add(first, idx[b_idx])
        # The E's args complete the slice's (chrome://tracing merges them the same way).
        closed = np.flatnonzero(~unclosed)
        self.args.add_to(first + closed, idx[b_partner[closed]])

    def _counters(self, idx: np.ndarray) -> None:
        if not idx.shape[0]:
            return
        c, tok = self.cols, self.tok
        idx = self._timed(idx, "counter ('C') events")
        # One line per (pid, name[, id]): the name with the id is the line's and the events' name.
        pid_name = (c["pid"][idx].astype(np.int64) + 3) * (self.n_tokens + 3) + c["name"][idx] + 3
        pid_name = np.unique(pid_name, return_inverse=True)[1].reshape(-1)  # dense: the next product fits
        code = pid_name * (self.n_tokens + 3) + c["id"][idx] + 3
        uniq, first_at, inv = np.unique(code, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        line_of = np.zeros(uniq.shape[0], np.int64)
        name_of = np.zeros(uniq.shape[0], np.int32)
        for u in np.argsort(first_at, kind="stable").tolist():
            i = int(idx[int(first_at[u])])
            ident = tok.value(int(c["id"][i]))
            name = str(tok.value(int(c["name"][i])) if int(c["name"][i]) != MISSING else "") + \
                (f" {ident}" if ident is not None else "")
            line_of[u] = self.tracks.line(tok.value(int(c["pid"][i])), name, "counter")
            name_of[u] = self.strings.intern(name)
        line = line_of[inv]
        self.tracks.counter_lines.update(sorted_unique(line).tolist())
        ts = self.start_ps_of(idx)
        first = self._append(line, ts, np.zeros(ts.shape[0], np.int64), name_of[inv], self.cat_ids(c["cat"][idx]))
        self.args.add(first, idx)

    def _objects(self, idx: np.ndarray) -> None:
        """Object events (N create, O snapshot, D delete) as one event per object lifetime."""
        if not idx.shape[0]:
            return
        c, tok = self.cols, self.tok
        idx = self._timed(idx, "object ('N'/'O'/'D') events")
        ts = self.start_ps_of(idx)
        phases = [tok.value(int(t)) for t in c["ph"][idx].tolist()]
        order = np.argsort(ts, kind="stable")  # ties keep file order
        alive: dict[tuple[Hashable, Hashable, Hashable], list[Any]] = {}
        done: list[list[Any]] = []
        for k in order.tolist():
            e = int(idx[k])
            key = (tok.key(int(c["pid"][e])), tok.key(int(c["id"][e])), tok.key(int(c["name"][e])))
            ph = phases[k]
            rec = alive.get(key)
            if rec is not None and ph == "N" and rec[4]:
                done.append(alive.pop(key))  # the id is reused by a new object
                rec = None
            if rec is None:
                # creation, start, end, last snapshot, created by an 'N' (a snapshot may
                # precede its 'N' by a microsecond: then the 'N' adopts it)
                alive[key] = [e, int(ts[k]), None, e, ph == "N"]
            elif ph == "N":
                rec[4] = True
            if ph == "O":
                alive[key][3] = e
            elif ph == "D":
                rec = alive.pop(key)
                rec[2] = int(ts[k])
                done.append(rec)
        done.extend(alive.values())
        made = np.array([r[0] for r in done], dtype=np.int64)
        start = np.array([r[1] for r in done], dtype=np.int64)
        end = np.array([r[2] if r[2] is not None else self.trace_end_ps for r in done], dtype=np.int64)
        line = self._lines(c["pid"][made], c["tid"][made])
        first = self._append_events(made, line, start, end - start)
        self.args.add_to(first + np.arange(len(done)), np.array([r[3] for r in done], dtype=np.int64))

    # --- assembling planes -----------------------------------------------------------------

    # --- to the plane builder ------------------------------------------------------------
    def _finish(self, flows: tuple[np.ndarray, Future[_FlowTimes] | None] | None) -> tables.ProfileStore:
        """The store of the events collected; ``flows``: the flow points and their times being
        prepared (or None), bound once the rows are in store order."""
        work, step = self.work, self.work.chunk_events
        release_free_memory()  # the passes' temporaries, freed into the C heap, before the planes
        n = self.n_events
        start_ps, dur_ps = self.ev_start.done(), self.ev_dur.done()
        span_ps = 0
        for lo, hi in chunks(n, step):
            if hi > lo:
                span_ps = max(span_ps, int((start_ps[lo:hi] + dur_ps[lo:hi]).max()))
        origin_ps = self.t0[0] * _PS_PER_US + self.t0[1] if n else 0
        pids, plane_lines = self.tracks.planes()
        events = Collected(start_ps, dur_ps, self.ev_line.done(), self.ev_name.done(), self.ev_cat.done(),
                           self.st_rows)
        del start_ps, dur_ps

        def bind(layout: Layout) -> None:
            if flows is not None:
                unbound = bind_flows(_Flows(self, *flows), layout, work, self.strings, self.st_rows)
                self._warn(unbound, "flow points that bind to no slice of their thread were dropped")
            work.drop(*self.cols.values())
            self.cols = {}
            self._drop_tokens()  # every token is converted: the scanner's table goes before the stats are placed

        planes = build_planes(work, events, plane_lines, self.tracks.heads(pids, plane_lines), self.strings, bind)
        return tables.ProfileStore(source_path=self.source, host=self.host, format=FORMAT, strings=self.strings,
                                   planes=planes, origin_ps=origin_ps, span_ps=span_ps, warnings=self.warnings)


def _take_rows(rows: np.ndarray, gathers: list[tuple[np.ndarray, np.ndarray]]) -> None:
    for values, out in gathers:
        np.take(values, rows, out=out)


# A flow point's phase as a small code: a start ("s") and a finish ("f"); a step ("t") is 0.
_FLOW_S, _FLOW_F = 1, 2
_FLOW_PHASES = {"s": _FLOW_S, "f": _FLOW_F}


class _FlowTimes:
    """Flow points ``idx``'s identities (``cat_key``, ``id_key``: ``Collector.key_ids``), times,
    kinds and, ``chained``, their chains (``plane_flows.chains``): all the binding needs but
    their threads' lines (known once every event is collected). Safe on a thread beside the
    collecting one: it reads the scanner's columns and the token table, and interns nothing."""

    def __init__(self, collector: Collector, idx: np.ndarray, chained: bool) -> None:
        cols, tok = collector.cols, collector.tok
        ident_tok = np.where(cols["id"][idx] != MISSING, cols["id"][idx], cols["bind_id"][idx])
        self.cat_key = collector.key_ids(cols["cat"][idx])
        self.id_key = collector.key_ids(ident_tok)
        del ident_tok
        self.point_ps = collector.start_ps_of(idx)
        phase = lut(cols["ph"][idx], lambda t: _FLOW_PHASES.get(tok.value(t), 0) if t >= 0 else 0, np.int8,
                    collector.n_tokens)
        self.is_next = (phase == _FLOW_F) & ((cols["flags"][idx] & jsonscan.FLAG_BP_E) == 0)
        self.is_start = phase == _FLOW_S
        self.chains = chains(self.cat_key, self.id_key, self.point_ps, self.is_start) if chained else None


class _Flows:
    """The trace's flow points (``s``/``t``/``f`` events ``idx``) as ``plane_flows`` reads them;
    ``prepared``: their ``_FlowTimes`` being made on another thread (None: made here)."""

    def __init__(self, collector: Collector, idx: np.ndarray, prepared: Future[_FlowTimes] | None) -> None:
        self.c = collector
        self.idx = idx
        self.times = prepared.result() if prepared is not None else _FlowTimes(collector, idx, False)
        self.cat_key = self.times.cat_key
        self.id_key = self.times.id_key
        self.known_chains = self.times.chains

    def where(self, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        c, cols, tok, times = self.c, self.c.cols, self.c.tok, self.times
        flows = self.idx[sel]
        # Points on threads that have no slices cannot bind.
        pair, pids, tids = chrome_pass.first_pairs(cols["pid"][flows], cols["tid"][flows])
        line_of = np.array([c.tracks.line_keys.get((tok.key(p), tok.key(t), "thread"), -1)
                            for p, t in zip(pids.tolist(), tids.tolist(), strict=True)], dtype=np.int64)
        return line_of[pair], times.point_ps[sel], times.is_next[sel], times.is_start[sel]

    def categories(self, sel: np.ndarray) -> np.ndarray:
        return self.c.cat_ids(self.c.cols["cat"][self.idx[sel]])
