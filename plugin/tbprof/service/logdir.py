"""Finds runs in a logdir: every ``plugins/profile/<session>/`` holding profile files.

Run name: the TensorBoard run path below the logdir plus the session, e.g.
``keras_cnn/train/2026_11_26_00_33_56``; each file stem is a host (``vm`` for
``vm.xplane.pb``). Run names are only ever looked up in the discovered map, never joined
onto a path, so a request cannot name a file outside the logdir.

Which files make a run of which kind is ``readers/kinds.py``'s table; this module walks.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from tbprof.fs import Location, UrlPath, relative_posix, shown_name, walk_listing
from tbprof.readers.files import profile_file_names
from tbprof.readers.kinds import DETECTORS, Run

__all__ = ["FolderCache", "Run", "RunIndex", "discover", "runs_for_path", "shown_name"]

log = logging.getLogger("tbprof")


class FolderCache:
    """What a local walk learnt of each folder, keyed by the folder's (mtime, ctime, inode): a
    folder whose entries did not change since the last walk is not listed again, nor are its
    files inspected again (a logdir of 20 000 runs is ~80 000 folders: the next walk is one
    ``stat`` each). Entries of folders no longer reached are dropped after each walk, and at
    most ``MAX_FOLDERS`` are kept (the first reached; a folder past them is listed each walk)."""

    MAX_FOLDERS = 200_000

    def __init__(self) -> None:
        self._folders: dict[str, tuple[tuple[int, int, int], list[str], list[str]]] = {}

    def walk(self, logdir: Path) -> Iterator[tuple[Path, list[str]]]:
        """(folder, its profile file names), top-down with sorted sub-folders, as ``os.walk``
        (hidden folders skipped, symlinked folders not entered)."""
        reached: dict[str, tuple[tuple[int, int, int], list[str], list[str]]] = {}
        stack = [str(logdir)]
        while stack:
            folder = stack.pop()
            try:
                st = os.stat(folder)
            except OSError:
                continue
            stamp = (st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            known = self._folders.get(folder)
            if known is not None and known[0] == stamp:
                subdirs, files = known[1], known[2]
            else:
                subdirs, names = [], []
                try:
                    with os.scandir(folder) as it:
                        for entry in it:
                            try:
                                is_dir = entry.is_dir()
                            except OSError:
                                is_dir = False
                            if not is_dir:
                                names.append(entry.name)
                            elif not entry.name.startswith(".") and not entry.is_symlink():
                                subdirs.append(entry.name)
                except OSError:
                    continue
                subdirs.sort()
                files = profile_file_names(Path(folder), sorted(names), logdir)  # no FIFOs, no links out
            if len(reached) < self.MAX_FOLDERS:
                reached[folder] = (stamp, subdirs, files)
            if files:  # a folder without profile files holds no run (most of them: a run's parents)
                yield Path(folder), files
            stack.extend(os.path.join(folder, d) for d in reversed(subdirs))
        self._folders = reached


def _folders(logdir: Location, cache: FolderCache | None = None) -> Iterator[tuple[Location, list[str]]]:
    """(folder, its file names) below ``logdir``: a walk locally (following no symlinked
    folders out of it), one recursive listing for a URL."""
    if isinstance(logdir, UrlPath):
        yield from walk_listing(logdir).items()
        return
    yield from (cache or FolderCache()).walk(logdir)


def discover(logdir: Location, cache: FolderCache | None = None) -> dict[str, Run]:
    """Walks ``logdir`` and returns runs by name (``cache``: what an earlier walk learnt)."""
    runs: dict[str, Run] = {}
    logdir = logdir.resolve()
    if isinstance(logdir, Path) and not logdir.is_dir():
        return runs  # (a URL's listing below simply finds nothing: no extra request to ask first)
    for folder, files in _folders(logdir, cache):
        for detector in DETECTORS:
            for run in detector(folder, files, logdir):
                _add_run(runs, _displayable(run), logdir)
    return runs


def _displayable(run: Run) -> Run:
    run.name = shown_name(run.name)
    if any(shown_name(h) != h for h in run.hosts):
        run.hosts = {shown_name(h): path for h, path in run.hosts.items()}
    return run


def _add_run(runs: dict[str, Run], run: Run, logdir: Location) -> None:
    """Adds ``run`` under a name no other run has.

    A later detector may add hosts/files to the run of the same name, kind and folder. Another
    folder can produce the same name (``a/s1/vm.xplane.pb`` beside XProf's session
    ``a/plugins/profile/s1/``, both "a/s1"): it gets its folder below the logdir in
    parentheses, so neither hides the other.
    """
    existing = runs.get(run.name)
    if existing is None:
        runs[run.name] = run
        return
    if existing.kind == run.kind and existing.path == run.path:
        existing.hosts.update(run.hosts)
        return
    if existing.path == run.path:
        base = f"{run.name} ({run.kind})"
    else:
        rel = shown_name(relative_posix(run.path, logdir))
        base = f"{run.name} ({'folder ' + rel if rel == run.name else rel})"
    name, n = base, 2
    while name in runs:
        name, n = f"{base} #{n}", n + 1
    run.name = name
    runs[name] = run


def runs_for_path(path: Location, cache: FolderCache | None = None) -> dict[str, Run]:
    """Runs of a CLI argument: a logdir, a session folder, or a single profile file."""
    path = path.resolve()
    if isinstance(path, UrlPath):
        # The listing first (one request); only a URL with nothing below it may be a file.
        runs = discover(path)
        if runs or not path.is_file():
            return runs
    if path.is_file():  # the folder's detector, on this one file
        found: dict[str, Run] = {}
        for detector in DETECTORS:
            for run in detector(path.parent, [path.name], path.parent):
                _add_run(found, _displayable(run), path.parent)
        return found
    return discover(path, cache)


# Object stores bill and rate-limit list requests (GCS: ~1000 a minute), so a URL logdir is
# listed at most every 30 s (one recursive listing each time); a local walk every 2 s.
LOCAL_TTL_S = 2.0
URL_TTL_S = float(os.environ.get("TBPROF_LIST_INTERVAL_S", "30"))
MIN_REFRESH_S = 1.0


class RunIndex:
    """Discovered runs of a logdir, listed again when ``ttl_s`` seconds old (new sessions written
    by a capture or a training job show up without a restart).

    Listing a large logdir takes seconds (20 000 runs), so it happens outside the requests: a
    request reads the last complete listing and, when that is stale, starts one listing in a
    background thread (requests never wait behind it). Only the first listing, and a forced
    refresh (``refresh=1``, or a request naming a run not yet seen), wait for one; forced
    refreshes run at most once per ``MIN_REFRESH_S`` (others get the last listing), and every
    waiter shares the listing in flight. A local walk is incremental (``FolderCache``)."""

    def __init__(self, logdir: Location, ttl_s: float | None = None, miss_refresh_s: float = 1.0) -> None:
        self.logdir = logdir
        self.ttl_s = ttl_s if ttl_s is not None else (URL_TTL_S if isinstance(logdir, UrlPath) else LOCAL_TTL_S)
        # An unknown run name re-walks the logdir at most this often: a flood of requests for
        # made-up names must not keep a walk of a large logdir running.
        self.miss_refresh_s = miss_refresh_s
        self._runs: dict[str, Run] = {}
        self._sorted_of: dict[str, Run] | None = None  # the listing _sorted was sorted from
        self._sorted: list[Run] = []
        self._at = -1e9  # when the last complete listing started
        self._forced_at = -1e9
        self._lock = threading.Lock()
        self._walking: threading.Event | None = None
        self._error: Exception | None = None
        self._folder_cache = FolderCache()
        self.listings = 0  # completed listings (tests, benchmarks)

    def runs(self, refresh: bool = False, fresh: bool = False) -> dict[str, Run]:
        """The last complete listing (see the class). ``fresh``: a listing started after this
        call, not rate-limited (the server itself, e.g. after a capture wrote a session)."""
        if fresh:
            return self._fresh()
        now = time.monotonic()
        with self._lock:
            age_s = now - self._at
            # A forced refresh of a URL also waits for MIN_REFRESH_S of age: a listing request.
            force = refresh and now - self._forced_at >= MIN_REFRESH_S and (
                not isinstance(self.logdir, UrlPath) or age_s > min(self.ttl_s, MIN_REFRESH_S))
            if force:
                self._forced_at = now
            wait = force or self.listings == 0  # nothing listed yet (or the first listing failed)
            event, start = self._walking, False
            if event is None and (wait or age_s > self.ttl_s):
                event = self._walking = threading.Event()
                start = True
        if start:
            assert event is not None
            if wait:  # the caller waits anyway: list in its own thread (a CLI starts no thread)
                self._list(event)
            else:
                threading.Thread(target=self._list, args=(event,), name="tbprof-list", daemon=True).start()
        elif wait and event is not None:
            event.wait()
        with self._lock:
            if self.listings == 0 and self._error is not None:
                raise self._error  # the first listing failed (a missing bucket): say so
            return self._runs

    def _fresh(self) -> dict[str, Run]:
        while True:
            with self._lock:
                event = self._walking
                if event is None:
                    event = self._walking = threading.Event()
                    break
            event.wait()  # a listing that started before this call: wait, then list anew
        self._list(event)
        with self._lock:
            if self._error is not None:
                raise self._error
            return self._runs

    def _list(self, event: threading.Event) -> None:
        started = time.monotonic()
        try:
            is_url = isinstance(self.logdir, UrlPath)
            found = runs_for_path(self.logdir, self._folder_cache) if is_url or self.logdir.exists() else {}
        except Exception as e:  # kept for the waiters; a later listing may succeed
            with self._lock:
                self._error = e
                self._walking = None
                self._at = started
            event.set()
            if self.listings:
                log.warning("tbprof: listing %s failed; showing the last listing (%s)", self.logdir, e)
            return
        with self._lock:
            self._runs, self._at, self._error = found, started, None
            self.listings += 1
            self._walking = None
        event.set()

    def newest_first(self, refresh: bool = False) -> list[Run]:
        """The last listing's runs, newest first (equal times by name). Sorted once per listing
        (a listing is a new dict, never changed), not once per page of a 20,000-run list."""
        listed = self.runs(refresh=refresh)
        with self._lock:
            if self._sorted_of is listed:
                return self._sorted
        ordered = sorted(listed.values(), key=lambda r: (-r.mtime, r.name))
        with self._lock:
            self._sorted_of, self._sorted = listed, ordered
        return ordered

    def get(self, name: str) -> Run | None:
        run = self.runs().get(name)
        if run is None and time.monotonic() - self._at >= self.miss_refresh_s:
            run = self.runs(refresh=True).get(name)
        return run
