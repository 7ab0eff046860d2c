"""The profiles of a logdir as analyses see them: runs -> hosts -> stores -> tool results.

This is the one object the HTTP app, the TensorBoard plugin and the CLI share. It owns the
run index, the store cache (memory + disk) and the memo of tool results, and it is the only
place that maps a run kind to the reader that decodes its files.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tbprof.analyses.tool import Tool
from tbprof.errors import BadRequest, NoData, NotFound, ProfileReadError
from tbprof.readers.kinds import KINDS
from tbprof.service import tools as registry
from tbprof.service.executor import DaskExecutor, Executor, HostTask, InProcess, Progress
from tbprof.service.logdir import Run, RunIndex
from tbprof.store.any_store import AnyStore
from tbprof.store.cache import ProfileCache
from tbprof.store.disk_cache import cache_key
from tbprof.store.fs import Location, UrlPath, location
from tbprof.store.memo import Memo
from tbprof.store.tables import ProfileStore
from tbprof.store.tfprof import TfprofProfile

log = logging.getLogger("tbprof")

ALL_HOSTS = "__all__"
# Store formats the disk cache holds (tfprof profiles are small and stay in memory): only these
# convert on the executor, whose workers hand stores over through the cache.
PERSISTED_FORMATS = frozenset({"xspace", "chrome_trace"})

class Profiles:
    def __init__(self, logdir: Location | str, cache_dir: Path | str | None = None, memory_bytes: int | None = None,
                 executor: Executor | None = None) -> None:
        self.logdir = location(logdir)
        # Per-host conversions of multi-host requests (see prepare); in-process unless given.
        self.executor: Executor = executor if executor is not None else InProcess()
        self.index = RunIndex(self.logdir)
        kwargs: dict[str, Any] = {"cache_dir": cache_dir}
        if memory_bytes is not None:
            kwargs["memory_bytes"] = memory_bytes
        self.cache = ProfileCache(**kwargs)
        # Tool results, in the process-wide memory budget (store/memo.py) with the stores.
        self._results = Memo()
        self._memo_lock = threading.Lock()
        self._warmer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tbprof-warm")
        self._after_request_stores: list[AnyStore] = []
        self.progress: Progress | None = None  # the CLI's progress bar, when it has one

    # --- runs and hosts -------------------------------------------------------------------
    def runs(self, refresh: bool = False) -> dict[str, Run]:
        return self.index.runs(refresh=refresh)

    def run(self, name: str) -> Run:
        run = self.index.get(name)
        if run is None:
            raise NotFound(f"unknown run {name!r}")
        return run

    def hosts(self, run: Run, host: str | None) -> list[str]:
        """Host names a request selects: one host, all hosts, or the only host."""
        if host in (None, "") and len(run.hosts) == 1:
            return list(run.hosts)
        if host == ALL_HOSTS:
            return list(run.hosts)
        if host in (None, ""):
            raise BadRequest(f"run {run.name!r} has several hosts; choose host= one of "
                             f"{sorted(run.hosts)} or {ALL_HOSTS}")
        if host not in run.hosts:
            raise NotFound(f"unknown host {host!r} in run {run.name!r}; hosts: {sorted(run.hosts)}")
        return [host]

    def store_format(self, run: Run) -> str:
        kind = KINDS.get(run.kind)
        return kind.store_format if kind is not None else run.kind

    def store(self, run: Run, host: str) -> AnyStore:
        kind = KINDS.get(run.kind)
        if kind is None:
            raise NotFound(f"run {run.name!r} is of kind {run.kind!r}, which has no reader")
        return self.cache.get(run.hosts[host], kind.reader, kind=kind.store_format, streamer=kind.streamer)

    def event_store(self, run: Run, host: str) -> ProfileStore:
        """The event store of a host (XSpace and Chrome-trace runs); tfprof runs have none."""
        store = self.store(run, host)
        if not isinstance(store, ProfileStore):
            raise NoData(f"run {run.name!r} is a {run.kind} run: it has no events (open it with tfprof_views)")
        return store

    def tfprof_profile(self, run: Run, host: str) -> TfprofProfile:
        store = self.store(run, host)
        if not isinstance(store, TfprofProfile):
            raise BadRequest(f"run {run.name!r} is a {run.kind} run, not a tfprof ProfileProto run")
        return store

    def _warm(self, store: AnyStore) -> None:
        """Starts the registered warm-ups once per loaded store, in one background thread.

        Called after the request that loaded the store has its answer, so the warm-up never
        competes with that request for the interpreter.
        """
        if not registry.warmups() or not isinstance(store, ProfileStore) or store.warm_started:
            return
        store.warm_started = True

        def run() -> None:
            for fn in registry.warmups():
                try:
                    fn(store)
                except Exception:  # a failing warm-up only costs speed; the request reports it
                    log.debug("tbprof: warm-up %r failed", fn, exc_info=True)

        self._warmer.submit(run)

    def after_request(self) -> None:
        """Background work deferred until a response is ready: writing newly converted stores to
        the disk cache, and the warm-ups of the stores the request used. Deferred so that neither
        competes with the request (its analysis or its JSON encoding) for the interpreter."""
        self.cache.persist_pending()
        with self._memo_lock:
            stores, self._after_request_stores = self._after_request_stores, []
        for store in stores:
            self._warm(store)

    def wait_warm(self) -> None:
        """Waits until the warm-ups started so far have finished (tests and benchmarks)."""
        self._warmer.submit(lambda: None).result()

    def prepare(self, run: Run, hosts: Sequence[str], progress: Progress | None = None) -> list[dict[str, Any]]:
        """Converts the hosts not yet converted on the executor, in parallel, into the disk cache.

        Returns the per-host results (summary or error) in completion order; ``progress`` is
        called with (done, total) as each host finishes. With the in-process executor, or one
        host to convert, nothing is done here: ``store`` converts on first use as before.
        """
        fmt = self.store_format(run)
        parallel = self.executor.workers >= 2 or isinstance(self.executor, DaskExecutor)
        if not parallel or fmt not in PERSISTED_FORMATS or self.cache.disk is None:
            return []
        todo = []
        for h in hosts:
            if self.is_loaded(run, h):
                continue
            path = run.hosts[h]
            st = path.stat() if isinstance(path, UrlPath) else None  # from the listing: no request
            todo.append(HostTask(h, str(path), run.kind, str(self.cache.cache_dir),
                                 st.st_size if st else -1, st.st_mtime_ns if st else -1))
        if len(todo) < 2:
            return []
        results: list[dict[str, Any]] = []
        for result in self.executor.map_hosts(todo):
            results.append(result)
            if progress is not None:
                progress(len(results), len(todo))
        return results

    def load_in_background(self, run: Run, hosts: Sequence[str]) -> threading.Thread:
        """Starts converting the hosts' stores on a thread and returns it (join it when done).

        For a command that still has modules to import before it asks for the stores: the
        decoder spends most of a conversion outside the GIL, so the analyses load on one core
        while the file is scanned on the other. ``stores_tolerant`` then waits for this same
        conversion (the cache is single-flight) and raises its errors; here they are dropped.
        """
        def load() -> None:
            try:
                self.stores_tolerant(run, hosts)
            except Exception:  # the caller's own stores_tolerant reports it
                log.debug("tbprof: background load of %s failed", run.name, exc_info=True)

        thread = threading.Thread(target=load, name="tbprof-load", daemon=True)
        thread.start()
        return thread

    def stores_tolerant(self, run: Run, hosts: Sequence[str]) -> tuple[list[AnyStore], list[dict[str, str]]]:
        """Stores of the hosts; with several hosts, unreadable ones are skipped and reported.

        The one loader every tool, the summary and comparisons use. A single host unreadable
        raises its ProfileReadError (HTTP 422); every host of several unreadable raises one
        naming them all.
        """
        stores: list[AnyStore] = []
        errors: list[dict[str, str]] = []
        first_error: ProfileReadError | None = None
        if len(hosts) > 1:
            self.prepare(run, hosts, self.progress)
        for h in hosts:
            try:
                stores.append(self.store(run, h))
            except ProfileReadError as e:
                first_error = first_error or e
                errors.append({"host": h, "file": e.path, "error": e.reason})
        if not stores:
            assert first_error is not None
            if len(hosts) == 1:
                raise first_error
            raise ProfileReadError(run.name, "no host file of this run is readable: "
                                   + "; ".join(f"{e['host']}: {e['error']}" for e in errors))
        return stores, errors

    def is_loaded(self, run: Run, host: str) -> bool:
        return self.cache.contains(run.hosts[host], self.store_format(run))

    # --- tools ----------------------------------------------------------------------------
    def tool(self, name: str) -> Tool:
        tool = registry.get(name)
        if tool is None:
            raise NotFound(f"unknown tool {name!r}; tools: {sorted(t.name for t in registry.all_tools())}")
        return tool

    def candidate_tools(self, run: Run) -> list[str]:
        fmt = self.store_format(run)
        return [t.name for t in registry.all_tools() if fmt in t.formats and (not t.kinds or run.kind in t.kinds)]

    def tools(self, run: Run) -> list[str]:
        """Tools with data for the run (loads its stores)."""
        candidates = set(self.candidate_tools(run))
        if len(run.hosts) > 1:
            self.prepare(run, list(run.hosts), self.progress)
        stores = [self.store(run, h) for h in run.hosts]
        names = [t.name for t in registry.all_tools() if t.name in candidates and any(t.available(s) for s in stores)]
        with self._memo_lock:
            self._after_request_stores.extend(stores)
        return names

    def compute(self, run: Run, hosts: Sequence[str], tool: Tool,
                raw_options: Mapping[str, str]) -> dict[str, Any]:
        if len(hosts) > 1 and not tool.multi_host:
            raise BadRequest(f"tool {tool.name!r} shows one host at a time; choose host= one of {sorted(run.hosts)}")
        fmt = self.store_format(run)
        if fmt not in tool.formats:
            raise NoData(f"tool {tool.name!r} has no data for run {run.name!r} (a {run.kind} run)")
        options = tool.parse_options(raw_options)
        keys = tuple(cache_key(run.hosts[h], fmt) for h in hosts)
        memo_key = ("result", keys, tool.name, tuple(sorted(options.items(), key=lambda kv: kv[0])))

        def compute() -> dict[str, Any]:
            stores, host_errors = self.stores_tolerant(run, hosts)
            result = tool.compute(stores, options)
            if host_errors:
                # One broken host file among good ones: analyse the good ones, name the broken one.
                result = {**result, "host_errors": host_errors}
            with self._memo_lock:
                self._after_request_stores.extend(stores)
            return result

        try:
            hash(memo_key)
        except TypeError:  # an option value that cannot be a key (never from HTTP: strings)
            return compute()
        return self._results.get(memo_key, compute)
