"""The one table of run kinds: which files make a run of which kind, and which reader decodes them.

A file's kind comes from the one detector, ``readers/sniff.file_kind`` (by content; the name
only as a hint), and a run is a folder's worth of host files of one kind:

* ``xspace``: XSpace protobufs, ``<logdir>/<tb run>/plugins/profile/<session>/<host>.xplane.pb``
  in XProf's layout (or under another name whose bytes are an XSpace);
* ``chrome_trace``: Chrome traces that are none of the kinds below, but for a host that has an
  xplane beside it (the xplane says more);
* ``tf1_timeline``: Chrome trace JSON of TF1 graph sessions (``tensorflow.python.client.timeline``,
  e.g. ``timeline-<step>.json`` as ``tf.estimator.ProfilerHook`` writes it; also a plain Chrome
  trace named ``*timeline*.json`` or ``*.ctf.json``); each file is one step (a host);
* ``tfprof_timeline``: tfprof's ``with_timeline_output`` files, ``<name>timeline<...>.json_<step>``;
* ``tfprof``: tfprof ``ProfileProto`` files, ``profile.pb`` (``Profiler.serialize_to_string()``
  saved by the user) and ``profile_<step>`` (``ProfileContext`` dumps);
* ``pytorch``: Kineto traces under any name (``tensorboard_trace_handler``'s
  ``*.pt.trace.json[.gz]``, ``export_chrome_trace("trace.json")``, ``rank-0.json.gz``, ...), and
  a plain Chrome trace named ``*.pt.trace.json[.gz]``; one host per file.

Run names: XSpace and Chrome-trace sessions are ``<tb run>/<session>``; the other kinds
(``RunKind.runs == "folder"``) are named after their folder, and when a folder holds several
kinds, the first in ``KINDS`` order keeps the plain name and the others get `` (<kind>)``.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from tbprof.fs import Location, is_below, relative_posix
from tbprof.readers.sniff import CHROME_TRACE, XPLANE_SUFFIX, file_kind
from tbprof.readers.step_files import host_order_key
from tbprof.store.traits import Trait

__all__ = ["DETECTORS", "KINDS", "XPLANE_SUFFIX", "Detector", "Run", "RunKind", "folder_runs", "format_traits"]


@dataclass
class Run:
    name: str
    path: Location  # the session folder (or file) that holds the hosts' files (local or a URL)
    kind: str  # a key of KINDS
    hosts: dict[str, Location] = field(default_factory=dict)  # host -> file
    mtime: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"run": self.name, "kind": self.kind, "hosts": sorted(self.hosts), "mtime": self.mtime}

    @property
    def traits(self) -> frozenset[Trait]:
        """What a run of its kind can hold: a tool is offered where its needs are among these."""
        return KINDS[self.kind].traits


Reader = Callable[[Location], Any]
Streamer = Callable[..., Any]


@dataclass(frozen=True)
class RunKind:
    store_format: str  # the store model the reader fills ("xspace", "chrome_trace", "tfprof")
    reader_name: str  # "module:function" of the reader of one host file
    # What its files can hold (store/traits.py): the tools offered for its runs are those whose
    # needs are among these, decided before a file is read.
    traits: frozenset[Trait]
    # "module:function" converting a file larger than memory into a disk-cache entry:
    # ``(path, disk, key, budget_bytes) -> store`` (None: this format cannot stream).
    streamer_name: str | None = None
    # "module:function" of a reader that decodes each plane's event stats on first use (for a tool
    # that reads few planes: ``Tool.few_planes``); None: the format has none.
    lazy_reader_name: str | None = None
    # "session": XProf's ``<tb run>/<session>`` folders (the XSpace and Chrome-trace runs);
    # "folder": a run per kind found in a folder, named after it (the first such kind in
    # ``KINDS`` order keeps the plain name).
    runs: Literal["session", "folder"] = "session"
    # Its files are steps of one program (a file per step): hosts ordered by the step in the
    # name; otherwise ranks or hosts, by their numbers in reading order.
    hosts_are_steps: bool = False
    # A module its reader imports only once the file is read and scanned (protobuf's generated
    # messages, for the small parts): ``import_parser`` lets a caller import it meanwhile, while
    # the read and the scan run outside the GIL, instead of before the conversion starts.
    parser_module_name: str | None = None

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

    def import_parser(self) -> None:
        if self.parser_module_name is not None:
            importlib.import_module(self.parser_module_name)

    @property
    def streamer(self) -> Streamer | None:
        """The streaming converter, imported when it is called (most files never need it)."""
        return None if self.streamer_name is None else functools.partial(_call, self.streamer_name)


def _resolve(name: str) -> Any:
    module, attr = name.split(":")
    return getattr(importlib.import_module(module), attr)


def _call(name: str, *args: Any) -> Any:
    return _resolve(name)(*args)


_XSPACE = "tbprof.readers.xplane:read_xspace"
_CHROME = "tbprof.readers.chrome_trace:read_chrome_trace"
_CHROME_STREAM = "tbprof.readers.chrome_stream:stream_chrome_trace"
# A TF1 session's timeline: its graph's ops and allocators, a file per step.
_TF1: frozenset[Trait] = frozenset({"events", "framework_ops", "memory", "step_files", "tf1"})
KINDS: dict[str, RunKind] = {
    "xspace": RunKind("xspace", _XSPACE,
                      frozenset({"events", "framework_ops", "memory", "step_markers", "devices", "xplane", "hlo"}),
                      "tbprof.readers.xplane_stream:stream_xspace", "tbprof.readers.xplane:read_xspace_lazily",
                      parser_module_name="tbprof.protos.xplane_pb2"),
    # A Chrome trace of no known producer: a timeline, perhaps a TF1 session's.
    "chrome_trace": RunKind("chrome_trace", _CHROME, frozenset({"events", "tf1"}), _CHROME_STREAM),
    # The folder-named kinds, in the order that decides which keeps a shared folder's plain name.
    "tf1_timeline": RunKind("chrome_trace", _CHROME, _TF1, _CHROME_STREAM, runs="folder", hosts_are_steps=True),
    "pytorch": RunKind("chrome_trace", _CHROME,
                       frozenset({"events", "framework_ops", "memory", "step_markers", "devices", "kineto"}),
                       _CHROME_STREAM, runs="folder"),
    "tfprof": RunKind("tfprof", "tbprof.readers.tfprof:read_tfprof", frozenset({"tfprof"}), runs="folder",
                      hosts_are_steps=True),
    "tfprof_timeline": RunKind("chrome_trace", _CHROME, _TF1, _CHROME_STREAM, runs="folder", hosts_are_steps=True),
}


def format_traits(store_format: str) -> frozenset[Trait]:
    """What a store of ``store_format`` can hold: the traits of every kind read into it (for a
    store met without its run, e.g. a pod's host converted by a worker)."""
    return frozenset(t for kind in KINDS.values() if kind.store_format == store_format for t in kind.traits)


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


def _xspace_runs(folder: Location, kinds: dict[str, tuple[str, str]], logdir: Location) -> list[Run]:
    hosts = {host: folder / f for f, (kind, host) in kinds.items() if kind == "xspace"}
    if not hosts:
        return []
    return [Run(name=_session_name(folder, logdir), path=folder, kind="xspace", hosts=dict(sorted(hosts.items())),
                mtime=_mtime(hosts))]


def _chrome_trace_runs(folder: Location, kinds: dict[str, tuple[str, str]], logdir: Location) -> list[Run]:
    """Chrome traces that are no other kind, but for a host with an xplane here (the xplane says more)."""
    xplane_hosts = {host for kind, host in kinds.values() if kind == "xspace"}
    hosts: dict[str, Location] = {}
    for f, (kind, host) in kinds.items():
        if kind == CHROME_TRACE and host not in xplane_hosts and host not in hosts:
            hosts[host] = folder / f
    if not hosts:
        return []
    return [Run(name=_session_name(folder, logdir), path=folder, kind="chrome_trace",
                hosts=dict(sorted(hosts.items())), mtime=_mtime(hosts))]


def _folder_runs_by_kind(folder: Location, kinds: dict[str, tuple[str, str]], root: Location) -> list[Run]:
    """The folder-named kinds (TF1 timelines, tfprof files, PyTorch traces): one run per kind
    found in the folder."""
    by_kind: dict[str, dict[str, Location]] = {}
    for name, (kind, host) in kinds.items():
        if KINDS[kind].runs == "folder":
            by_kind.setdefault(kind, {})[host] = folder / name
    if not by_kind:
        return []
    rel = relative_posix(folder, root) if folder != root else ""
    base = rel or folder.name
    runs: list[Run] = []
    for kind in KINDS:
        hosts = by_kind.get(kind)
        if not hosts:
            continue
        name = base if not runs else f"{base} ({kind})"
        order = functools.partial(host_order_key, KINDS[kind].hosts_are_steps)
        ordered = {h: hosts[h] for h in sorted(hosts, key=order)}
        runs.append(Run(name=name, path=folder, kind=kind, hosts=ordered, mtime=_mtime(ordered)))
    return runs


def folder_runs(folder: Location, files: list[str], logdir: Location) -> list[Run]:
    """The runs of one folder: each file's kind from the one detector (``sniff.file_kind``),
    then XSpace sessions, Chrome-trace sessions and the step-file kinds, in that order."""
    kinds = {name: found for name in files if (found := file_kind(folder, name)) is not None}
    return [*_xspace_runs(folder, kinds, logdir), *_chrome_trace_runs(folder, kinds, logdir),
            *_folder_runs_by_kind(folder, kinds, logdir)]


# A detector looks at one folder (path, its file names, the logdir) and returns runs.
Detector = Callable[[Location, list[str], Location], list[Run]]
DETECTORS: tuple[Detector, ...] = (folder_runs,)
