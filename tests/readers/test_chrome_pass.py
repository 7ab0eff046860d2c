"""The Chrome reader's compiled passes (``_core/chrome_pass.pyx``) give what the numpy passes they
stand for give, written out here as their definition: the phase codes, counts and number limits
of every event, the kept rows of a phase with their starts, and the distinct (pid, tid) pairs
numbered as they first appear. Columns are random, with the scanner's special token ids (-1
absent, -2 not a string, -3 the global track) and times beyond the limits mixed in."""

from __future__ import annotations

import numpy as np
import pytest

from tbprof._core import chrome_pass, jsonscan
from tbprof.readers.chrome_events import MAX_ABS_TS_US, MAX_SPAN_PS

_NO_TIME = jsonscan.TIME_MISSING
_NONE, _X, _I, _M, _OTHER = 0, 1, 3, 7, 8  # chrome_collect's phase codes used here


def _columns(seed: int, n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    ts = rng.integers(1_000, 1_050, n).astype(np.int64)
    special = rng.integers(0, 12, n)
    ts[special == 0] = _NO_TIME
    ts[special == 1] = MAX_ABS_TS_US + 1
    ts[special == 2] = -MAX_ABS_TS_US - 5
    dur = rng.integers(-3, 5_000_000, n).astype(np.int64)
    dur[special == 3] = _NO_TIME
    dur[special == 4] = MAX_SPAN_PS + 1
    dur[special == 5] = MAX_SPAN_PS - 10  # within the limit, but ends past the span
    return {"ph": rng.integers(-2, 6, n).astype(np.int32), "ts_us": ts,
            "ts_sub_ps": rng.integers(0, 1_000_000, n).astype(np.int32), "dur_ps": dur,
            "flags": rng.integers(0, 4, n).astype(np.uint8) * np.uint8(jsonscan.FLAG_EMPTY)}


# Token id -> phase code at id + 3: -2 (not a string) and -1 (absent) read as no phase.
_TABLE = np.array([_NONE, _NONE, _NONE, _X, _I, _M, _OTHER, _OTHER, _X, _I], np.int8)


def _phase_reference(c: dict[str, np.ndarray], n_tokens: int) -> tuple[tuple[object, ...], np.ndarray, np.ndarray]:
    tok = c["ph"]
    code = _TABLE[tok + 3]
    ts, dur = c["ts_us"].copy(), c["dur_ps"].copy()
    ts[(ts < -MAX_ABS_TS_US) | (ts > MAX_ABS_TS_US)] = _NO_TIME
    dur[(dur < -MAX_SPAN_PS) | (dur > MAX_SPAN_PS)] = _NO_TIME
    finite = ts != _NO_TIME
    empty = (c["flags"] & jsonscan.FLAG_EMPTY) != 0
    timed = ts[(code != _M) & finite]
    kept = (code != _NONE) & (code != _M) & (code != _OTHER) & finite
    pairs = sorted(zip(ts[kept].tolist(), c["ts_sub_ps"][kept].tolist(), strict=True))
    other = np.bincount(tok[code == _OTHER], minlength=n_tokens)
    want = (int((tok == -2).sum()), int(((code == _NONE) & ~empty).sum()), timed.shape[0] > 0,
            int(timed.min()) if timed.shape[0] else 0, int(timed.max()) if timed.shape[0] else 0, bool(pairs),
            *(pairs[0] if pairs else (0, 0)), *(pairs[-1] if pairs else (0, 0)))
    return want, np.stack([ts, dur]), other


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [0, 1, 3000])
def test_phase_pass_is_the_numpy_passes(seed: int, n: int) -> None:
    c = _columns(seed, n)
    n_tokens = _TABLE.shape[0] - 3
    want, want_times, want_other = _phase_reference(c, n_tokens)
    codes = np.empty(n, np.int8)
    other = np.zeros(n_tokens, np.int64)
    got = chrome_pass.phase_pass(c["ph"], _TABLE, c["flags"], c["ts_us"], c["ts_sub_ps"], c["dur_ps"], codes, other,
                                 jsonscan.FLAG_EMPTY, _NONE, _M, _OTHER, _NO_TIME, MAX_ABS_TS_US, MAX_SPAN_PS)
    assert tuple(got) == want
    assert np.array_equal(codes, _TABLE[c["ph"] + 3])
    assert np.array_equal(np.stack([c["ts_us"], c["dur_ps"]]), want_times)  # the limits applied in place
    assert np.array_equal(other, want_other)


def _kept_reference(c: dict[str, np.ndarray], codes: np.ndarray, ph: int, lo: int, hi: int, t0: tuple[int, int],
                    complete: bool) -> tuple[np.ndarray, np.ndarray, int, int, int, bool, int]:
    def start_of(idx: np.ndarray) -> np.ndarray:
        return (c["ts_us"][idx] - t0[0]) * 1_000_000 + (c["ts_sub_ps"][idx].astype(np.int64) - t0[1])

    idx = lo + np.flatnonzero(codes[lo:hi] == ph)
    ok = c["ts_us"][idx] != _NO_TIME
    no_ts, idx = int((~ok).sum()), idx[ok]
    negative = late = 0
    end = (False, 0)
    if complete:
        bad = c["dur_ps"][idx] < 0
        negative, idx = int(bad.sum()), idx[~bad]
        bad = ~(c["dur_ps"][idx] <= MAX_SPAN_PS - start_of(idx))
        late, idx = int(bad.sum()), idx[~bad]
        if idx.shape[0]:
            end = (True, int((start_of(idx) + c["dur_ps"][idx]).max()))
    return idx, start_of(idx), no_ts, negative, late, *end


@pytest.mark.parametrize("complete", [True, False], ids=["complete", "instant"])
@pytest.mark.parametrize(("lo", "hi"), [(0, 3000), (17, 2100), (5, 5)])
def test_kept_events_are_the_numpy_filters(complete: bool, lo: int, hi: int) -> None:
    c = _columns(7, 3000)
    codes = np.empty(3000, np.int8)
    _, _, _, _, _, _, *t0, _, _ = chrome_pass.phase_pass(
        c["ph"], _TABLE, c["flags"], c["ts_us"], c["ts_sub_ps"], c["dur_ps"], codes, np.zeros(7, np.int64),
        jsonscan.FLAG_EMPTY, _NONE, _M, _OTHER, _NO_TIME, MAX_ABS_TS_US, MAX_SPAN_PS)
    ph = _X if complete else _I
    got = chrome_pass.kept_events(codes, ph, c["ts_us"], c["ts_sub_ps"], c["dur_ps"], lo, hi, t0[0], t0[1], _NO_TIME,
                                  complete, MAX_SPAN_PS)
    want = _kept_reference(c, codes, ph, lo, hi, (t0[0], t0[1]), complete)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert tuple(got[2:]) == tuple(want[2:])
    if complete and hi - lo > 1000:
        assert got[3] > 0 and got[4] > 0  # the negative durations and the late ends were there to drop


def test_kept_events_refuse_rows_out_of_range() -> None:
    c = _columns(0, 10)
    with pytest.raises(ValueError):
        chrome_pass.kept_events(np.zeros(10, np.int8), _X, c["ts_us"], c["ts_sub_ps"], c["dur_ps"], 0, 11, 0, 0,
                                _NO_TIME, True, MAX_SPAN_PS)


@pytest.mark.parametrize(("n_rows", "distinct"), [(0, 1), (1, 1), (5000, 8), (20_000, 9_000)],
                         ids=["none", "one", "few", "many"])
def test_first_pairs_number_the_pairs_as_they_first_appear(n_rows: int, distinct: int) -> None:
    rng = np.random.default_rng(distinct)
    # Token ids from -3 up, as the scanner's columns hold them; -1 with -1 is a pair like any other.
    a = rng.integers(-3, distinct, n_rows).astype(np.int32)
    b = rng.integers(-3, 40, n_rows).astype(np.int32)
    if n_rows > 1:  # runs of one pair (a thread's events together), then the pair again later
        a[n_rows // 3:n_rows // 2] = a[n_rows // 3]
        b[n_rows // 3:n_rows // 2] = b[n_rows // 3]
    pair, pa, pb = chrome_pass.first_pairs(a, b)
    code = (a.astype(np.int64) + 3) * 64 + (b.astype(np.int64) + 3)
    uniq, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    by_appearance = np.argsort(first)
    number = np.empty(uniq.shape[0], np.int64)
    number[by_appearance] = np.arange(uniq.shape[0])
    assert np.array_equal(pair, number[inverse.reshape(-1)])
    assert np.array_equal(pa, a[np.sort(first)]) and np.array_equal(pb, b[np.sort(first)])
    if distinct > 1024:
        assert uniq.shape[0] > 1024  # the table grew past its first size


@pytest.mark.parametrize("threads", [1, 3])
def test_count_owners_adds_the_bincount(threads: int) -> None:
    n = 3 << 16  # three ranges of events with three threads
    rng = np.random.default_rng(threads)
    owner = rng.integers(0, n, 500_000).astype(np.int32)
    per_event = np.arange(n, dtype=np.int64)  # counts already there are added to
    segments = [owner[:1000], owner[1000:1000], owner[1000:]]  # an empty one among them
    chrome_pass.count_owners(segments, per_event, threads)
    assert np.array_equal(per_event, np.arange(n) + np.bincount(owner, minlength=n))


@pytest.mark.parametrize("stray", [-1, 3 << 16])
def test_count_owners_refuse_an_owner_that_is_no_event(stray: int) -> None:
    owner = np.array([0, 5, stray, 7], np.int32)
    with pytest.raises(IndexError):
        chrome_pass.count_owners([np.array([1, 2], np.int32), owner], np.zeros(3 << 16, np.int64), 3)


def test_fill_slots_are_the_prefix_sums_in_store_order() -> None:
    rng = np.random.default_rng(5)
    n = 1000
    per_event = rng.integers(0, 4, n).astype(np.int64)
    order = rng.permutation(n).astype(np.int64)  # row -> event
    plane_bounds = np.array([0, 0, 300, 999, 1000], np.int64)  # an empty plane first
    fill = np.full(n, -1, np.int64)
    bounds = np.zeros(plane_bounds.shape[0], np.int64)
    chrome_pass.fill_slots(order, per_event, fill, plane_bounds, bounds)
    in_order = per_event[order]
    want = np.empty(n, np.int64)
    want[order] = np.cumsum(in_order) - in_order
    assert np.array_equal(fill, want)
    assert bounds.tolist() == [int(in_order[:b].sum()) for b in plane_bounds.tolist()]


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize(("n", "m"), [(0, 0), (1, 0), (1, 4), (7, 3), (1000, 5000), (5000, 1000), (40, 3 << 20),
                                      (5_000_000, 3 << 20)])
def test_owner_bounds_are_the_prefix_sum_of_the_counts(n: int, m: int, threads: int) -> None:
    # (40, 3 << 20): long runs of one owner across the threads' row ranges; (5 M, 3 << 20): events
    # without rows between them.
    owner = np.sort(np.random.default_rng(n + m).integers(0, max(n, 1), m)).astype(np.int32)
    want = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=n)[:n])]).astype(np.int64)
    assert np.array_equal(chrome_pass.owner_bounds(owner, n, threads), want)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("at", [0, 1 << 20, (1 << 20) + 1, (3 << 20) - 1])
@pytest.mark.parametrize("bad", ["descending", "negative", "past_n"])
def test_owner_bounds_refuse_owners_out_of_order_or_range(threads: int, at: int, bad: str) -> None:
    owner = np.repeat(np.arange(3, dtype=np.int32), 1 << 20)  # a row range of its own per thread
    if bad == "descending":  # a 2 then a smaller owner, at ``at``
        at = min(at, owner.shape[0] - 2)
        owner[at:at + 2] = [2, 1 if at == owner.shape[0] - 2 else 0]
    else:
        owner[at] = -1 if bad == "negative" else 3
    with pytest.raises(ValueError, match="ascend"):
        chrome_pass.owner_bounds(owner, 3, threads)


@pytest.mark.parametrize(("n_rows", "n_lines"), [(0, 0), (0, 3), (1, 1), (10_000, 7), (10_000, 5_000)])
def test_line_order_is_the_stable_sort_by_rank(n_rows: int, n_lines: int) -> None:
    rng = np.random.default_rng(n_rows + n_lines)
    line = rng.integers(0, max(n_lines, 1), n_rows).astype(np.int64)
    rank_of_line = rng.permutation(n_lines).astype(np.int64)  # a line's place in display order
    order, per_rank = chrome_pass.line_order(line, rank_of_line, n_lines)
    assert np.array_equal(order, np.argsort(rank_of_line[line], kind="stable"))
    assert np.array_equal(per_rank, np.bincount(rank_of_line[line], minlength=n_lines))


def test_line_order_refuses_a_line_out_of_range() -> None:
    with pytest.raises(IndexError):
        chrome_pass.line_order(np.array([0, 3], np.int64), np.arange(3, dtype=np.int64), 3)
