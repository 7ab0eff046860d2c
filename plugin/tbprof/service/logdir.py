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
from pathlib import Path

from tbprof.readers.files import profile_file_names
from tbprof.readers.kinds import DETECTORS, XPLANE_SUFFIX, Run

__all__ = ["Run", "RunIndex", "discover", "runs_for_path"]


def discover(logdir: Path) -> dict[str, Run]:
    """Walks ``logdir`` (following no symlinked folders out of it) and returns runs by name."""
    runs: dict[str, Run] = {}
    logdir = logdir.resolve()
    if not logdir.is_dir():
        return runs
    for root, dirs, files in os.walk(logdir, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        folder = Path(root)
        names = profile_file_names(folder, sorted(files), logdir)  # no FIFOs, no links out of the logdir
        for detector in DETECTORS:
            for run in detector(folder, names, logdir):
                # A later detector may add hosts/files to a run of the same name.
                existing = runs.get(run.name)
                if existing is None:
                    runs[run.name] = run
                elif existing.kind == run.kind:
                    existing.hosts.update(run.hosts)
                else:
                    run.name = f"{run.name} ({run.kind})"
                    runs[run.name] = run
    return runs


def runs_for_path(path: Path) -> dict[str, Run]:
    """Runs of a CLI argument: a logdir, a session folder, or a single profile file."""
    path = path.resolve()
    if path.is_file():
        if path.name.endswith(XPLANE_SUFFIX):
            host = path.name[: -len(XPLANE_SUFFIX)]
            return {path.parent.name: Run(path.parent.name, path.parent, "xspace", {host: path},
                                          path.stat().st_mtime)}
        found = {}
        for detector in DETECTORS:
            for run in detector(path.parent, [path.name], path.parent):
                found[run.name] = run
        return found
    return discover(path)


class RunIndex:
    """Discovered runs of a logdir, re-walked at most every ``ttl_s`` seconds (new sessions
    written by a capture or a training job show up without a restart)."""

    def __init__(self, logdir: Path, ttl_s: float = 2.0, miss_refresh_s: float = 1.0) -> None:
        self.logdir = logdir
        self.ttl_s = ttl_s
        # An unknown run name re-walks the logdir at most this often: a flood of requests for
        # made-up names must not keep the index lock busy walking a large logdir.
        self.miss_refresh_s = miss_refresh_s
        self._runs: dict[str, Run] = {}
        self._at = -1e9
        self._lock = threading.Lock()

    def runs(self, refresh: bool = False) -> dict[str, Run]:
        with self._lock:
            if refresh or time.monotonic() - self._at > self.ttl_s:
                self._runs = runs_for_path(self.logdir) if self.logdir.exists() else {}
                self._at = time.monotonic()
            return self._runs

    def get(self, name: str) -> Run | None:
        run = self.runs().get(name)
        if run is None and time.monotonic() - self._at >= self.miss_refresh_s:
            run = self.runs(refresh=True).get(name)
        return run
