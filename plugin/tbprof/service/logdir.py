"""Finds runs in a logdir: every ``plugins/profile/<session>/`` holding profile files.

Run name: the TensorBoard run path below the logdir plus the session, e.g.
``keras_cnn/train/2026_11_26_00_33_56``; each file stem is a host (``vm`` for
``vm.xplane.pb``). Run names are only ever looked up in the discovered map, never joined
onto a path, so a request cannot name a file outside the logdir.

Which files make a run of which kind is ``readers/kinds.py``'s table; this module walks.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from tbprof.readers.files import profile_file_names
from tbprof.readers.kinds import DETECTORS, XPLANE_SUFFIX, Run
from tbprof.store.fs import Location, UrlPath, relative_posix, shown_name, walk_listing

__all__ = ["Run", "RunIndex", "discover", "runs_for_path", "shown_name"]


def _folders(logdir: Location) -> Iterator[tuple[Location, list[str]]]:
    """(folder, its file names) below ``logdir``: ``os.walk`` locally (following no symlinked
    folders out of it), one recursive listing for a URL."""
    if isinstance(logdir, UrlPath):
        yield from walk_listing(logdir).items()
        return
    for root, dirs, files in os.walk(logdir, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        folder = Path(root)
        yield folder, profile_file_names(folder, sorted(files), logdir)  # no FIFOs, no links out


def discover(logdir: Location) -> dict[str, Run]:
    """Walks ``logdir`` and returns runs by name."""
    runs: dict[str, Run] = {}
    logdir = logdir.resolve()
    if isinstance(logdir, Path) and not logdir.is_dir():
        return runs  # (a URL's listing below simply finds nothing: no extra request to ask first)
    for folder, files in _folders(logdir):
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
    parentheses, so neither hides the other (issue #25).
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


def runs_for_path(path: Location) -> dict[str, Run]:
    """Runs of a CLI argument: a logdir, a session folder, or a single profile file."""
    path = path.resolve()
    if isinstance(path, UrlPath):
        # The listing first (one request); only a URL with nothing below it may be a file.
        runs = discover(path)
        if runs or not path.is_file():
            return runs
    if path.is_file():
        if path.name.endswith(XPLANE_SUFFIX):
            host = path.name[: -len(XPLANE_SUFFIX)]
            run = _displayable(Run(path.parent.name, path.parent, "xspace", {host: path}, path.stat().st_mtime))
            return {run.name: run}
        found: dict[str, Run] = {}
        for detector in DETECTORS:
            for run in detector(path.parent, [path.name], path.parent):
                _add_run(found, _displayable(run), path.parent)
        return found
    return discover(path)


# Object stores bill and rate-limit list requests (GCS: ~1000 a minute), so a URL logdir is
# listed at most every 30 s (one recursive listing each time); a local walk every 2 s.
LOCAL_TTL_S = 2.0
URL_TTL_S = float(os.environ.get("TBPROF_LIST_INTERVAL_S", "30"))
MIN_REFRESH_S = 1.0


class RunIndex:
    """Discovered runs of a logdir, re-walked at most every ``ttl_s`` seconds (new sessions
    written by a capture or a training job show up without a restart)."""

    def __init__(self, logdir: Location, ttl_s: float | None = None, miss_refresh_s: float = 1.0) -> None:
        self.logdir = logdir
        self.ttl_s = ttl_s if ttl_s is not None else (URL_TTL_S if isinstance(logdir, UrlPath) else LOCAL_TTL_S)
        # An unknown run name re-walks the logdir at most this often: a flood of requests for
        # made-up names must not keep the index lock busy walking a large logdir.
        self.miss_refresh_s = miss_refresh_s
        self._runs: dict[str, Run] = {}
        self._at = -1e9
        self._lock = threading.Lock()

    def runs(self, refresh: bool = False) -> dict[str, Run]:
        with self._lock:
            age_s = time.monotonic() - self._at
            # A forced refresh of a URL (a request naming a run not yet seen) still waits
            # MIN_REFRESH_S, so requests for unknown runs cannot turn into a listing storm.
            is_url = isinstance(self.logdir, UrlPath)
            if age_s > self.ttl_s or (refresh and (not is_url or age_s > min(self.ttl_s, MIN_REFRESH_S))):
                self._runs = runs_for_path(self.logdir) if is_url or self.logdir.exists() else {}
                self._at = time.monotonic()
            return self._runs

    def get(self, name: str) -> Run | None:
        run = self.runs().get(name)
        if run is None and time.monotonic() - self._at >= self.miss_refresh_s:
            run = self.runs(refresh=True).get(name)
        return run
