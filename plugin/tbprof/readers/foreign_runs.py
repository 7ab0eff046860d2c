"""Runs of older and foreign profilers: TF1 timelines, tfprof ProfileProtos, PyTorch traces.

A folder anywhere in the logdir is a run of each kind it holds files of:

* ``tf1_timeline``: Chrome trace JSON of TF1 graph sessions, ``timeline-<step>.json`` as
  ``tf.estimator.ProfilerHook`` writes it, any ``*timeline*.json`` from
  ``tensorflow.python.client.timeline`` and ``*.ctf.json``; each file is one step (a host);
* ``tfprof_timeline``: tfprof's ``with_timeline_output`` files, ``<name>timeline<...>.json_<step>``;
* ``tfprof``: tfprof ``ProfileProto`` files, ``profile.pb`` (``Profiler.serialize_to_string()``
  saved by the user) and ``profile_<step>`` (``ProfileContext`` dumps);
* ``pytorch``: ``*.pt.trace.json[.gz]`` from ``torch.profiler.tensorboard_trace_handler``,
  one host per file.

The run is named after the folder; when a folder holds several kinds, the first in
``step_files.KIND_ORDER`` keeps the plain name and the others get `` (<kind>)``.
"""

from __future__ import annotations

from pathlib import Path

from tbprof import logdir, profiles
from tbprof.logdir import Run
from tbprof.readers import chrome_trace, tfprof
from tbprof.readers.step_files import KIND_ORDER, classify, step_of


def _detector(folder: Path, files: list[str], root: Path) -> list[Run]:
    by_kind: dict[str, dict[str, Path]] = {}
    for name in files:
        found = classify(name)
        if found is not None:
            kind, host = found
            by_kind.setdefault(kind, {})[host] = folder / name
    if not by_kind:
        return []
    rel = folder.relative_to(root).as_posix() if folder != root else ""
    base = rel or folder.name
    runs: list[Run] = []
    for kind in KIND_ORDER:
        hosts = by_kind.get(kind)
        if not hosts:
            continue
        name = base if not runs else f"{base} ({kind})"
        ordered = dict(sorted(hosts.items(), key=lambda kv: (step_of(kv[0]) is None, step_of(kv[0]) or 0, kv[0])))
        mtime = max((p.stat().st_mtime for p in ordered.values() if p.exists()), default=0.0)
        runs.append(Run(name=name, path=folder, kind=kind, hosts=ordered, mtime=mtime))
    return runs


logdir.register_detector(_detector)
for _kind in ("tf1_timeline", "tfprof_timeline", "pytorch"):
    profiles.register_reader(_kind, chrome_trace.FORMAT, chrome_trace.read_chrome_trace)
profiles.register_reader("tfprof", "tfprof", tfprof.read_tfprof)
