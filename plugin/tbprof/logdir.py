"""Finds runs in a logdir: every ``plugins/profile/<session>/`` holding profile files.

Run name: the TensorBoard run path below the logdir plus the session, e.g.
``keras_cnn/train/2026_11_26_00_33_56``; each file stem is a host (``vm`` for
``vm.xplane.pb``). Run names are only ever looked up in the discovered map, never joined
onto a path, so a request cannot name a file outside the logdir.

Other run kinds (TF1 timelines, tfprof, PyTorch traces) register a detector with
``register_detector``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

XPLANE_SUFFIX = ".xplane.pb"


@dataclass
class Run:
    name: str
    path: Path  # the session folder (or file) that holds the hosts' files
    kind: str  # "xspace", ...
    hosts: dict[str, Path] = field(default_factory=dict)  # host -> file
    mtime: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"run": self.name, "kind": self.kind, "hosts": sorted(self.hosts), "mtime": self.mtime}


# A detector looks at one folder (path, its file names, the logdir) and returns runs.
Detector = Callable[[Path, list[str], Path], list[Run]]
_DETECTORS: list[Detector] = []


def register_detector(detector: Detector) -> Detector:
    _DETECTORS.append(detector)
    return detector


def _run_prefix(path: Path, logdir: Path) -> str:
    rel = path.relative_to(logdir).as_posix()
    return "" if rel == "." else rel


def _xspace_detector(folder: Path, files: list[str], logdir: Path) -> list[Run]:
    hosts = {f[: -len(XPLANE_SUFFIX)]: folder / f for f in files if f.endswith(XPLANE_SUFFIX)}
    if not hosts:
        return []
    session = folder.name
    parent = folder.parent
    if parent.name == "profile" and parent.parent.name == "plugins" and parent.parent.parent.is_relative_to(logdir):
        prefix = _run_prefix(parent.parent.parent, logdir)
        name = f"{prefix}/{session}" if prefix else session
    else:
        name = _run_prefix(folder, logdir) or folder.name
    mtime = max((p.stat().st_mtime for p in hosts.values() if p.exists()), default=0.0)
    return [Run(name=name, path=folder, kind="xspace", hosts=dict(sorted(hosts.items())), mtime=mtime)]


register_detector(_xspace_detector)

# Generic Chrome trace JSON runs (readers/chrome_trace.py). PyTorch ``*.pt.trace.json``,
# TF1 ``timeline-<step>.json`` and tfprof files have run kinds of their own (legacy runs).
CHROME_TRACE_SUFFIXES = (".trace.json.gz", ".trace.json")
_NOT_GENERIC_CHROME = (".pt.trace.json.gz", ".pt.trace.json")


def _chrome_trace_detector(folder: Path, files: list[str], logdir: Path) -> list[Run]:
    """``<host>.trace.json(.gz)`` files whose host has no xplane here (the xplane says more)."""
    xplane_hosts = {f[: -len(XPLANE_SUFFIX)] for f in files if f.endswith(XPLANE_SUFFIX)}
    hosts: dict[str, Path] = {}
    for f in files:
        if f.endswith(_NOT_GENERIC_CHROME):
            continue
        for suffix in CHROME_TRACE_SUFFIXES:
            if f.endswith(suffix) and len(f) > len(suffix):
                host = f[: -len(suffix)]
                if host not in xplane_hosts and host not in hosts:
                    hosts[host] = folder / f
                break
    if not hosts:
        return []
    parent = folder.parent
    if parent.name == "profile" and parent.parent.name == "plugins":
        prefix = _run_prefix(parent.parent.parent, logdir)
        name = f"{prefix}/{folder.name}" if prefix else folder.name
    else:
        name = _run_prefix(folder, logdir) or folder.name
    mtime = max((p.stat().st_mtime for p in hosts.values() if p.exists()), default=0.0)
    return [Run(name=name, path=folder, kind="chrome_trace", hosts=dict(sorted(hosts.items())), mtime=mtime)]


register_detector(_chrome_trace_detector)


def discover(logdir: Path) -> dict[str, Run]:
    """Walks ``logdir`` (following no symlinked folders out of it) and returns runs by name."""
    runs: dict[str, Run] = {}
    logdir = logdir.resolve()
    if not logdir.is_dir():
        return runs
    for root, dirs, files in os.walk(logdir, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        folder = Path(root)
        for detector in _DETECTORS:
            for run in detector(folder, sorted(files), logdir):
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
        for detector in _DETECTORS:
            for run in detector(path.parent, [path.name], path.parent):
                found[run.name] = run
        return found
    return discover(path)


class RunIndex:
    """Discovered runs of a logdir, re-walked at most every ``ttl_s`` seconds (new sessions
    written by a capture or a training job show up without a restart)."""

    def __init__(self, logdir: Path, ttl_s: float = 2.0) -> None:
        self.logdir = logdir
        self.ttl_s = ttl_s
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
        if run is None:
            run = self.runs(refresh=True).get(name)
        return run
