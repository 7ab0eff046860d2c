"""Runs the risky decodes of ``test_wire_fuzz.py`` in a child process, so that a crash fails a
test instead of killing pytest. Reads a JSON job from stdin, prints a JSON report.

Job: {"inputs": [hex, ...], "reader": bool, "compare": bool, "format": "xspace" | "chrome" | "stream",
"windows": [int, ...] (chrome only)}.
A "stream" job writes each input to a file and converts it with the streaming reader
(``readers/xplane_stream.py``, 61-byte windows, so every field lies across a window boundary
somewhere) and with the in-memory reader: both must read it (the same store) or both must
raise ``ProfileReadError``, and a failed stream leaves no cache entry.
A "chrome" job reads each input as a Chrome trace (result or ``ProfileReadError``), and again
with each of its "windows" sizes (same store or same error); with "disk", also built in a disk
cache entry (``readers/chrome_stream.py``, windows of 61 bytes and chunks of 2 rows): the same
store or the same error, and a failed build leaves no entry. For
each XSpace input the child runs
the parallel scan (small chunks, 2 threads, so the join and the fallback are exercised too),
the serial scan, and with "reader" the whole XSpace reader, eager and lazy (every plane's stats
asked for). Accepted outcomes: a result, a
``WireError`` from the scanners, a ``ProfileReadError`` from the reader. With "compare" the
parallel and serial scans must agree (same columns or the same error).
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

import numpy as np

from tbprof._core import wire

COLUMNS = ("spans", "lines", "ev_line", "ev_meta", "ev_start", "ev_dur", "st_owner", "st_meta", "st_kind",
           "st_value", "texts")


def _outcome(fn: Any) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except wire.WireError as e:
        return "wire_error", (e.code, e.offset)


def run_chrome(job: dict[str, Any]) -> dict[str, Any]:
    """Each input read as a Chrome trace; with "windows", read again with each of those window
    sizes (the scanner sees that many bytes at a time): the same store or the same error."""
    from tbprof.errors import ProfileReadError
    from tbprof.readers.chrome_trace import chrome_trace_from_bytes
    from tests.core.chrome_digest import semantic_digest

    counts = {"read_ok": 0, "read_error": 0}
    problems: list[str] = []
    windows: list[int] = job.get("windows", [])
    for i, text in enumerate(job["inputs"]):
        data = bytes.fromhex(text)
        outcomes: list[tuple[str, Any]] = []
        for window in [1 << 24, *windows]:
            try:
                store = chrome_trace_from_bytes(data, "fuzz.trace.json", "fuzz", window_bytes=window)
                outcomes.append(("ok", semantic_digest(store) if windows else None))
            except ProfileReadError as e:
                outcomes.append(("error", e.reason))
            except Exception:
                problems.append(f"input {i} (window {window}): reader raised {traceback.format_exc(limit=4)}")
                break
        else:
            counts["read_ok" if outcomes[0][0] == "ok" else "read_error"] += 1
            if job.get("disk"):
                got = _built_on_disk(data)
                if got[0] == "crash" or got != (outcomes[0][0], outcomes[0][1] if got[0] == "error" else got[1]) \
                        or (got[0] == "ok" and windows and got[1] != outcomes[0][1]):
                    problems.append(f"input {i}: on disk {str(got)[:500]}, in memory {str(outcomes[0])[:300]}")
                    continue
            for window, got in zip(windows, outcomes[1:], strict=True):
                if got != outcomes[0]:
                    problems.append(f"input {i}: window {window} read {str(got)[:300]}, whole {str(outcomes[0])[:300]}")
                    break
    return {"counts": counts, "problems": problems[:20], "n_problems": len(problems)}


def _built_on_disk(data: bytes) -> tuple[str, Any]:
    """("ok", semantic digest), ("error", reason) or ("crash", traceback) of building ``data``'s
    store in a disk cache entry."""
    import os
    import tempfile
    from pathlib import Path

    from tbprof.cache.disk_cache import DiskCache
    from tbprof.errors import ProfileReadError
    from tbprof.readers.chrome_stream import stream_chrome_trace
    from tests.core.chrome_digest import semantic_digest

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "fuzz.trace.json"
        path.write_bytes(data)
        cache = DiskCache(Path(d) / "cache")
        try:
            store = stream_chrome_trace(path, cache, "f" * 32, 1 << 20, host="fuzz", chunk_events=2, window_bytes=61)
            return "ok", semantic_digest(store)
        except ProfileReadError as e:
            stores = Path(d) / "cache" / "stores"
            if stores.exists() and os.listdir(stores):
                return "crash", f"a failed build left {os.listdir(stores)}"
            return "error", e.reason.replace(str(path), "fuzz.trace.json")
        except Exception:
            return "crash", traceback.format_exc(limit=6)


def _scan_beside_read(data: bytes) -> wire.ScanResult:
    """``wire.scan`` of ``data`` written to a file and read by ``wire.FileRead`` meanwhile."""
    import os
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".xplane.pb") as f:
        f.write(data)
        f.flush()
        fd = os.open(f.name, os.O_RDONLY)
        try:
            array = np.empty(len(data), dtype=np.uint8)
            return wire.scan(array, threads=2, chunk_bytes=64, reading=wire.FileRead(fd, array, piece_bytes=7))
        finally:
            os.close(fd)


def _same(a: wire.ScanResult, b: wire.ScanResult) -> bool:
    return a.n_planes == b.n_planes and all(np.array_equal(getattr(a, c), getattr(b, c)) for c in COLUMNS)


def run_stream(job: dict[str, Any]) -> dict[str, Any]:
    import os
    import tempfile
    from pathlib import Path

    from tbprof.cache.disk_cache import DiskCache
    from tbprof.errors import ProfileReadError
    from tbprof.readers.xplane import xspace_from_bytes
    from tbprof.readers.xplane_stream import stream_xspace
    from tests.core.store_digest import store_digest

    counts = {"both_ok": 0, "both_error": 0}
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        disk = DiskCache(Path(tmp) / "cache")
        path = Path(tmp) / "fuzz.xplane.pb"
        for i, text in enumerate(job["inputs"]):
            path.write_bytes(bytes.fromhex(text))
            try:
                want: dict[str, str] | None = store_digest(xspace_from_bytes(path.read_bytes(), str(path), "fuzz"))
            except ProfileReadError:
                want = None
            key = f"k{i}"
            try:
                got: dict[str, str] | None = store_digest(stream_xspace(path, disk, key, 64 << 20, window_bytes=61))
            except ProfileReadError:
                got = None
                if disk.has(key) or [n for n in os.listdir(disk.root / "stores") if n.startswith(".")]:
                    problems.append(f"input {i}: a failed stream left an entry or a temporary folder")
            except Exception:
                problems.append(f"input {i}: the streaming reader raised {traceback.format_exc(limit=4)}")
                continue
            if (want is None) != (got is None):
                problems.append(f"input {i}: in memory {want is not None}, streamed {got is not None} (True: read)")
            elif want is not None and got is not None and want != got:
                differ = [k for k in want if got.get(k) != want[k]]
                problems.append(f"input {i}: the streamed store differs in {differ}")
            else:
                counts["both_ok" if want is not None else "both_error"] += 1
    return {"counts": counts, "problems": problems[:20], "n_problems": len(problems)}


def run(job: dict[str, Any]) -> dict[str, Any]:
    from tbprof.errors import ProfileReadError
    from tbprof.readers.xplane import xspace_from_bytes

    if job.get("format") == "chrome":
        return run_chrome(job)
    if job.get("format") == "stream":
        return run_stream(job)
    counts = {"ok": 0, "wire_error": 0, "read_ok": 0, "read_error": 0}
    problems: list[str] = []
    for i, text in enumerate(job["inputs"]):
        data = bytes.fromhex(text)
        try:
            kind_p, par = _outcome(lambda data=data: wire.scan(data, threads=2, chunk_bytes=64))
            kind_s, ser = _outcome(lambda data=data: wire.scan_serial_py(data))
            kind_b, bes = _outcome(lambda data=data: _scan_beside_read(data))
        except Exception:  # any other exception is a bug: the scanners only raise WireError
            problems.append(f"input {i}: {traceback.format_exc(limit=3)}")
            continue
        counts[kind_s] += 1
        # Events without their stats (``wire.fill_events_chunk``): where the serial scan reads the
        # input, the same event columns.
        try:
            kind_e, evs = _outcome(lambda data=data: wire.scan(data, threads=2, chunk_bytes=64, stats=False))
        except Exception:
            problems.append(f"input {i}: events only: {traceback.format_exc(limit=3)}")
            continue
        if kind_s == "ok" and (kind_e != "ok" or not all(np.array_equal(getattr(evs, c), getattr(ser, c))
                                                          for c in ("ev_line", "ev_meta", "ev_start", "ev_dur"))):
            problems.append(f"input {i}: events only {kind_e} {evs if kind_e != 'ok' else 'other columns'}")
        # The walk beside the file's read (7-byte pieces: it waits at almost every step) finds
        # what the walk of the whole array finds.
        if kind_b != kind_p or (kind_p == "ok" and not _same(bes, par)) or (kind_p != "ok" and bes != par):
            problems.append(f"input {i}: beside the read {kind_b} {bes if kind_b != 'ok' else ''} vs "
                            f"parallel {kind_p} {par if kind_p != 'ok' else ''}")
        if job.get("compare"):
            if kind_p != kind_s:
                problems.append(f"input {i}: parallel {kind_p} {par if kind_p != 'ok' else ''} vs serial {kind_s} "
                                f"{ser if kind_s != 'ok' else ''}")
            elif kind_s == "ok":
                diff = [c for c in COLUMNS if not np.array_equal(getattr(par, c), getattr(ser, c))]
                if diff or par.n_planes != ser.n_planes:
                    problems.append(f"input {i}: parallel and serial columns differ: {diff}")
            elif par != ser:
                problems.append(f"input {i}: parallel error {par} vs serial error {ser}")
        if job.get("reader"):
            try:
                xspace_from_bytes(data, "fuzz.xplane.pb", "fuzz")
                counts["read_ok"] += 1
                eager_ok = True
            except ProfileReadError:
                counts["read_error"] += 1
                eager_ok = False
            except Exception:
                problems.append(f"input {i}: reader raised {traceback.format_exc(limit=4)}")
                continue
            # The lazy reader (events now, each plane's stats on first use) reads exactly the
            # files the eager one reads; on the others it fails now or when a plane's stats are
            # asked for, with ProfileReadError.
            try:
                lazy = xspace_from_bytes(data, "fuzz.xplane.pb", "fuzz", lazy_min_bytes=0)
                for plane in lazy.planes:
                    _ = plane.stats
                lazy_ok = True
            except ProfileReadError:
                lazy_ok = False
            except Exception:
                problems.append(f"input {i}: lazy reader raised {traceback.format_exc(limit=4)}")
                continue
            if lazy_ok != eager_ok:
                problems.append(f"input {i}: eager read {eager_ok}, lazy read {lazy_ok}")
    return {"counts": counts, "problems": problems[:20], "n_problems": len(problems)}


def main() -> int:
    job = json.loads(sys.stdin.read())
    print(json.dumps(run(job)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
