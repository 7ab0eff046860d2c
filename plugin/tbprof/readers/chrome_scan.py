"""A Chrome trace's bytes into the scanner's columns (``_core/jsonscan.pyx``): window by window on
one scanner, or, for a large local file, in segments on several threads.

Windows: a unit (an event, a top-level value) cut by a window's end is carried into the next,
and one longer than a window is gathered until twice its bytes are there (each doubling scanned
once), up to ``MAX_UNIT_BYTES``: time linear in the file whatever its shape.

Segments (``scan_file``): the file is cut where an event seems to end and the next to begin
(``}`` ``,`` ``{``, whitespace between: ``_boundary``), each segment read and scanned by a scanner
of its own on a thread of its own (``os.pread`` and the scanner's event loop release the GIL),
every scanner but the first started just before an element of the event array
(``Scanner.resume_in_events``). A cut may fall inside a string or a nested value; the scan of the
segment before it decides, as parallel JSON readers do (speculate on a boundary, verify it with
the state of the parse that reaches it): only when that scanner stops exactly at the cut, between
two elements of the event array (``Scanner.between_events``), does the next segment's scan count;
otherwise that scanner goes on through the rest of the file and the later segments' scans are
dropped. So the columns never depend on where the cuts fall. The scanners' token tables are
merged into the first one's (``Scanner.merge_tokens``, on threads: a token gets the id one
scanner would have given it) and their columns moved into one set (``Scanner.columns_into``).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import overload

import numpy as np

from tbprof._core import jsonscan
from tbprof._core.wire import default_threads
from tbprof.cache.memory_guard import available_bytes, check_allocation, release_free_memory, share_heaps
from tbprof.errors import MemoryRefusal, ProfileReadError
from tbprof.readers.byte_sources import LocalFile
from tbprof.readers.chrome_columns import SCANNER_EVENT_COLUMNS, SCANNER_STAT_COLUMNS, Spill

# The scanner sees a window in pieces of this size, so the memory check between pieces is fine-grained.
FEED_BYTES = 1 << 20
# One JSON unit (an event, a top-level value) longer than this is refused: a real one is far shorter.
MAX_UNIT_BYTES = 256 << 20
# Peak memory of the in-memory reader per event and per argument value: the scanner's columns, their
# copy out of it and the builder's first columns (bench/hostile_bench.py; bench/measurements.md).
SCAN_EVENT_BYTES = 96
SCAN_STAT_BYTES = 40
# Per distinct token (name, id, text value) and per byte of its text: the scanner's table and hash
# slots, the token's bytes and str objects, its string-table entry (bench/hostile_bench.py).
SCAN_TOKEN_BYTES = 256
SCAN_TOKEN_TEXT_FACTOR = 3
# Segments: a file of fewer than two of these bytes is scanned on one thread (a thread's start and
# the merge would cost more than they save); a cut is looked for in the first PROBE_BYTES after its
# target offset.
SEGMENT_MIN_BYTES = 8 << 20
# Bytes a segment's scanner reads at once: every segment holds one window (and its heap keeps what
# the last ones left), so a small window keeps many threads' scan within the memory of a few, and
# its bytes in the CPU's caches while they are scanned (bench/measurements.md).
SEGMENT_WINDOW_BYTES = 1 << 20
_PROBE_BYTES = 1 << 20
_MAX_EVENTS = (1 << 31) - 1  # stat owners are int32
# Where one event ends and the next begins, as writers put them (a candidate only: see above).
# Linear: each match attempt runs over one run of whitespace after a '}'.
_CUT = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")


class ScanTokens(Sequence[bytes]):
    """The scanner's token table by id, each token's bytes made when asked for (the reader uses a
    few thousand of a large trace's million tokens: most are ids it reads as integers)."""

    def __init__(self, sc: jsonscan.Scanner) -> None:
        self.sc = sc
        self.n = int(sc.n_tokens)

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, t: int) -> bytes: ...

    @overload
    def __getitem__(self, t: slice) -> Sequence[bytes]: ...

    def __getitem__(self, t: int | slice) -> bytes | Sequence[bytes]:
        if isinstance(t, slice):
            return [self.sc.token(i) for i in range(*t.indices(self.n))]
        return self.sc.token(t)


class Scan:
    """What the scanners found: event and stat columns, the token table, the top-level values."""

    def __init__(self, sc: jsonscan.Scanner, cols: dict[str, np.ndarray] | None = None,
                 top: dict[str, bytes] | None = None, non_objects: int | None = None) -> None:
        sc.drop_index()  # the scan is whole: its tokens are read by id from here on
        self.top_kind = int(sc.top_kind)
        self.trace_events = int(sc.trace_events)
        self.non_objects = int(sc.non_objects) if non_objects is None else non_objects
        self.top: dict[str, bytes] = dict(sc.top) if top is None else top
        self.tokens: Sequence[bytes] = ScanTokens(sc)
        self.int_flag, self.int_value = sc.token_ints(np)
        self.cols: dict[str, np.ndarray] = sc.columns(np) if cols is None else cols

    def release(self) -> None:
        """Drops the columns and the token table (their new owner, the builder, frees them as it
        goes): the scanner's memory is not held until the caller lets go of this scan."""
        self.cols = {}
        self.tokens = ()
        self.int_flag = self.int_value = np.zeros(0, np.int64)


class _Feeder:
    """One scanner fed windows in linear time (see the module docstring), from offset ``base``."""

    def __init__(self, sc: jsonscan.Scanner, source: str, after_piece: Callable[[jsonscan.Scanner], None],
                 base: int = 0) -> None:
        self.sc = sc
        self.source = source
        self.after_piece = after_piece
        self.carry = bytearray()  # bytes of an unfinished unit, and what came after them
        self.base = base  # the offset of carry's first byte
        self.want = 0

    def feed(self, windows: Iterator[bytes]) -> None:
        for chunk in windows:
            buf: bytes | bytearray
            if self.carry:
                self.carry += chunk  # amortised: the unit's bytes are not copied again per window
                if len(self.carry) < self.want:
                    continue
                # A unit that did not end in a window is scanned whole in one piece.
                buf, first_piece = self.carry, len(self.carry) if self.want else FEED_BYTES
            else:
                buf, first_piece = chunk, FEED_BYTES
            used = _feed_window(self.sc, buf, self.base, self.source, self.after_piece, first_piece)
            self.base += used
            if used == 0:
                if len(buf) > MAX_UNIT_BYTES:
                    raise ProfileReadError(self.source, f"one JSON value (an event or a top-level value) is longer "
                                           f"than {MAX_UNIT_BYTES >> 20} MiB")
                self.carry = buf if isinstance(buf, bytearray) else bytearray(buf)
                self.want = min(2 * len(self.carry), MAX_UNIT_BYTES + 1)
            else:
                with memoryview(buf) as view:
                    self.carry = bytearray(view[used:])
                self.want = 0

    def finish(self) -> None:
        """The end of the stream: what is carried must complete the trace."""
        if self.sc.feed(self.carry, self.base, True) < 0:
            scan_error(self.sc, self.source)
        self.carry = bytearray()


def scan(windows: Iterator[bytes], source: str, spill: Spill | None = None) -> Scan:
    """The scan of a stream's windows on one scanner. In memory, the events and stats scanned are
    counted against the memory free at the start, piece by piece; streaming, they are drained to
    the entry's files piece by piece (``Spill.drain``: at its share of the budget)."""
    sc = jsonscan.Scanner()
    avail = available_bytes() if spill is None else None

    def after_piece(sc: jsonscan.Scanner) -> None:
        if spill is not None:
            spill.drain(sc, final=False)
            # The token table stays in memory while streaming: a trace of millions of distinct
            # names is refused by its budget while it is scanned, as the XSpace streaming reader does.
            spill.work.check(token_need_bytes(sc), f"{sc.n_tokens:,} distinct names and values")
        else:
            _check_scanned([sc], source, avail)

    feeder = _Feeder(sc, source, after_piece)
    feeder.feed(windows)
    feeder.finish()
    _check_scanned([sc], source, avail)
    if spill is not None:
        spill.drain(sc, final=True)
        return Scan(sc, spill.columns())
    return Scan(sc)


def _feed_window(sc: jsonscan.Scanner, buf: bytes | bytearray, base: int, source: str,
                 after_piece: Callable[[jsonscan.Scanner], None], first_piece: int) -> int:
    """Feeds ``buf`` in pieces of ``FEED_BYTES`` (the first ``first_piece``; a piece as long as a
    unit needs), calling ``after_piece`` after each; returns the bytes consumed (whole units)."""
    off = 0
    size = first_piece
    with memoryview(buf) as view:
        while off < len(buf):
            end = min(len(buf), off + size)
            piece = view[off:end]
            used = sc.feed(piece, base + off, False)
            piece.release()
            if used < 0:
                scan_error(sc, source)
            off += used
            after_piece(sc)
            if used == 0:
                if end == len(buf):
                    break  # the unit runs on into the next window
                size *= 2
            else:
                size = FEED_BYTES
                if end == len(buf):
                    break  # what is left is the start of a unit: the next window continues it
    return off


def _check_scanned(scanners: list[jsonscan.Scanner], source: str, avail: int | None) -> None:
    """Refuses a file whose events and stats (scanned so far, by every scanner) will not fit in
    ``avail`` bytes: a small gzip of empty events holds one event per 3 bytes of JSON, 19x the
    memory per byte that the guard assumed from the JSON's length."""
    if avail is None:
        return
    n_events = sum(sc.n_events for sc in scanners)
    n_stats = sum(sc.n_stats for sc in scanners)
    need = n_events * SCAN_EVENT_BYTES + n_stats * SCAN_STAT_BYTES + sum(token_need_bytes(sc) for sc in scanners)
    if need > avail:
        n_tokens = sum(sc.n_tokens for sc in scanners)
        check_allocation(source, need, f"{n_events:,} events, {n_stats:,} argument values and {n_tokens:,} "
                         "distinct names and values (so far)")


def token_need_bytes(sc: jsonscan.Scanner) -> int:
    """Memory the token table takes once the reader has it: the scanner's table, each token's
    bytes and string objects and the string table's entry."""
    return sc.n_tokens * SCAN_TOKEN_BYTES + sc.token_bytes * SCAN_TOKEN_TEXT_FACTOR


def scan_error(sc: jsonscan.Scanner, source: str) -> None:
    code, at = int(sc.err_code), int(sc.err_at)
    if code == jsonscan.UTF8_ERROR:
        raise ProfileReadError(source, f"not a Chrome trace: the bytes are not UTF-8 text (at byte {at})")
    if code == jsonscan.DEPTH_ERROR:
        raise ProfileReadError(source, "not a Chrome trace: the JSON is nested too deeply")
    raise ProfileReadError(source, f"not valid JSON: {jsonscan.ERRORS.get(code, 'error')} at byte {at}")


# --- segments on threads -------------------------------------------------------------------------
def segment_threads(size_bytes: int) -> int:
    """Threads worth scanning a file of ``size_bytes`` on: one per ``SEGMENT_MIN_BYTES``, at most
    ``$TBPROF_THREADS`` if set, else the CPUs this process may use up to ``SCAN_MAX_THREADS``."""
    return max(1, min(scan_threads(), size_bytes // SEGMENT_MIN_BYTES))


# The scan's own cap when ``$TBPROF_THREADS`` is unset: above ``default_threads()``'s, since a
# segment's thread costs a window and what its C heap keeps (a few MiB: bench/measurements.md),
# and the scan is the conversion's largest part that shortens with every core.
SCAN_MAX_THREADS = 16


def scan_threads() -> int:
    """``default_threads()`` where ``$TBPROF_THREADS`` says how many; else the CPUs this process
    may use, at most ``SCAN_MAX_THREADS``."""
    threads = default_threads()
    env = os.environ.get("TBPROF_THREADS", "")
    if env.isdigit() and int(env) > 0:  # as default_threads() reads it
        return threads
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        cpus = os.cpu_count() or 1
    return max(threads, min(cpus, SCAN_MAX_THREADS))


def _windows(f: LocalFile, lo: int, hi: int, window_bytes: int) -> Iterator[bytes]:
    pos = lo
    while pos < hi:
        n = min(window_bytes, hi - pos)
        yield f.pread(pos, n)
        pos += n


def _boundary(f: LocalFile, at: int, hi: int) -> int | None:
    """The offset of the first '{' at or after ``at`` (below ``hi``) that follows a '}' and a ','
    (a candidate cut), looked for in the next ``_PROBE_BYTES``; None if there is none."""
    data = f.pread(at, min(_PROBE_BYTES, hi - at))
    m = _CUT.search(data)
    return at + m.end() - 1 if m is not None else None


def _cuts(f: LocalFile, segments: int) -> list[int]:
    """0, the candidate cuts near each 1/segments of the file, its size: increasing, at least
    ``SEGMENT_MIN_BYTES`` apart (fewer cuts where none is found)."""
    cuts = [0]
    for k in range(1, segments):
        at = max(k * f.size // segments, cuts[-1] + SEGMENT_MIN_BYTES)
        if at >= f.size - SEGMENT_MIN_BYTES:
            break
        cut = _boundary(f, at, f.size)
        if cut is not None and cut <= f.size - SEGMENT_MIN_BYTES:
            cuts.append(cut)
    cuts.append(f.size)
    return cuts


def _top_is_array(f: LocalFile) -> bool | None:
    """True for a trace that is a bare event array, False for an object, None otherwise."""
    head = f.pread(0, min(f.size, 4096)).lstrip(b" \t\r\n")
    return True if head[:1] == b"[" else False if head[:1] == b"{" else None


class _Stopped(Exception):
    """Another segment's scan failed: this one ends early."""


def scan_file(f: LocalFile, source: str, threads: int) -> Scan:
    """The scan of a local, uncompressed file in up to ``threads`` segments scanned at once (the
    module docstring says how the result stays the one scanner's), each read in windows of
    ``SEGMENT_WINDOW_BYTES``."""
    window_bytes = SEGMENT_WINDOW_BYTES
    bare = _top_is_array(f)
    cuts = _cuts(f, threads) if bare is not None else [0, f.size]
    if len(cuts) <= 2:
        return scan(_windows(f, 0, f.size, window_bytes), source)
    share_heaps()  # the segments' threads and the builder's after them
    scanners = [jsonscan.Scanner() for _ in cuts[:-1]]
    for sc in scanners[1:]:
        sc.resume_in_events(bool(bare))
    avail = available_bytes()
    stop = threading.Event()

    def after_piece(sc: jsonscan.Scanner) -> None:
        if stop.is_set():
            raise _Stopped()
        _check_scanned(scanners, source, avail)

    feeders = [_Feeder(sc, source, after_piece, base=lo) for sc, lo in zip(scanners, cuts, strict=False)]
    errors: list[ProfileReadError | None] = [None] * len(feeders)
    fatal: list[BaseException] = []  # a refusal (memory) or a failure: every segment stops

    def run(k: int) -> None:
        try:
            feeders[k].feed(_windows(f, cuts[k], cuts[k + 1], window_bytes))
        except MemoryRefusal as e:
            fatal.append(e)
            stop.set()
        except ProfileReadError as e:  # malformed (or a cut inside a string): judged after the join
            errors[k] = e
        except _Stopped:
            pass
        except BaseException as e:
            fatal.append(e)
            stop.set()

    workers = [threading.Thread(target=run, args=(k,), name=f"tbprof-json-scan-{k}", daemon=True)
               for k in range(1, len(feeders))]
    for w in workers:
        w.start()
    run(0)
    for w in workers:
        w.join()
    if fatal:
        raise fatal[0]
    # The segments whose start a verified scan reached: 0..kept.
    kept = 0
    while True:
        error = errors[kept]
        if error is not None:
            raise error
        here = feeders[kept]
        if kept == len(feeders) - 1 or here.carry or not here.sc.between_events or here.base != cuts[kept + 1]:
            break  # the last segment, or the cut was no event boundary: this scanner reads on
        kept += 1
    last = feeders[kept]
    feeders.clear()  # from here on ``scanners`` (and ``last``) hold the only references
    del here, scanners[kept + 1:]
    if kept < len(cuts) - 2:
        last.feed(_windows(f, cuts[kept + 1], f.size, window_bytes))
    last.finish()
    del last
    _check_scanned(scanners, source, avail)
    if any(sc.event_resets for sc in scanners[1:]):
        # A second 'traceEvents' after the cut (the last one wins): read as one scanner would.
        del scanners
        return scan(_windows(f, 0, f.size, window_bytes), source)
    return _merged(scanners, source)


def _merged(scanners: list[jsonscan.Scanner], source: str) -> Scan:
    """One scan of the segments' scanners (in file order): tokens merged into the first's table,
    columns moved into one set, the top-level values and counts combined. Every scanner but the
    first is dropped from ``scanners`` once merged."""
    first = scanners[0]
    n_events = sum(sc.n_events for sc in scanners)
    n_stats = sum(sc.n_stats for sc in scanners)
    if n_events > _MAX_EVENTS:
        raise ProfileReadError(source, f"the trace holds more than {_MAX_EVENTS:,} events, more than tbprof "
                               "reads from one file")
    try:
        remaps = [None, *first.merge_tokens(scanners[1:], np)]
    except ValueError as e:
        raise ProfileReadError(source, f"not valid JSON: {e}") from None
    cols: dict[str, np.ndarray] = {name: np.empty(n_events, dtype) for name, dtype in SCANNER_EVENT_COLUMNS}
    cols.update({name: np.empty(n_stats, dtype) for name, dtype in SCANNER_STAT_COLUMNS})
    top: dict[str, bytes] = {}
    non_objects = 0
    moves = []
    ev_at = st_at = 0
    for sc, remap in zip(scanners, remaps, strict=True):
        top.update(sc.top)  # a key repeated later in the file wins, as json.loads has it
        non_objects += int(sc.non_objects)
        moves.append((sc, ev_at, st_at, remap))
        ev_at, st_at = ev_at + sc.n_events, st_at + sc.n_stats
    # Each scanner moves its columns on a thread of its own (the copy releases the GIL).
    workers = [threading.Thread(target=sc.columns_into, args=(cols, e, s, r), name="tbprof-json-merge")
               for sc, e, s, r in moves[1:]]
    for w in workers:
        w.start()
    first.columns_into(cols, moves[0][1], moves[0][2], None)
    for w in workers:
        w.join()
    # The merged scanners' token tables go too. Their buffers, and the columns' (the smaller ones,
    # under glibc's mmap threshold), were freed into the C heaps of the threads that scanned or
    # moved them: handed back before the builder allocates its own.
    del moves, workers, remaps, sc, remap, scanners[1:]
    release_free_memory()
    return Scan(first, cols, top, non_objects)

