"""The profiles of a logdir as analyses see them: runs -> hosts -> stores -> tool results.

``Profiles`` is the one object the HTTP app, the TensorBoard plugin and the CLI share: the
front of small services, each with one job, that it wires together:

* ``logdir.RunIndex``: the runs of the logdir; ``selection``: which run, hosts, table a request means;
* ``store.cache.ProfileCache``: each file converted once (memory + disk); this module maps a run
  kind to its reader (``store``) and reads several hosts tolerating broken ones (``stores_tolerant``);
* ``pod_conversion.PodConversion``: a pod's hosts converted on the executor;
* ``host_partials.HostPartials``: a pod's per-host partials (memory, disk, executor);
* ``background.BackgroundLoads`` and ``warmups.Warmups``: work before and after a request;
* the hosts as a reader typed on ``StoreView`` reads them (``views``: a pod's partials or the
  stores), and the tool results, memoised here (``computed``; the edges encode them).

Callers use the services themselves where ``Profiles`` adds nothing: ``index`` (runs),
``selection.select_hosts``, ``warmups``, ``conversion`` (a pod's timings).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tbprof.cache.disk_cache import cache_key
from tbprof.cache.profile_cache import ProfileCache
from tbprof.errors import BadParameter, NoData, NotFound, ProfileReadError
from tbprof.fs import Location, location
from tbprof.readers.kinds import KINDS, Reader, RunKind
from tbprof.service.background import BackgroundLoads
from tbprof.service.executor import Executor, InProcess, Progress
from tbprof.service.host_partials import HostPartials
from tbprof.service.logdir import Run, RunIndex
from tbprof.service.pod_conversion import PodConversion
from tbprof.service.warmups import Warmups
from tbprof.store.memo import Memo
from tbprof.store.tables import ProfileStore

# The partials (and the analyses they carry) load when a pod needs them; the tool registry, the
# event grouping and tfprof's store when used: a command that converts one file and reads its
# events (``tbprof sql``) starts converting without them.
if TYPE_CHECKING:
    from tbprof.analyses.partials import PodPartials
    from tbprof.analyses.tool import Tool
    from tbprof.store.any_store import AnyStore
    from tbprof.store.tfprof import TfprofProfile

log = logging.getLogger("tbprof")

# A tool's result and its memo key (Profiles.computed).
Computed = tuple[dict[str, Any], Hashable | None]


def persist_derived(store: ProfileStore) -> None:
    """What the disk cache keeps with a converted store besides its columns: the event grouping
    (steps, memory steps and smart suggestions all start from it; deriving it again costs a
    reopened store tens of ms on a large profile: bench/measurements.md#services). Runs where
    the store is written, after the answer."""
    from tbprof.domain import event_groups

    store.derived[event_groups.PERSISTED_NAME] = event_groups.to_persisted(event_groups.event_groups(store))


def _import_quietly(do_import: Callable[[], object], path: Location) -> bool:
    """Imports ahead of a conversion; a failure is the conversion's own to report, to the
    caller that asks for the store."""
    try:
        do_import()
    except ImportError:
        log.debug("tbprof: importing the reader of %s failed", path, exc_info=True)
        return False
    return True


def _reader_of(kind: RunKind, few_planes: bool) -> Reader:
    """The reader of a run kind's files (imported on first use): its lazy one for ``few_planes``."""
    return (kind.lazy_reader if few_planes else None) or kind.reader


@dataclass(frozen=True)
class HostViews:
    """Hosts as ``Profiles.views`` chose them: per-host partials (``partials``) or stores, and
    the hosts found unreadable (``{"host", "file", "error"}``)."""

    # The stores (a tfprof run's: its profile), or the PodPartials (a sequence of partials that
    # also holds tables combined per batch of hosts, which the op tables read).
    hosts: Sequence[Any]
    host_errors: list[dict[str, str]]
    partials: bool


class Profiles:
    def __init__(self, logdir: Location | str, cache_dir: Path | str | None = None, memory_bytes: int | None = None,
                 executor: Executor | None = None, index: RunIndex | None = None) -> None:
        """``index``: the logdir's run index when the caller started listing it already (a
        command lists while it imports: cli/common.py ``start_listing``)."""
        self.logdir = location(logdir)
        # Per-host conversions of multi-host requests (see prepare); in-process unless given.
        self.executor: Executor = executor if executor is not None else InProcess()
        self.index = index if index is not None and index.logdir == self.logdir else RunIndex(self.logdir)
        kwargs: dict[str, Any] = {"cache_dir": cache_dir}
        if memory_bytes is not None:
            kwargs["memory_bytes"] = memory_bytes
        self.cache = ProfileCache(**kwargs, before_save=persist_derived)
        # Tool results, in the process-wide memory budget (store/memo.py) with the stores.
        self._results = Memo()
        self.warmups = Warmups()
        self.loads = BackgroundLoads()
        self.progress: Progress | None = None  # the CLI's progress bar, when it has one
        self.conversion = PodConversion(self.executor, self.cache)
        self.partials = HostPartials(self.cache, self.conversion, self.store, self.store_format)

    # --- runs and hosts -------------------------------------------------------------------
    def run(self, name: str) -> Run:
        run = self.index.get(name)
        if run is None:
            raise NotFound(f"unknown run {name!r}")
        return run

    def store_format(self, run: Run) -> str:
        kind = KINDS.get(run.kind)
        return kind.store_format if kind is not None else run.kind

    def store(self, run: Run, host: str, few_planes: bool = False) -> AnyStore:
        kind = KINDS.get(run.kind)
        if kind is None:
            raise NotFound(f"run {run.name!r} is of kind {run.kind!r}, which has no reader")

        def read(path: Location) -> Any:
            # A tool that reads few planes converts the file lazily (each plane's stats when first
            # read); the store is the same for every later tool. Resolved only when the file is
            # converted: a store from the disk cache needs no reader (nor its imports).
            return _reader_of(kind, few_planes)(path)

        return self.cache.get(run.hosts[host], read, kind=kind.store_format, streamer=kind.streamer)

    def event_store(self, run: Run, host: str) -> ProfileStore:
        """The event store of a host (XSpace and Chrome-trace runs); tfprof runs have none."""
        store = self.store(run, host)
        if not isinstance(store, ProfileStore):
            raise NoData(f"run {run.name!r} is a {run.kind} run: it has no events (open it with tfprof_views)")
        return store

    def tfprof_profile(self, run: Run, host: str) -> TfprofProfile:
        from tbprof.store.tfprof import TfprofProfile

        store = self.store(run, host)
        if not isinstance(store, TfprofProfile):
            raise BadParameter(f"run {run.name!r} is a {run.kind} run, not a tfprof ProfileProto run")
        return store

    def after_request(self) -> None:
        """Background work deferred until a response is ready: writing newly converted stores to
        the disk cache, and the warm-ups of the stores the request used. Deferred so that neither
        competes with the request (its analysis or its JSON encoding) for the interpreter."""
        self.cache.persist_pending()
        self.warmups.start()

    def prepare(self, run: Run, hosts: Sequence[str], progress: Progress | None = None,
                write_store: bool = True, unloaded: bool = False) -> list[dict[str, Any]]:
        """Converts the hosts not yet converted on the executor, in parallel, keeping their
        partials (``PodConversion.prepare``)."""
        return self.conversion.prepare(run, hosts, self.store_format(run), progress, write_store, unloaded,
                                       keep_partial=self.partials.keep_fresh, keep_combined=self.partials.keep_combined)

    def load_in_background(self, run: Run, hosts: Sequence[str], few_planes: bool = False,
                           parts: frozenset[str] | None = None, parser_here: bool = False) -> threading.Thread:
        """Starts converting the hosts' stores (a pod's: their partials) on a thread and returns
        it (join it when done).

        For a command that still has modules to import before it asks for the stores: the
        decoder spends most of a conversion outside the GIL, so the analyses load on one core
        while the file is scanned on the other. ``stores_tolerant`` then waits for this same
        conversion (the cache is single-flight) and raises its errors; here they are dropped.
        ``few_planes``: the lazy reader's store (``store``), for a command that reads few stats.
        ``parts``: what the caller reads of a pod's partials (``views``); a caller that names them
        reads the partials, so the load's answer is handed to its ``views`` (``HostPartials.get``'s
        ``hand_over``: not looked up twice). One that names none (``tbprof sql``: it reads the
        stores) is handed nothing, which would hold the partials past the memory budget.

        A single local host that is not converted yet gets its reader imported here, on the
        caller's thread, before the thread starts: the conversion then begins with the file's read
        and scan, outside the GIL, instead of taking turns on the GIL with the caller's imports
        from its first line (bench/measurements.md#cold-sql-command). ``parser_here``: what the
        reader parses the file's small parts with (an XSpace's protobuf messages) is imported here
        too, once the thread has started, for a caller whose own imports end before the scan does
        (``tbprof summary``); else the conversion imports it after its scan (``tbprof sql``, whose
        DuckDB import outlasts the scan: its thread then imports while DuckDB connects, outside
        the GIL).
        """
        key = (run.name, tuple(hosts))
        hand_over = parts is not None
        converts = len(hosts) == 1 and self._import_reader(run, hosts[0], few_planes)

        def load() -> None:
            try:
                # A pod's summary reads per-host partials, not stores (host_partials).
                if len(hosts) > 1 and self.partials.get(run, hosts, self.progress, parts, hand_over) is not None:
                    return
                self._stores_tolerant(run, hosts, few_planes)
            except Exception:  # the caller's own stores_tolerant reports it
                log.debug("tbprof: background load of %s failed", run.name, exc_info=True)

        thread = self.loads.start(key, load)
        if converts and parser_here:
            _import_quietly(KINDS[run.kind].import_parser, run.hosts[hosts[0]])
        return thread

    def _import_reader(self, run: Run, host: str, few_planes: bool) -> bool:
        """Imports the reader of a local host file that is about to be converted (none where its
        store is cached: answering from the cache needs no reader); whether it did."""
        kind = KINDS.get(run.kind)
        path = run.hosts.get(host)
        if kind is None or not isinstance(path, Path) or self.cache.contains(path, kind.store_format):
            return False
        return _import_quietly(lambda: _reader_of(kind, few_planes), path)

    def stores_tolerant(self, run: Run, hosts: Sequence[str],
                        few_planes: bool = False) -> tuple[list[AnyStore], list[dict[str, str]]]:
        """Stores of the hosts; with several hosts, unreadable ones are skipped and reported.

        The one loader every tool, the summary and comparisons use. A single host unreadable
        raises its ProfileReadError; every host of several unreadable raises one
        naming them all.
        """
        self.loads.wait((run.name, tuple(hosts)))
        return self._stores_tolerant(run, hosts, few_planes)

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
        return self.is_loaded(run, host) or self.partials.contains(cache_key(run.hosts[host], self.store_format(run)))

    # --- per-host partials ----------------------------------------------------------------
    def host_partials(self, run: Run, hosts: Sequence[str],
                      parts: frozenset[str] | None = None) -> tuple[PodPartials, list[dict[str, str]]] | None:
        """The partials of the hosts with ``parts`` (None: all) and the unreadable hosts
        (``HostPartials.get``), once a background load of the same hosts has finished."""
        self.loads.wait((run.name, tuple(hosts)))
        return self.partials.get(run, hosts, self.progress, parts)

    def views(self, run: Run, hosts: Sequence[str], few_planes: bool = False,
              parts: frozenset[str] | None = None) -> HostViews:
        """The hosts as a reader typed on ``StoreView`` reads them, chosen up front: a pod's
        per-host partials when every host has one (an XSpace pod: no store loaded), else the
        stores (``stores_tolerant``: unreadable hosts of several skipped and named). ``parts``:
        what the reader reads of a partial beyond its header (analyses/partials.py ``Parts``;
        None: every part, as the tools do)."""
        got = self.host_partials(run, hosts, parts) if len(hosts) > 1 else None
        if got is not None:
            return HostViews(got[0], got[1], partials=True)
        stores, host_errors = self.stores_tolerant(run, hosts, few_planes)
        return HostViews(stores, host_errors, partials=False)

    # --- tools ----------------------------------------------------------------------------
    def tool(self, name: str) -> Tool:
        from tbprof.service import tools as registry

        tool = registry.get(name)
        if tool is None:
            raise NotFound(f"unknown tool {name!r}; tools: {sorted(t.name for t in registry.all_tools())}")
        return tool

    def candidate_tools(self, run: Run) -> list[str]:
        """The tools offered for runs of its kind: those whose needs are among the kind's traits."""
        from tbprof.service import tools as registry

        return [t.name for t in registry.offered(run.traits)]

    def tools(self, run: Run) -> list[str]:
        """Tools with data for the run (loads its stores)."""
        from tbprof.service import tools as registry

        candidates = set(self.candidate_tools(run))
        parts = self.host_partials(run, list(run.hosts)) if len(run.hosts) > 1 else None
        if parts is not None:  # a pod: what its workers found, without loading its stores
            found = {name for p in parts[0] for name in p.available_tools or ()}
            return [t.name for t in registry.all_tools() if t.name in candidates and t.name in found]
        if len(run.hosts) > 1:
            self.prepare(run, list(run.hosts), self.progress)
        stores = [self.store(run, h) for h in run.hosts]
        names = [t.name for t in registry.all_tools() if t.name in candidates and any(t.available(s) for s in stores)]
        self.warmups.used(stores)
        return names

    def _result_key(self, run: Run, hosts: Sequence[str], tool: Tool,
                    raw_options: Mapping[str, str]) -> tuple[Hashable | None, dict[str, Any]]:
        """The memo key of a tool's result (None: an option value that cannot be a key, never
        from HTTP: strings) and its parsed options; refuses what the tool cannot answer."""
        if len(hosts) > 1 and not tool.multi_host_for(run.traits):
            raise BadParameter(f"tool {tool.name!r} shows one host at a time; choose host= one of {sorted(run.hosts)}")
        if not tool.offered_for(run.traits):
            raise NoData(f"tool {tool.name!r} has no data for run {run.name!r} (a {run.kind} run)")
        fmt = self.store_format(run)
        options = tool.parse_options(raw_options)
        keys = tuple(cache_key(run.hosts[h], fmt) for h in hosts)
        memo_key = ("result", keys, tool.name, tuple(sorted(options.items(), key=lambda kv: kv[0])))
        try:
            hash(memo_key)
        except TypeError:
            return None, options
        return memo_key, options

    def compute(self, run: Run, hosts: Sequence[str], tool: Tool,
                raw_options: Mapping[str, str]) -> dict[str, Any]:
        """The tool's result for the hosts, memoised (``computed``)."""
        return self.computed(run, hosts, tool, raw_options)[0]

    def computed(self, run: Run, hosts: Sequence[str], tool: Tool, raw_options: Mapping[str, str]) -> Computed:
        """The tool's result and its memo key (None: not memoised), under which an edge may keep
        the result's encoding (http/responses.py ``memoised_json``)."""
        memo_key, options = self._result_key(run, hosts, tool, raw_options)

        def compute() -> dict[str, Any]:
            # Chosen up front: a tool typed on what a partial holds (``compute_partials``) reads
            # the hosts as ``views`` gives them; any other tool, the stores.
            if tool.compute_partials is not None:
                views = self.views(run, hosts, few_planes=tool.few_planes)
            else:
                views = HostViews(*self.stores_tolerant(run, hosts, few_planes=tool.few_planes), partials=False)
            if views.partials and tool.compute_partials is not None:
                result = tool.compute_partials(views.hosts, options)
            else:
                result = tool.compute(views.hosts, options)
                self.warmups.used(views.hosts)
            if views.host_errors:
                # One broken host file among good ones: analyse the good ones, name the broken one.
                result = {**result, "host_errors": views.host_errors}
            return result

        return (compute() if memo_key is None else self._results.get(memo_key, compute)), memo_key
