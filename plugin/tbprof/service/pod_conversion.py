"""Converting a pod's hosts on the executor (in-process, a process pool, Dask), batch by batch,
and where the time went (``tbprof summary --timings``, bench/)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tbprof.cache.profile_cache import ProfileCache
from tbprof.service.executor import Executor, HostTask, Progress
from tbprof.service.logdir import Run

if TYPE_CHECKING:
    from tbprof.analyses.partials import HostPartial

# Store formats the disk cache holds (tfprof profiles are small and stay in memory): only these
# convert on the executor, whose workers hand stores over through the cache.
PERSISTED_FORMATS = frozenset({"xspace", "chrome_trace"})


class PodConversion:
    """Hands the hosts not yet converted to the executor's workers, in parallel."""

    def __init__(self, executor: Executor, cache: ProfileCache) -> None:
        self.executor = executor
        self.cache = cache
        # Seconds spent getting partials, summed over hosts (where a pod's time goes; bench/):
        # load_s, convert_s, partial_s, encode_s, write_s, combine_s as the workers report them,
        # or measured here; server_keep_s: decoding them here.
        self.partial_seconds: dict[str, float] = {}
        # Wall seconds of the phases of the last all-hosts conversion (``tbprof summary
        # --timings``): lookup_s (cache keys, cached partials), tasks_s (the hosts' tasks),
        # dispatch_s (starting the pool and handing the batches out), wait_s (waiting for
        # workers), keep_s (decoding and keeping what they sent, here).
        self.phase_seconds: dict[str, float] = {}

    def add_seconds(self, name: str, seconds: float) -> None:
        self.partial_seconds[name] = self.partial_seconds.get(name, 0.0) + seconds

    def prepare(self, run: Run, hosts: Sequence[str], fmt: str, progress: Progress | None = None,
                write_store: bool = True, unloaded: bool = False,
                keep_partial: Callable[[str, bytes, HostPartial | None], object] = lambda key, blob, part: None,
                keep_combined: Callable[[tuple[str, ...], bytes], None] = lambda keys, blob: None,
                parts: frozenset[str] | None = None) -> list[dict[str, Any]]:
        """Converts the hosts not yet converted on the executor, in parallel.

        Returns the per-host results (partial or error) in completion order and hands their
        partials to ``keep_partial`` (the blob, and the ``HostPartial`` the batch's frame built:
        None where the frame holds none) and a batch's combined tables to ``keep_combined``;
        ``progress`` is called with (done, total) as each host finishes.
        ``write_store``: the workers write the stores into the disk cache (for a request that
        loads them); else they return only the partials. With the in-process executor, or one
        host to convert, stores are not converted here (``store`` converts on first use as
        before), but partials are: a host at a time, in this process, keeping no store.
        ``unloaded``: the caller has just found none of the hosts loaded (not checked again).
        ``parts``: the parts of the partials the caller reads (None: all; ``HostTask.parts``).
        """
        if fmt not in PERSISTED_FORMATS or self.cache.disk is None:
            return []
        listed = time.perf_counter()
        todo = []
        for h in hosts:
            if not unloaded and self.cache.contains(run.hosts[h], fmt):
                continue
            path = run.hosts[h]
            # A URL's size and mtime come from the listing (no request); a local file's size lets
            # the executor decide whether a pool is worth starting.
            try:
                st = path.stat()
            except OSError:  # gone since the listing: the worker reports it as unreadable
                st = None
            todo.append(HostTask(h, str(path), run.kind, str(self.cache.cache_dir),
                                 st.st_size if st else -1, st.st_mtime_ns if st else -1, write_store=write_store,
                                 parts=parts))
        if len(todo) < 2 or (write_store and self.executor.in_process(todo)):
            # Stores converted here would only be written to the cache and mapped back: the
            # request converts them on first use instead.
            return []
        results: list[dict[str, Any]] = []
        phases = {"tasks_s": time.perf_counter() - listed, "dispatch_s": 0.0, "wait_s": 0.0, "keep_s": 0.0}
        batches = self.executor.map_batches(todo)
        while True:
            waited = time.perf_counter()
            batch = next(batches, None)
            phases["wait_s"] += time.perf_counter() - waited
            if batch is None:
                break
            # Decoding the batch's frame (executor.open_batch) is this process's work, not waiting.
            opened = float(batch.get("open_s", 0.0))
            phases["wait_s"] -= opened
            phases["keep_s"] += opened
            kept = time.perf_counter()
            for result in batch["results"]:
                results.append(result)
                if result.get("partial") is not None:
                    keep_partial(result["key"], result["partial"], batch["parts"].get(result["host"]))
                for name, seconds in result.get("timings", {}).items():
                    self.partial_seconds[name] = self.partial_seconds.get(name, 0.0) + seconds
                if progress is not None:
                    progress(len(results), len(todo))
            if batch.get("combined") is not None:
                keys = {r["host"]: r["key"] for r in batch["results"] if "key" in r}
                keep_combined(tuple(keys[h] for h in batch["combined_hosts"] if h in keys), batch["combined"])
            for name, seconds in batch.get("timings", {}).items():
                self.partial_seconds[name] = self.partial_seconds.get(name, 0.0) + seconds
            elapsed = time.perf_counter() - kept
            phases["keep_s"] += elapsed
            self.partial_seconds["server_keep_s"] = self.partial_seconds.get("server_keep_s", 0.0) + elapsed + opened
        # The first batch's wait includes starting the pool and handing every batch out.
        phases["dispatch_s"] = float(getattr(self.executor, "dispatch_s", 0.0))
        phases["wait_s"] = max(0.0, phases["wait_s"] - phases["dispatch_s"])
        self.phase_seconds.update(phases)
        return results
