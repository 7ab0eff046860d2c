#!/usr/bin/env python3
"""A pod, cold, all hosts: tbprof on 1 vs 2 local workers and on a Dask LocalCluster, against
XProf 2.24.2's all-hosts overview_page on the same files, in one run; plus an s3:// logdir
(moto's S3 server) against the local path.

    python bench/pod_bench.py [--hosts 64] [--xprof-python PY] [--skip-xprof] [--skip-dask] [--skip-s3]

Each tbprof configuration runs in a fresh process with an empty converted-profile cache and
times what a server does: import, listing (discovery and the run's tool list), the pool's
start (a server starts it with itself), then the request: partials (each host decoded and
summarised on the executor, the partial sent back in its binary form) and combine (overview_page over the
partials, in the server). It also prints the per-host split (decode, partial, server keeping a
partial), the CPU seconds (which the shared machine's load does not change) and the
1024-host estimate from per-host costs: workers scale with hosts / workers, the server's
keeping and combining with hosts. Prints ratios; timed assertions do not belong in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
# The Dask scheduler runs in this process and imports the task's function: this checkout's.
sys.path.insert(0, str(REPO / "plugin"))
from make_pod import make_pod  # noqa: E402

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from pathlib import Path
from tbprof.service.executor import make_executor
from tbprof.service.profiles import Profiles
t1 = time.perf_counter()
logdir, cache, workers, scheduler = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] or None
executor = make_executor(workers, scheduler)
executor.start()  # as `tbprof serve` does: the pool starts with the server
t1b = time.perf_counter()
profiles = Profiles(logdir, cache_dir=Path(cache), executor=executor)
run = next(iter(profiles.index.runs().values()))
profiles.candidate_tools(run)  # as the runs route does before any page asks (imports the tools)
t2 = time.perf_counter()
getattr(executor, "wait_ready", lambda: None)()  # a served pod's first request finds the pool up
t3 = time.perf_counter()
cpu3 = time.process_time()
hosts = list(run.hosts)
parts = profiles.host_partials(run, hosts)  # what the request does first: every host's partial
t4 = time.perf_counter()
out = profiles.compute(run, hosts, profiles.tool("overview_page"), {})  # the tool over the partials
t5 = time.perf_counter()
server_cpu_s = time.process_time() - cpu3
assert parts is not None and not parts[1] and out["run_environment"]["host_count"] == len(hosts)
executor.close()
print(json.dumps({"hosts": len(hosts), "import_s": t1 - t0, "listing_s": t2 - t1b, "pool_start_s": t1b - t1 + t3 - t2,
                  "partials_s": t4 - t3, "combine_s": t5 - t4, "request_s": t5 - t3, "total_s": t5 - t0,
                  "server_cpu_s": server_cpu_s, "split": profiles.conversion.partial_seconds}))
"""


def tbprof_cold(logdir: str, workers: int, scheduler: str = "", env: dict[str, str] | None = None,
                cache: str | None = None) -> dict[str, Any]:
    full_env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"), **(env or {}))
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([sys.executable, "-c", _CHILD, logdir, cache or d, str(workers), scheduler],
                             env=full_env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def xprof_cold(xprof_python: str, files: list[Path]) -> float:
    out = subprocess.run([xprof_python, str(REPO / "bench" / "xprof_runner.py"), "overview_page",
                          *map(str, files), "--mode", "cold", "--quiet"], check=True, capture_output=True,
                         text=True).stdout
    return float(min(json.loads(out.strip().splitlines()[-1])["seconds"]))


def line(name: str, r: dict[str, Any]) -> str:
    sp = r["split"]
    return (f"{name:<24} request {r['request_s']:5.2f} s (partials {r['partials_s']:.2f} + combine "
            f"{r['combine_s']:.3f}); total {r['total_s']:5.2f} s = import {r['import_s']:.2f} + listing "
            f"{r['listing_s']:.2f} + pool start {r['pool_start_s']:.2f} + request\n"
            f"{'':<24} summed over hosts: decode {sp.get('convert_s', 0):.2f} s, partials "
            f"{sp.get('partial_s', 0):.2f} s, store writes {sp.get('write_s', 0):.2f} s, "
            f"server keeping partials {sp.get('server_keep_s', 0):.2f} s")


def s3_bench(pod: Path) -> None:
    """First (cold) and cached overview of the pod through moto's S3 server vs the local path."""
    import logging

    import s3fs
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto logs every request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        env = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1",
               "AWS_ENDPOINT_URL": f"http://{host}:{port}"}
        os.environ.update(env)
        fs = s3fs.S3FileSystem(skip_instance_cache=True)
        fs.mkdir("pod")
        fs.put(str(pod) + "/", "pod/logs/", recursive=True)
        with tempfile.TemporaryDirectory() as c_remote, tempfile.TemporaryDirectory() as c_local:
            remote_cold = tbprof_cold("s3://pod/logs", 1, env=env, cache=c_remote)
            remote_cached = tbprof_cold("s3://pod/logs", 1, env=env, cache=c_remote)
            local_cold = tbprof_cold(str(pod), 1, cache=c_local)
            local_cached = tbprof_cold(str(pod), 1, cache=c_local)
        print(line("s3 cold (in-process)", remote_cold))
        print(line("s3 cached", remote_cached))
        print(line("local cold", local_cold))
        print(line("local cached", local_cached))
        print(f"s3 / local: cold {remote_cold['total_s'] / local_cold['total_s']:.2f}x, "
              f"cached {remote_cached['total_s'] / local_cached['total_s']:.2f}x "
              f"(listing {remote_cached['listing_s']:.2f} s vs {local_cached['listing_s']:.2f} s)")
    finally:
        server.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--xprof-python", default=os.environ.get("XPROF_PYTHON", "/opt/xprof-venv/bin/python"))
    ap.add_argument("--skip-xprof", action="store_true")
    ap.add_argument("--skip-dask", action="store_true")
    ap.add_argument("--skip-s3", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="alternating 1- and 2-worker runs (the best of each)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        pod = Path(d) / "pod"
        folder = make_pod(pod, args.hosts)
        files = sorted(folder.glob("*.xplane.pb"))
        size_mb = sum(f.stat().st_size for f in files) / 1e6
        print(f"pod: {args.hosts} hosts, copies of jax_2hosts' hosts ({size_mb:.1f} MB)")
        read_s = time.perf_counter()
        for f in files:
            f.read_bytes()
        read_s = time.perf_counter() - read_s
        print(f"reading the {len(files)} files (page cache warm, one process): {read_s:.3f} s")
        tbprof_cold(str(pod), 1)  # untimed: compiled-code caches warm, as on any second start
        ones, twos = [], []
        for _ in range(args.repeat):  # alternating, so a load spike hits both
            ones.append(tbprof_cold(str(pod), 1))
            twos.append(tbprof_cold(str(pod), 2))
        one = min(ones, key=lambda r: r["request_s"])
        two = min(twos, key=lambda r: r["request_s"])
        print(line("tbprof 1 worker", one))
        print(line("tbprof 2 workers", two))
        print(f"speed-up 2 vs 1 workers, request (pool started with the server): "
              f"{one['request_s'] / two['request_s']:.2f}x (target >= 1.5x; each run: "
              f"{[round(a['request_s'] / b['request_s'], 2) for a, b in zip(ones, twos, strict=True)]}); "
              f"whole process incl. pool start: {one['total_s'] / two['total_s']:.2f}x")
        # CPU seconds do not depend on what else the shared machine runs: the 2-worker request
        # needs at least half its CPU (workers + server) of wall time on 2 cores.
        c1 = one["server_cpu_s"]
        c2 = two["server_cpu_s"] + two["split"].get("cpu_s", 0.0)
        print(f"CPU of the request: 1 worker {c1:.2f} s (one process); 2 workers {c2:.2f} s (workers "
              f"{two['split'].get('cpu_s', 0.0):.2f} + server {two['server_cpu_s']:.2f}) -> on 2 idle cores the "
              f"2-worker request needs >= {c2 / 2:.2f} s: speed-up <= {c1 / (c2 / 2):.2f}x "
              f"(the 1-worker request's decoder threads also use the second core, so a bit less)")
        if not args.skip_dask:
            from distributed import LocalCluster

            # The cluster's worker processes must import this checkout's tbprof, as the children do.
            os.environ["PYTHONPATH"] = str(REPO / "plugin") + os.pathsep + os.environ.get("PYTHONPATH", "")
            t = time.perf_counter()
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
                start_s = time.perf_counter() - t
                dask = tbprof_cold(str(pod), 1, cluster.scheduler_address)
            print(line("tbprof Dask (2 procs)", dask) + f"  [cluster start {start_s:.2f} s, not counted]")
        if not args.skip_xprof:
            xp = xprof_cold(args.xprof_python, files)
            print(f"XProf all-hosts overview_page cold: {xp:.2f} s")
            print(f"tbprof 2 workers / XProf: request {two['request_s'] / xp:.2f}x (target <= 0.5x), "
                  f"whole process {two['total_s'] / xp:.2f}x")
            print(f"tbprof 1 worker / XProf: request {one['request_s'] / xp:.2f}x, "
                  f"whole process {one['total_s'] / xp:.2f}x")
        # 1024 hosts on 64 workers, from per-host costs: a worker decodes a host and computes its
        # partial (measured in-process, one host after another, summed); the server keeps each
        # partial as it arrives (overlapped with the workers) and combines them all at the end.
        sp1, sp2 = one["split"], two["split"]
        worker_host_s = (sp1.get("convert_s", 0) + sp1.get("partial_s", 0)) / args.hosts
        keep_host_s = sp2.get("server_keep_s", 0) / args.hosts
        combine_host_s = one["combine_s"] / args.hosts
        workers_s = 1024 / 64 * worker_host_s
        keep_s = 1024 * keep_host_s
        print(f"per host: worker {worker_host_s * 1e3:.1f} ms (decode + partial), server keeps a partial "
              f"{keep_host_s * 1e3:.2f} ms, combine {combine_host_s * 1e3:.2f} ms -> 1024 hosts on 64 workers ~ "
              f"{max(workers_s, keep_s) + 1024 * combine_host_s:.1f} s (workers {workers_s:.2f} s in parallel, "
              f"server keeping {keep_s:.2f} s overlapped with them, combine {1024 * combine_host_s:.2f} s)")
        if not args.skip_s3:
            s3_bench(pod)
    return 0


if __name__ == "__main__":
    sys.exit(main())
