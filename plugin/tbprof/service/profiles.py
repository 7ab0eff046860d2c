"""The profiles of a logdir as analyses see them: runs -> hosts -> stores -> tool results.

This is the one object the HTTP app, the TensorBoard plugin and the CLI share. It owns the
run index, the store cache (memory + disk) and the memo of tool results, and it is the only
place that maps a run kind to the reader that decodes its files.
"""

from __future__ import annotations

import gzip
import logging
import threading
import time
from collections.abc import Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tbprof.analyses.encode import to_json_bytes
from tbprof.analyses.tool import Tool
from tbprof.domain import event_groups
from tbprof.errors import BadParameter, NoData, NotFound, ProfileReadError
from tbprof.readers.kinds import KINDS
from tbprof.service import tools as registry
from tbprof.service.executor import Executor, HostTask, InProcess, Progress
from tbprof.service.logdir import Run, RunIndex
from tbprof.service.selection import ALL_HOSTS as ALL_HOSTS  # its former home: callers import it here
from tbprof.service.selection import select_hosts
from tbprof.store.any_store import AnyStore
from tbprof.store.cache import ProfileCache
from tbprof.store.disk_cache import cache_key
from tbprof.store.fs import Location, location
from tbprof.store.memo import Memo
from tbprof.store.tables import ProfileStore
from tbprof.store.tfprof import TfprofProfile

if TYPE_CHECKING:  # the partials (and the analyses they carry) load when a pod needs them
    from collections.abc import Callable

    from tbprof.analyses.partials import HostPartial, PodPartials
    from tbprof.service.partials import PartialFiles

log = logging.getLogger("tbprof")

# Store formats the disk cache holds (tfprof profiles are small and stay in memory): only these
# convert on the executor, whose workers hand stores over through the cache.
PERSISTED_FORMATS = frozenset({"xspace", "chrome_trace"})
# gzip level of the memoised JSON bodies (result_json), the one HTTP's other answers use.
GZIP_LEVEL = 5


class _Miss(Exception):
    """A memo lookup that found nothing (nothing is stored)."""


def _miss() -> Any:
    raise _Miss

def persist_derived(store: ProfileStore) -> None:
    """What the disk cache keeps with a converted store besides its columns: the event grouping
    (steps, memory steps and smart suggestions all start from it; ~60 ms on jax_large when a
    reopened store derives it again). Runs where the store is written, after the answer."""
    store.derived[event_groups.PERSISTED_NAME] = event_groups.to_persisted(event_groups.event_groups(store))


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
        self.cache = ProfileCache(**kwargs, before_save=persist_derived)
        # Tool results, in the process-wide memory budget (store/memo.py) with the stores.
        self._results = Memo()
        self._memo_lock = threading.Lock()
        self._warmer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tbprof-warm")
        self._after_request_stores: list[AnyStore] = []
        self._loading: dict[tuple[str, tuple[str, ...]], threading.Thread] = {}  # load_in_background
        self.progress: Progress | None = None  # the CLI's progress bar, when it has one
        # Per-host partials (analyses/partials.py) by host cache key, in the same byte budget;
        # persisted in their binary form next to the stores (service/partials.py) when there is a
        # disk cache. Also the op tables a worker combined over a batch of consecutive hosts, by
        # the batch's host cache keys (("combined", keys)), and the batches by first key.
        self._partials = Memo()
        self._batches: dict[str, tuple[str, ...]] = {}
        self._partial_files_: PartialFiles | None = None
        # Seconds spent getting partials, summed over hosts (where a pod's time goes; bench/):
        # load_s, convert_s, partial_s, encode_s, write_s, combine_s as the workers report them,
        # or measured here; server_keep_s: decoding them here.
        self.partial_seconds: dict[str, float] = {}
        # Wall seconds of the phases of the last all-hosts conversion (``tbprof summary
        # --timings``): lookup_s (cache keys, cached partials), tasks_s (the hosts' tasks),
        # dispatch_s (starting the pool and handing the batches out), wait_s (waiting for
        # workers), keep_s (decoding what they sent, here).
        self.phase_seconds: dict[str, float] = {}
        # Host files a worker found unreadable, by cache key (a changed file has another key),
        # so an all-hosts page does not send them to be read again on every request.
        self._unreadable: dict[str, dict[str, str]] = {}
        self._candidates: dict[tuple[str, str], list[str]] = {}  # (store format, run kind) -> tools

    # --- runs and hosts -------------------------------------------------------------------
    def runs(self, refresh: bool = False, fresh: bool = False) -> dict[str, Run]:
        return self.index.runs(refresh=refresh, fresh=fresh)

    def run(self, name: str) -> Run:
        run = self.index.get(name)
        if run is None:
            raise NotFound(f"unknown run {name!r}")
        return run

    def hosts(self, run: Run, host: str | None) -> list[str]:
        """Host names a request selects (``selection.select_hosts``)."""
        return select_hosts(run, host)

    def store_format(self, run: Run) -> str:
        kind = KINDS.get(run.kind)
        return kind.store_format if kind is not None else run.kind

    def store(self, run: Run, host: str, few_planes: bool = False) -> AnyStore:
        kind = KINDS.get(run.kind)
        if kind is None:
            raise NotFound(f"run {run.name!r} is of kind {run.kind!r}, which has no reader")
        # A tool that reads few planes converts the file lazily (each plane's stats when first
        # read); the store is the same for every later tool.
        reader = (kind.lazy_reader if few_planes else None) or kind.reader
        return self.cache.get(run.hosts[host], reader, kind=kind.store_format, streamer=kind.streamer)

    def event_store(self, run: Run, host: str) -> ProfileStore:
        """The event store of a host (XSpace and Chrome-trace runs); tfprof runs have none."""
        store = self.store(run, host)
        if not isinstance(store, ProfileStore):
            raise NoData(f"run {run.name!r} is a {run.kind} run: it has no events (open it with tfprof_views)")
        return store

    def tfprof_profile(self, run: Run, host: str) -> TfprofProfile:
        store = self.store(run, host)
        if not isinstance(store, TfprofProfile):
            raise BadParameter(f"run {run.name!r} is a {run.kind} run, not a tfprof ProfileProto run")
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

    def prepare(self, run: Run, hosts: Sequence[str], progress: Progress | None = None,
                write_store: bool = True, unloaded: bool = False) -> list[dict[str, Any]]:
        """Converts the hosts not yet converted on the executor, in parallel.

        Returns the per-host results (summary, partial or error) in completion order and keeps
        their partials; ``progress`` is called with (done, total) as each host finishes.
        ``write_store``: the workers write the stores into the disk cache (for a request that
        loads them); else they return only the partials. With the in-process executor, or one
        host to convert, stores are not converted here (``store`` converts on first use as
        before), but partials are: a host at a time, in this process, keeping no store.
        ``unloaded``: the caller has just found none of the hosts loaded (not checked again).
        """
        fmt = self.store_format(run)
        if fmt not in PERSISTED_FORMATS or self.cache.disk is None:
            return []
        listed = time.perf_counter()
        todo = []
        for h in hosts:
            if not unloaded and self.is_loaded(run, h):
                continue
            path = run.hosts[h]
            # A URL's size and mtime come from the listing (no request); a local file's size lets
            # the executor decide whether a pool is worth starting.
            try:
                st = path.stat()
            except OSError:  # gone since the listing: the worker reports it as unreadable
                st = None
            todo.append(HostTask(h, str(path), run.kind, str(self.cache.cache_dir),
                                 st.st_size if st else -1, st.st_mtime_ns if st else -1, write_store=write_store))
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
            kept = time.perf_counter()
            for result in batch["results"]:
                results.append(result)
                if result.get("partial") is not None:
                    self._keep_partial(result["key"], result["partial"])
                for name, seconds in result.get("timings", {}).items():
                    self.partial_seconds[name] = self.partial_seconds.get(name, 0.0) + seconds
                if progress is not None:
                    progress(len(results), len(todo))
            if batch.get("combined") is not None:
                keys = {r["host"]: r["key"] for r in batch["results"] if "key" in r}
                self._keep_combined(tuple(keys[h] for h in batch["combined_hosts"] if h in keys), batch["combined"])
            for name, seconds in batch.get("timings", {}).items():
                self.partial_seconds[name] = self.partial_seconds.get(name, 0.0) + seconds
            elapsed = time.perf_counter() - kept
            phases["keep_s"] += elapsed
            self.partial_seconds["server_keep_s"] = self.partial_seconds.get("server_keep_s", 0.0) + elapsed
        # The first batch's wait includes starting the pool and handing every batch out.
        phases["dispatch_s"] = float(getattr(self.executor, "dispatch_s", 0.0))
        phases["wait_s"] = max(0.0, phases["wait_s"] - phases["dispatch_s"])
        self.phase_seconds.update(phases)
        return results

    def load_in_background(self, run: Run, hosts: Sequence[str]) -> threading.Thread:
        """Starts converting the hosts' stores (a pod's: their partials) on a thread and returns
        it (join it when done).

        For a command that still has modules to import before it asks for the stores: the
        decoder spends most of a conversion outside the GIL, so the analyses load on one core
        while the file is scanned on the other. ``stores_tolerant`` then waits for this same
        conversion (the cache is single-flight) and raises its errors; here they are dropped.
        """
        key = (run.name, tuple(hosts))

        def load() -> None:
            try:
                # A pod's summary reads per-host partials, not stores (host_partials).
                if len(hosts) > 1 and self._host_partials(run, hosts) is not None:
                    return
                self._stores_tolerant(run, hosts)
            except Exception:  # the caller's own stores_tolerant reports it
                log.debug("tbprof: background load of %s failed", run.name, exc_info=True)

        thread = threading.Thread(target=load, name="tbprof-load", daemon=True)
        with self._memo_lock:
            self._loading[key] = thread
        thread.start()
        return thread

    def stores_tolerant(self, run: Run, hosts: Sequence[str],
                        few_planes: bool = False) -> tuple[list[AnyStore], list[dict[str, str]]]:
        """Stores of the hosts; with several hosts, unreadable ones are skipped and reported.

        The one loader every tool, the summary and comparisons use. A single host unreadable
        raises its ProfileReadError; every host of several unreadable raises one
        naming them all.
        """
        self._wait_background(run, hosts)
        return self._stores_tolerant(run, hosts, few_planes)

    def _wait_background(self, run: Run, hosts: Sequence[str]) -> None:
        with self._memo_lock:
            loading = self._loading.pop((run.name, tuple(hosts)), None)
        if loading is not None and loading is not threading.current_thread():
            # The same hosts are converting in the background (load_in_background): wait for that
            # rather than hand a pod's hosts to the executor a second time.
            loading.join()

    def _stores_tolerant(self, run: Run, hosts: Sequence[str],
                         few_planes: bool = False) -> tuple[list[AnyStore], list[dict[str, str]]]:
        stores: list[AnyStore] = []
        errors: list[dict[str, str]] = []
        first_error: ProfileReadError | None = None
        if len(hosts) > 1:
            self.prepare(run, hosts, self.progress)
        for h in hosts:
            try:
                stores.append(self.store(run, h, few_planes))
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

    def is_ready(self, run: Run, host: str) -> bool:
        """Whether a host is converted: its store, or its partial, is at hand (no I/O)."""
        return self.is_loaded(run, host) or self._partials.contains(("partial", cache_key(run.hosts[host],
                                                                                          self.store_format(run))))

    # --- per-host partials ----------------------------------------------------------------
    @property
    def _partial_files(self) -> PartialFiles | None:
        if self._partial_files_ is None and self.cache.disk is not None:
            from tbprof.service.partials import PartialFiles

            self._partial_files_ = PartialFiles(self.cache.disk.root)
        return self._partial_files_

    def _keep_partial(self, key: str, blob: bytes) -> HostPartial | None:
        from tbprof.analyses.partials import partial_from_bytes
        from tbprof.service.partials import DECODED_BYTES_PER_BLOB_BYTE

        try:
            part = partial_from_bytes(blob)
        except (ValueError, KeyError, TypeError, IndexError):  # another version, or a damaged file
            return None
        # Sized from the blob: walking the decoded objects would cost ~1.5 ms a host.
        return self._partials.get(("partial", key), lambda: part, lambda _: DECODED_BYTES_PER_BLOB_BYTE * len(blob))

    def _keep_combined(self, keys: tuple[str, ...], blob: bytes) -> None:
        """Keeps a batch's combined op tables (executor.convert_batch) for ``host_partials``."""
        from tbprof.analyses.partials import decode_partials
        from tbprof.service.partials import DECODED_BYTES_PER_BLOB_BYTE

        if len(keys) < 2:
            return
        try:
            combined = decode_partials(blob).combined
        except (ValueError, KeyError, TypeError, IndexError):  # the tables are then combined host by host
            return
        self._partials.clear_key(("combined", keys))
        self._partials.get(("combined", keys), lambda: combined, lambda _: DECODED_BYTES_PER_BLOB_BYTE * len(blob))
        if len(self._batches) >= 65536:  # bounded: the memo may have dropped what these name anyway
            self._batches.clear()
        self._batches[keys[0]] = keys

    def _segments(self, keys: list[str]) -> list[tuple[int, int, dict[Hashable, Callable[[], Any]]]]:
        """Runs of ``keys`` (the hosts of a request, in order) that a worker converted as one
        batch, with their combined tables: (start, end, values by memo key)."""
        out = []
        i = 0
        while i < len(keys):
            batch = self._batches.get(keys[i])
            if batch is not None and tuple(keys[i:i + len(batch)]) == batch:
                try:
                    combined: dict[Hashable, Callable[[], Any]] = self._partials.get(("combined", batch), _miss)
                except _Miss:
                    combined = {}
                if combined:
                    out.append((i, i + len(batch), combined))
                    i += len(batch)
                    continue
            i += 1
        return out

    def _known_partial(self, key: str, on_disk: set[str] | None = None) -> HostPartial | None:
        """The partial of a host cache key from memory, else from the disk cache's file
        (``on_disk``: the keys with a file, when the caller listed them)."""
        try:
            found: HostPartial = self._partials.get(("partial", key), _miss)
            return found
        except _Miss:
            pass
        if on_disk is not None and key not in on_disk:
            return None
        blob = self._partial_files.load(key) if self._partial_files is not None else None
        return self._keep_partial(key, blob) if blob is not None else None

    def host_partials(self, run: Run, hosts: Sequence[str]) -> tuple[PodPartials, list[dict[str, str]]] | None:
        """The partials of the hosts (in ``hosts`` order) and the unreadable hosts, as
        ``stores_tolerant`` reports them; None when some host cannot have one (another format).

        Hosts without a partial are converted on the executor, whose workers return partials
        only (no store written, none loaded here); with the in-process executor, from their
        stores. Raises as ``stores_tolerant`` when no host is readable.
        """
        self._wait_background(run, hosts)
        return self._host_partials(run, hosts)

    def _host_partials(self, run: Run, hosts: Sequence[str]) -> tuple[PodPartials, list[dict[str, str]]] | None:
        # The partials' analyses are imported once a host needs them (a cached partial, the
        # first batch back, the end): not before the hosts go to the workers.
        from tbprof.analyses.partial_formats import PARTIAL_FORMATS

        fmt = self.store_format(run)
        if fmt not in PARTIAL_FORMATS:
            return None
        looked = time.perf_counter()
        keys = {h: cache_key(run.hosts[h], fmt) for h in hosts}
        got: dict[str, HostPartial] = {}
        errors: dict[str, dict[str, str]] = {}
        # One listing of the partial files, not a failed open per host of a pod seen first.
        on_disk = self._partial_files.present() if self._partial_files is not None else None
        for h in hosts:
            part = self._known_partial(keys[h], on_disk)
            if part is not None:
                got[h] = part
            elif keys[h] in self._unreadable:
                errors[h] = {**self._unreadable[keys[h]], "host": h}
        missing = [h for h in hosts if h not in got and h not in errors and not self.cache.contains_key(keys[h])]
        if len(missing) > 1:
            self.phase_seconds = {"lookup_s": time.perf_counter() - looked}
            for r in self.prepare(run, missing, self.progress, write_store=False, unloaded=True):
                if "error" in r:
                    errors[r["host"]] = {"host": r["host"], "file": r["file"], "error": r["error"]}
                    if "key" in r:
                        if len(self._unreadable) >= 4096:  # bounded: a logdir of broken files
                            self._unreadable.clear()
                        self._unreadable[r["key"]] = errors[r["host"]]
                elif r.get("partial") is not None:
                    part = self._known_partial(r["key"])
                    if part is not None:
                        got[r["host"]] = part
        first_error: ProfileReadError | None = None
        for h in hosts:
            if h in got or h in errors:
                continue
            started = time.perf_counter()
            try:
                store = self.store(run, h)
            except ProfileReadError as e:
                first_error = first_error or e
                errors[h] = {"host": h, "file": e.path, "error": e.reason}
                continue
            converted = time.perf_counter()
            from tbprof.service.partials import make_partial

            blob = make_partial(store) if isinstance(store, ProfileStore) else None
            for name, seconds in (("convert_s", converted - started), ("partial_s", time.perf_counter() - converted)):
                self.partial_seconds[name] = self.partial_seconds.get(name, 0.0) + seconds
            part = self._keep_partial(keys[h], blob) if blob is not None else None
            if part is None or blob is None:
                return None
            if self._partial_files is not None:
                self._partial_files.save(keys[h], blob)
            got[h] = part
        if not got:
            if len(hosts) == 1 and first_error is not None:
                raise first_error
            raise ProfileReadError(run.name, "no host file of this run is readable: "
                                   + "; ".join(f"{e['host']}: {e['error']}" for e in errors.values()))
        from tbprof.analyses.partials import PodPartials

        good = [h for h in hosts if h in got]
        return (PodPartials([got[h] for h in good], self._segments([keys[h] for h in good])),
                [errors[h] for h in hosts if h in errors])

    # --- tools ----------------------------------------------------------------------------
    def tool(self, name: str) -> Tool:
        tool = registry.get(name)
        if tool is None:
            raise NotFound(f"unknown tool {name!r}; tools: {sorted(t.name for t in registry.all_tools())}")
        return tool

    def candidate_tools(self, run: Run) -> list[str]:
        fmt = self.store_format(run)
        # The same for every run of a kind (listing 20 000 runs asks 20 000 times): kept per kind.
        found = self._candidates.get((fmt, run.kind))
        if found is None:
            found = self._candidates[(fmt, run.kind)] = [
                t.name for t in registry.all_tools() if fmt in t.formats and (not t.kinds or run.kind in t.kinds)]
        return list(found)

    def tools(self, run: Run) -> list[str]:
        """Tools with data for the run (loads its stores)."""
        candidates = set(self.candidate_tools(run))
        parts = self.host_partials(run, list(run.hosts)) if len(run.hosts) > 1 else None
        if parts is not None:  # a pod: what its workers found, without loading its stores
            found = {name for p in parts[0] for name in p.available_tools}
            return [t.name for t in registry.all_tools() if t.name in candidates and t.name in found]
        if len(run.hosts) > 1:
            self.prepare(run, list(run.hosts), self.progress)
        stores = [self.store(run, h) for h in run.hosts]
        names = [t.name for t in registry.all_tools() if t.name in candidates and any(t.available(s) for s in stores)]
        with self._memo_lock:
            self._after_request_stores.extend(stores)
        return names

    def _result_key(self, run: Run, hosts: Sequence[str], tool: Tool,
                    raw_options: Mapping[str, str]) -> tuple[Hashable | None, dict[str, Any]]:
        """The memo key of a tool's result (None: an option value that cannot be a key, never
        from HTTP: strings) and its parsed options; refuses what the tool cannot answer."""
        if len(hosts) > 1 and not tool.multi_host:
            raise BadParameter(f"tool {tool.name!r} shows one host at a time; choose host= one of {sorted(run.hosts)}")
        fmt = self.store_format(run)
        if fmt not in tool.formats:
            raise NoData(f"tool {tool.name!r} has no data for run {run.name!r} (a {run.kind} run)")
        options = tool.parse_options(raw_options)
        keys = tuple(cache_key(run.hosts[h], fmt) for h in hosts)
        memo_key = ("result", keys, tool.name, tuple(sorted(options.items(), key=lambda kv: kv[0])))
        try:
            hash(memo_key)
        except TypeError:
            return None, options
        return memo_key, options

    def result_json(self, run: Run, hosts: Sequence[str], tool: Tool, raw_options: Mapping[str, str],
                    gzipped: bool = False) -> bytes:
        """The tool's result as JSON (``analyses/encode.py``; ``gzipped``: compressed), memoised
        next to the result in the same byte budget, so a repeated request costs a lookup
        instead of re-encoding 100 kB of JSON."""
        memo_key, _ = self._result_key(run, hosts, tool, raw_options)

        def encode() -> bytes:
            if gzipped:
                return gzip.compress(self.result_json(run, hosts, tool, raw_options), compresslevel=GZIP_LEVEL)
            return to_json_bytes(self.compute(run, hosts, tool, raw_options))

        return encode() if memo_key is None else self._results.get(("json", gzipped, memo_key), encode, size=len)

    def compute(self, run: Run, hosts: Sequence[str], tool: Tool,
                raw_options: Mapping[str, str]) -> dict[str, Any]:
        memo_key, options = self._result_key(run, hosts, tool, raw_options)

        def compute() -> dict[str, Any]:
            from tbprof.analyses.partials import PARTIAL_TOOLS, MissingPartial  # a pod's first request only

            if len(hosts) > 1 and tool.name in PARTIAL_TOOLS:
                parts = self.host_partials(run, hosts)
                if parts is not None:
                    try:
                        result = tool.compute(parts[0], options)
                    except MissingPartial:  # the tool needs more than a partial holds: the stores
                        log.debug("tbprof: %s falls back to the stores", tool.name, exc_info=True)
                    else:
                        return {**result, "host_errors": parts[1]} if parts[1] else result
            stores, host_errors = self.stores_tolerant(run, hosts, few_planes=tool.few_planes)
            result = tool.compute(stores, options)
            if host_errors:
                # One broken host file among good ones: analyse the good ones, name the broken one.
                result = {**result, "host_errors": host_errors}
            with self._memo_lock:
                self._after_request_stores.extend(stores)
            return result

        return compute() if memo_key is None else self._results.get(memo_key, compute)
