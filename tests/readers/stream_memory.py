"""Peak anonymous memory of one conversion (XSpace or Chrome trace JSON), measured from outside the converting process.

How: the conversion runs in a child process; this process reads the child's
``/proc/<pid>/status`` ``RssAnon`` every ~0.5 ms while it converts and keeps the largest value
minus the value just before it started. ``RssAnon`` counts the child's private memory (heap,
numpy arrays, thread stacks), not file-backed pages: the memory-mapped columns of the cache
entry and the page cache do not count, which is the point of streaming. Why not the kernel's
own peak: ``VmHWM`` counts file pages too, and ``RLIMIT_DATA`` limits address space (numpy and
glibc reserve far more than they touch), not resident memory. A sampler sees every allocation
that lives longer than its interval; a numpy temporary of N MB takes ~N/10 ms just to be
written, so only allocations far smaller than the budget could slip between two samples.

The child warms up first (converts ``warmup`` the same way into another cache folder, so
imports and lazily built tables do not count), then waits for "go" on stdin.

Used by ``test_xplane_stream.py`` and ``bench/stream_bench.py``.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
_SAMPLE_S = 0.0005


class _ChildFailed(Exception):
    pass


def rss_anon_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise OSError("no RssAnon in /proc/<pid>/status")


def measure(path: Path, mode: str, cache_dir: Path, warmup: Path, budget_bytes: int | None = None,
            timeout_s: float = 600) -> dict[str, Any]:
    """Converts ``path`` in a child ("memory": the in-memory reader; "stream": through a
    ProfileCache under ``$TBPROF_CONVERT_MEMORY_BYTES=budget_bytes``); returns the child's report
    plus ``peak_anon_growth_bytes``, ``samples`` and ``wall_s`` (and from the child
    ``hwm_growth_bytes``: see ``_reset_peak_rss``)."""
    import tbprof

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(tbprof.__file__).parent.parent), str(REPO)]),
               # Fixed glibc thresholds: freed blocks go back to the kernel, so the warm-up's freed
               # heap cannot hide the measured conversion's growth (glibc otherwise raises both
               # thresholds after the first large free and keeps up to 64 MB of freed heap).
               MALLOC_MMAP_THRESHOLD_="131072", MALLOC_TRIM_THRESHOLD_="131072")
    if budget_bytes is not None:
        env["TBPROF_CONVERT_MEMORY_BYTES"] = str(budget_bytes)
    else:
        env.pop("TBPROF_CONVERT_MEMORY_BYTES", None)
    proc = subprocess.Popen([sys.executable, "-m", "tests.readers.stream_memory", mode, str(path), str(cache_dir),
                             str(warmup)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put("")  # end of output: the child exited

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    report_line = ""
    try:
        if lines.get(timeout=timeout_s).strip() != "ready":
            raise _ChildFailed
        base = rss_anon_bytes(proc.pid)
        peak = base
        samples = 0
        proc.stdin.write("go\n")
        proc.stdin.flush()
        started = time.perf_counter()
        while lines.empty():
            try:
                peak = max(peak, rss_anon_bytes(proc.pid))
            except OSError:
                break  # the child exited (its report says why)
            samples += 1
            if time.perf_counter() - started > timeout_s:
                raise AssertionError("the conversion did not finish in time")
            time.sleep(_SAMPLE_S)
        wall_s = time.perf_counter() - started
        done = lines.get(timeout=timeout_s)
        report_line = lines.get(timeout=timeout_s) if done.strip() == "done" else done
    except _ChildFailed:
        pass
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)
        proc.stdout.close()
        assert proc.stderr is not None
        stderr = proc.stderr.read()
        proc.stderr.close()
    if proc.returncode != 0 or not report_line:
        raise AssertionError(f"the child failed ({proc.returncode}): {stderr[-3000:]}")
    report: dict[str, Any] = json.loads(report_line)
    report.update(peak_anon_growth_bytes=peak - base, samples=samples, wall_s=wall_s, baseline_anon_bytes=base)
    return report


def _convert(mode: str, path: Path, cache_dir: Path) -> Any:
    # Only the reader of the file's format is imported (what else is imported changes how the
    # heap is laid out, hence the in-memory conversion's growth that a test's budget is taken from).
    from tbprof.cache.profile_cache import ProfileCache
    from tbprof.readers.kinds import KINDS

    if path.name.endswith(".xplane.pb"):
        from tbprof.readers.xplane import read_xspace

        if mode == "memory":
            return read_xspace(path)
        kind = KINDS["xspace"]
    else:
        from tbprof.readers.chrome_trace import read_chrome_trace

        if mode == "memory":
            return read_chrome_trace(path)
        kind = KINDS["chrome_trace"]
    return ProfileCache(cache_dir).get(path, kind.reader, kind=kind.store_format, streamer=kind.streamer)


def child(mode: str, path: Path, cache_dir: Path, warmup: Path) -> None:
    import gc

    import numpy as np

    from tests.core.store_digest import store_digest

    warm = _convert(mode, warmup, cache_dir / "warmup")
    del warm
    gc.collect()
    print("ready", flush=True)
    sys.stdin.readline()
    rss_before = _status_bytes("VmRSS")
    _reset_peak_rss()
    started = time.perf_counter()
    store = _convert(mode, path, cache_dir / "main")
    seconds = time.perf_counter() - started
    hwm_growth = _status_bytes("VmHWM") - rss_before
    print("done", flush=True)  # sampling stops here; the digest below copies columns
    streamed = isinstance(store.planes[0].start_ps, np.memmap)
    print(json.dumps({"seconds": seconds, "streamed": streamed, "digest": store_digest(store),
                      "hwm_growth_bytes": hwm_growth}), flush=True)


def _status_bytes(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"no {field} in /proc/self/status")


def _reset_peak_rss() -> None:
    """Resets VmHWM to the current RSS (``clear_refs`` 5, Linux 4.0+). The kernel's exact peak of
    the whole RSS: for an in-memory conversion that is its anonymous memory (the file is read
    into the process, nothing is mapped), so it backs the sampled peak that a fast conversion
    may slip between samples; not for a streaming one, whose mapped columns it counts too."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")


if __name__ == "__main__":
    child(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
