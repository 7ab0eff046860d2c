#!/usr/bin/env python3
"""Run XProf 2.24.2's own in-process tool conversions (the "oracle").

Must run under a Python that has the PyPI package ``xprof`` 2.24.2 installed,
e.g. ``/opt/xprof-venv/bin/python``. Nothing here imports tbprof.

Library use::

    from xprof_runner import convert, convert_cold
    payload, content_type = convert(["/run/dir/vm.xplane.pb"], "overview_page", {})
    payload, content_type = convert(paths, "trace_viewer@",
                                    {"resolution": "8000",
                                     "start_time_ms": "10", "end_time_ms": "20"})

``convert`` calls ``xprof.convert.raw_to_tool_data.xspace_to_tool_data`` with
the same ``params`` dictionary that XProf's HTTP handler
(``ProfilePlugin.data_impl`` in ``xprof/profile_plugin.py``) builds from the
frontend's query string: flat frontend parameters such as ``resolution``,
``start_time_ms``, ``end_time_ms``, ``full_dma``, ``format``, ``event_name``
... are packed into ``params["trace_viewer_options"]`` for ``trace_viewer``
and ``trace_viewer@``; ``group_by`` is passed through for ``op_profile``.
Values are passed as the server passes them (query-string values are
strings; ``resolution`` defaults to the int 8000 like the server).

CLI::

    python bench/xprof_runner.py TOOL XPLANE [XPLANE ...] [--param k=v ...]
        [--out FILE] [--repeat N] [--mode cold|cached] [--isolate] [--quiet]

prints one JSON object on stdout::

    {"tool": ..., "mode": "cold", "seconds": [per repeat], "peak_rss_bytes": N,
     "output_bytes": N, "content_type": ..., ...}

Caching (XProf 2.24.2, observed; see docs/xprof_reference.md):
  * overview_page, input_pipeline_analyzer, framework_op_stats, kernel_stats,
    pod_viewer, op_profile, hlo_stats, roofline_model all go through one
    combined OpStats, which on first conversion is written next to the xplane
    files as ``<dir>/ALL_HOSTS.op_stats_v2.pb`` and re-read on later calls when
    ``use_saved_result`` is true.  The cache key is the *directory* only: it is
    reused even if a later call passes a different subset of the xplane files.
  * trace_viewer@ writes ``<dir>/<host>.SSTABLE``, ``<host>.metadata.SSTABLE``
    and ``<host>.trie.SSTABLE`` per host and serves later requests from them.
  * trace_viewer (non-streaming) and memory_profile write nothing and are
    recomputed each call.
  * ``use_saved_result=False`` skips reading the cache but still (re)writes it.

"cold" mode therefore copies the xplane files (keeping their basenames, which
XProf uses as host names) into a fresh temporary directory for every repeat;
"cached" mode converts once untimed in one temporary directory, then times
repeats in that same directory.  Only the ``convert`` call is timed (not the
copy).  Peak RSS: without ``--isolate`` it is the whole process's
``ru_maxrss`` (the max over all repeats, Python + xprof library included);
with ``--isolate`` every repeat runs in a fresh child interpreter and the
per-repeat peak RSS is reported as well.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

SUPPORTED_TOOLS = (
    "overview_page",
    "input_pipeline_analyzer",
    "framework_op_stats",
    "kernel_stats",
    "memory_profile",
    "pod_viewer",
    "op_profile",
    "trace_viewer",
    "trace_viewer@",
    # Also accepted by XProf and passed through unchanged:
    "hlo_stats",
    "roofline_model",
)

# Query-string keys that XProf's data_impl moves into trace_viewer_options.
_TRACE_VIEWER_KEYS = (
    "resolution",
    "full_dma",
    "start_time_ms",
    "end_time_ms",
    "event_name",
    "format",
    "duration_ms",
    "unique_id",
    "search_prefix",
    "search_metadata",
)

EXPECTED_XPROF_VERSION = "2.24.2"


def xprof_version() -> str:
    from xprof import version  # pylint: disable=import-outside-toplevel

    return version.__version__


def _as_bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    return str(v).strip().lower() in ("1", "true", "yes", "on")


def build_params(tool: str, params: Mapping[str, Any] | None = None) -> dict:
    """Return the ``params`` dict XProf's server would pass for ``tool``.

    ``params`` holds flat frontend query parameters (e.g. ``resolution``,
    ``start_time_ms``, ``group_by``, ``use_saved_result``).  A ready-made
    ``trace_viewer_options`` dict is merged in unchanged.
    """
    params = dict(params or {})
    out: dict[str, Any] = {
        "use_saved_result": _as_bool(params.pop("use_saved_result", True)),
    }
    hosts = params.pop("hosts", None)
    if isinstance(hosts, str):
        hosts = [h for h in hosts.split(",") if h]
    if tool in ("trace_viewer", "trace_viewer@"):
        opts: dict[str, Any] = {"resolution": 8000, "full_dma": False}
        opts.update(params.pop("trace_viewer_options", {}) or {})
        for key in _TRACE_VIEWER_KEYS:
            if key in params:
                val = params.pop(key)
                if key in ("full_dma", "search_metadata"):
                    val = _as_bool(val)
                opts[key] = val
        if "event_name" in opts:
            opts["format"] = "json"  # as the server does for event details
        out["trace_viewer_options"] = opts
    if hosts is not None:
        out["hosts"] = hosts
    out.update(params)  # group_by and anything else: pass through
    return out


def convert(
    xplane_paths: Sequence[str],
    tool: str,
    params: Mapping[str, Any] | None = None,
) -> tuple[bytes | str | None, str]:
    """Run XProf's in-process conversion exactly as its server does.

    Returns ``(payload, content_type)``; payload is ``bytes`` for most tools,
    ``str`` for ``trace_viewer`` (converted to JSON in Python by XProf), or
    None if XProf reported failure.  Cache files are written next to the
    xplane files (see module docstring).
    """
    from xprof.convert import raw_to_tool_data  # pylint: disable=import-outside-toplevel

    if tool == "memory_profile" and len(xplane_paths) != 1:
        raise ValueError("XProf's memory_profile handles exactly one host")
    return raw_to_tool_data.xspace_to_tool_data(
        [str(p) for p in xplane_paths], tool, build_params(tool, params)
    )


def copy_to_fresh_dir(xplane_paths: Sequence[str], root: str | None = None) -> tuple[str, list[str]]:
    """Copy xplanes (same basenames) into a new temp dir; return (dir, paths)."""
    d = tempfile.mkdtemp(prefix="xprof_cold_", dir=root)
    out = []
    for p in xplane_paths:
        dst = os.path.join(d, os.path.basename(p))
        if os.path.exists(dst):
            raise ValueError(f"duplicate xplane basename {os.path.basename(p)}")
        shutil.copyfile(p, dst)
        out.append(dst)
    return d, out


def convert_cold(
    xplane_paths: Sequence[str],
    tool: str,
    params: Mapping[str, Any] | None = None,
    tmp_root: str | None = None,
) -> tuple[bytes | str | None, str]:
    """``convert`` on a fresh copy of the xplanes (no XProf cache present)."""
    d, paths = copy_to_fresh_dir(xplane_paths, tmp_root)
    try:
        return convert(paths, tool, params)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def payload_size(payload: bytes | str | None) -> int:
    if payload is None:
        return 0
    if isinstance(payload, str):
        return len(payload.encode("utf-8"))
    return len(payload)


def _maxrss_bytes(who: int = resource.RUSAGE_SELF) -> int:
    return resource.getrusage(who).ru_maxrss * 1024  # Linux: KiB


def _current_rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


@contextlib.contextmanager
def _quiet_stderr(enabled: bool):
    """Silence XProf's C++ (absl) logging written to fd 2."""
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def run_benchmark(
    tool: str,
    xplane_paths: Sequence[str],
    params: Mapping[str, Any] | None = None,
    repeat: int = 1,
    mode: str = "cold",
    out: str | None = None,
    quiet: bool = False,
    tmp_root: str | None = None,
) -> dict:
    """Time ``repeat`` conversions in this process; return the result dict."""
    import xprof.convert.raw_to_tool_data  # noqa: F401  (import before timing)

    seconds: list[float] = []
    payload: bytes | str | None = None
    content_type = None
    baseline_rss = _current_rss_bytes()
    cached_dir = None
    with _quiet_stderr(quiet):
        if mode == "cached":
            cached_dir, cached_paths = copy_to_fresh_dir(xplane_paths, tmp_root)
            convert(cached_paths, tool, params)  # untimed warm-up fills cache
        try:
            for _ in range(repeat):
                if mode == "cold":
                    d, paths = copy_to_fresh_dir(xplane_paths, tmp_root)
                else:
                    d, paths = None, cached_paths
                try:
                    payload = None  # free the previous result first
                    t0 = time.perf_counter()
                    payload, content_type = convert(paths, tool, params)
                    seconds.append(time.perf_counter() - t0)
                finally:
                    if d:
                        shutil.rmtree(d, ignore_errors=True)
        finally:
            if cached_dir:
                shutil.rmtree(cached_dir, ignore_errors=True)
    if out and payload is not None:
        with open(out, "wb") as f:
            f.write(payload.encode("utf-8") if isinstance(payload, str) else payload)
    return {
        "tool": tool,
        "xplanes": [str(p) for p in xplane_paths],
        "params": dict(params or {}),
        "mode": mode,
        "seconds": seconds,
        "peak_rss_bytes": _maxrss_bytes(),
        "baseline_rss_bytes": baseline_rss,
        "output_bytes": payload_size(payload),
        "content_type": content_type,
        "success": payload is not None,
        "xprof_version": xprof_version(),
    }


def _parse_param(kv: str) -> tuple[str, str]:
    if "=" not in kv:
        raise argparse.ArgumentTypeError(f"--param expects k=v, got {kv!r}")
    k, v = kv.split("=", 1)
    return k, v


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tool", help="XProf tool name, e.g. overview_page, trace_viewer@")
    ap.add_argument("xplanes", nargs="+", help="*.xplane.pb files (one run)")
    ap.add_argument("--param", action="append", default=[], type=_parse_param,
                    metavar="K=V", help="frontend query parameter (repeatable)")
    ap.add_argument("--out", help="write the (last) payload to this file")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--mode", choices=("cold", "cached"), default="cold",
                    help="cold: fresh copy of the xplanes per repeat (default); "
                         "cached: warm XProf's cache once, then time repeats")
    ap.add_argument("--isolate", action="store_true",
                    help="run every repeat in a fresh child interpreter "
                         "(per-repeat peak RSS; no in-process state shared)")
    ap.add_argument("--quiet", action="store_true",
                    help="silence XProf's C++ log output on stderr")
    ap.add_argument("--tmp-root", help="parent dir for the temp copies")
    args = ap.parse_args(argv)
    params = dict(args.param)

    if not args.isolate:
        res = run_benchmark(args.tool, args.xplanes, params, args.repeat,
                            args.mode, args.out, args.quiet, args.tmp_root)
    else:
        seconds, rss = [], []
        res = None
        for i in range(args.repeat):
            cmd = [sys.executable, os.path.abspath(__file__), args.tool, *args.xplanes,
                   "--repeat", "1", "--mode", args.mode]
            for k, v in args.param:
                cmd += ["--param", f"{k}={v}"]
            if args.out and i == args.repeat - 1:
                cmd += ["--out", args.out]
            if args.quiet:
                cmd.append("--quiet")
            if args.tmp_root:
                cmd += ["--tmp-root", args.tmp_root]
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, check=True)
            res = json.loads(proc.stdout)
            seconds += res["seconds"]
            rss.append(res["peak_rss_bytes"])
        assert res is not None
        res["seconds"] = seconds
        res["peak_rss_bytes_per_repeat"] = rss
        res["peak_rss_bytes"] = max(rss) if rss else 0
        res["isolated"] = True
    json.dump(res, sys.stdout)
    sys.stdout.write("\n")
    return 0 if res.get("success") else 1


if __name__ == "__main__":
    sys.exit(main())
