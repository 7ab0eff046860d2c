"""The one table of run kinds: which files make a run of which kind, and which reader decodes them.

A run is a folder's worth of host files of one kind:

* ``xspace``: ``<logdir>/<tb run>/plugins/profile/<session>/<host>.xplane.pb`` (XProf's layout);
* ``chrome_trace``: ``<host>.trace.json(.gz)`` whose host has no xplane beside it, and any
  other ``.json(.gz)`` whose content is a Chrome trace (``readers/sniff.py``);
* ``tf1_timeline``: Chrome trace JSON of TF1 graph sessions, ``timeline-<step>.json`` as
  ``tf.estimator.ProfilerHook`` writes it, any ``*timeline*.json`` from
  ``tensorflow.python.client.timeline`` and ``*.ctf.json``; each file is one step (a host);
* ``tfprof_timeline``: tfprof's ``with_timeline_output`` files, ``<name>timeline<...>.json_<step>``;
* ``tfprof``: tfprof ``ProfileProto`` files, ``profile.pb`` (``Profiler.serialize_to_string()``
  saved by the user) and ``profile_<step>`` (``ProfileContext`` dumps);
* ``pytorch``: any ``.json(.gz)`` whose content is a Kineto trace (``tensorboard_trace_handler``'s
  ``*.pt.trace.json[.gz]``, ``export_chrome_trace("trace.json")``, ``rank-0.json.gz``, ...; found by
  ``readers/sniff.py``), and ``*.pt.trace.json[.gz]`` by name; one host per file.

Run names: XSpace and Chrome-trace sessions are ``<tb run>/<session>``; the other kinds are
named after their folder, and when a folder holds several kinds, the first in
``step_files.KIND_ORDER`` keeps the plain name and the others get `` (<kind>)``.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tbprof.fs import Location, is_below, relative_posix
from tbprof.readers.sniff import CHROME_TRACE, KINETO, sniff
from tbprof.readers.step_files import KIND_ORDER, classify, host_order_key, json_host

XPLANE_SUFFIX = ".xplane.pb"
CHROME_TRACE_SUFFIXES = (".trace.json.gz", ".trace.json")


@dataclass
class Run:
    name: str
    path: Location  # the session folder (or file) that holds the hosts' files (local or a URL)
    kind: str  # a key of KINDS
    hosts: dict[str, Location] = field(default_factory=dict)  # host -> file
    mtime: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"run": self.name, "kind": self.kind, "hosts": sorted(self.hosts), "mtime": self.mtime}


Reader = Callable[[Location], Any]
Streamer = Callable[..., Any]


@dataclass(frozen=True)
class RunKind:
    store_format: str  # the store model the reader fills ("xspace", "chrome_trace", "tfprof")
    reader_name: str  # "module:function" of the reader of one host file
    # "module:function" converting a file larger than memory into a disk-cache entry:
    # ``(path, disk, key, budget_bytes) -> store`` (None: this format cannot stream).
    streamer_name: str | None = None
    # "module:function" of a reader that decodes each plane's event stats on first use (for a tool
    # that reads few planes: ``Tool.few_planes``); None: the format has none.
    lazy_reader_name: str | None = None

    @property
    def reader(self) -> Reader:
        """The reader, imported on first use: answering from cached stores (``tbprof summary``
        of a converted profile, a warm server) never loads a reader or protobuf."""
        reader: Reader = _resolve(self.reader_name)
        return reader

    @property
    def lazy_reader(self) -> Reader | None:
        if self.lazy_reader_name is None:
            return None
        reader: Reader = _resolve(self.lazy_reader_name)
        return reader

    @property
    def streamer(self) -> Streamer | None:
        """The streaming converter, imported when it is called (most files never need it)."""
        return None if self.streamer_name is None else functools.partial(_call, self.streamer_name)


def _resolve(name: str) -> Any:
    module, attr = name.split(":")
    return getattr(importlib.import_module(module), attr)


def _call(name: str, *args: Any) -> Any:
    return _resolve(name)(*args)


_CHROME = "tbprof.readers.chrome_trace:read_chrome_trace"
_CHROME_STREAM = "tbprof.readers.chrome_stream:stream_chrome_trace"
KINDS: dict[str, RunKind] = {
    "xspace": RunKind("xspace", "tbprof.readers.xplane:read_xspace", "tbprof.readers.xplane_stream:stream_xspace",
                      "tbprof.readers.xplane:read_xspace_lazily"),
    "chrome_trace": RunKind("chrome_trace", _CHROME, _CHROME_STREAM),
    "tf1_timeline": RunKind("chrome_trace", _CHROME, _CHROME_STREAM),
    "tfprof_timeline": RunKind("chrome_trace", _CHROME, _CHROME_STREAM),
    "pytorch": RunKind("chrome_trace", _CHROME, _CHROME_STREAM),
    "tfprof": RunKind("tfprof", "tbprof.readers.tfprof:read_tfprof"),
}


def _mtime(hosts: dict[str, Location]) -> float:
    return max((p.stat().st_mtime for p in hosts.values() if p.exists()), default=0.0)


def _run_prefix(path: Location, logdir: Location) -> str:
    rel = relative_posix(path, logdir)
    return "" if rel == "." else rel


def _session_name(folder: Location, logdir: Location) -> str:
    """``<tb run>/<session>`` for XProf's ``plugins/profile/<session>`` folders, else the folder."""
    parent = folder.parent
    if parent.name == "profile" and parent.parent.name == "plugins" and is_below(parent.parent.parent, logdir):
        prefix = _run_prefix(parent.parent.parent, logdir)
        return f"{prefix}/{folder.name}" if prefix else folder.name
    return _run_prefix(folder, logdir) or folder.name


def xspace_runs(folder: Location, files: list[str], logdir: Location) -> list[Run]:
    hosts = {f[: -len(XPLANE_SUFFIX)]: folder / f for f in files if f.endswith(XPLANE_SUFFIX)}
    if not hosts:
        return []
    return [Run(name=_session_name(folder, logdir), path=folder, kind="xspace", hosts=dict(sorted(hosts.items())),
                mtime=_mtime(hosts))]


_JSON_ENDINGS = (".json", ".json.gz")


def _is_json_name(name: str) -> bool:
    return name.endswith(_JSON_ENDINGS)


def classify_file(folder: Location, name: str) -> tuple[str, str] | None:
    """(run kind, host) of a step-file kind (TF1 timeline, tfprof, PyTorch), or None.

    A JSON file whose content is a Kineto trace is a PyTorch run whatever its name
    (``trace.json``, ``rank-0.json.gz``, ``x.trace.json.gz``); the other kinds are known by the
    names their producers always write (``timeline-<step>.json``, ``profile_<step>``, ...).
    """
    if _is_json_name(name) and sniff(folder / name) == KINETO:
        return "pytorch", json_host(name)
    return classify(name)


def chrome_trace_runs(folder: Location, files: list[str], logdir: Location) -> list[Run]:
    """Chrome traces that are no other kind: ``<host>.trace.json(.gz)`` whose host has no xplane
    here (the xplane says more), and any other ``.json(.gz)`` whose content is a Chrome trace."""
    xplane_hosts = {f[: -len(XPLANE_SUFFIX)] for f in files if f.endswith(XPLANE_SUFFIX)}
    hosts: dict[str, Location] = {}
    for f in files:
        if not _is_json_name(f):
            continue
        host = json_host(f)
        if host in xplane_hosts or host in hosts or classify(f) is not None:
            continue
        found = sniff(folder / f)
        # An unreadable or garbled file with a trace's name stays a run: opening it says what is wrong.
        named_trace = f.endswith(CHROME_TRACE_SUFFIXES) and len(f) > len(".trace.json")
        if found == CHROME_TRACE or (found is None and named_trace):
            hosts[host] = folder / f
    if not hosts:
        return []
    return [Run(name=_session_name(folder, logdir), path=folder, kind="chrome_trace",
                hosts=dict(sorted(hosts.items())), mtime=_mtime(hosts))]


def step_file_runs(folder: Location, files: list[str], root: Location) -> list[Run]:
    """TF1 timelines, tfprof files and PyTorch traces: one run per kind found in the folder."""
    by_kind: dict[str, dict[str, Location]] = {}
    for name in files:
        found = classify_file(folder, name)
        if found is not None:
            kind, host = found
            by_kind.setdefault(kind, {})[host] = folder / name
    if not by_kind:
        return []
    rel = relative_posix(folder, root) if folder != root else ""
    base = rel or folder.name
    runs: list[Run] = []
    for kind in KIND_ORDER:
        hosts = by_kind.get(kind)
        if not hosts:
            continue
        name = base if not runs else f"{base} ({kind})"
        ordered = {h: hosts[h] for h in sorted(hosts, key=functools.partial(host_order_key, kind))}
        runs.append(Run(name=name, path=folder, kind=kind, hosts=ordered, mtime=_mtime(ordered)))
    return runs


# A detector looks at one folder (path, its file names, the logdir) and returns runs; run in
# this order, so a later detector's run of an existing name and kind adds its hosts to it.
Detector = Callable[[Location, list[str], Location], list[Run]]
DETECTORS: tuple[Detector, ...] = (xspace_runs, chrome_trace_runs, step_file_runs)
