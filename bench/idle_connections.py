#!/usr/bin/env python3
"""``tbprof serve`` on waitress against werkzeug's development server (issue #25).

    python bench/idle_connections.py [--clients 20] [--requests 15] [--idle 2000]

For each server, started the same way over a copy of demo_logs/torch_cnn under the common soft
descriptor limit (``ulimit -n 1024``) with a fresh cache, after one warm-up request per route:

1. latency: ``--clients`` concurrent clients each send ``--requests`` requests (settings, runs,
   a warm framework_op_stats page of 20 rows); prints p50/p95 and the waitress/werkzeug ratio:
   the cost of the production server;
2. idle: ``--idle`` connections are opened and left silent, then the same clients run again;
   prints how many requests were answered within 30 s each and their p50/p95.

Measured (2 shared cores, other work running; 20 clients x 15 requests; two runs): werkzeug
p50 22-26 ms, p95 38-76 ms; waitress p50 12-16 ms, p95 22-33 ms (x0.56-0.59 / x0.29-0.86).
Beside idle connections, under ulimit -n 1024: werkzeug accepted 1,149 and then answered none
of the 300 requests; waitress held 2,000 and answered all 300, p50 46 ms, p95 0.8-1.7 s:
waitress's poll loop re-registers every open
socket on each turn (O(connections) Python per turn), the price of 2,000 idle sockets.

Bounded: loopback only, a fixed number of requests, 30 s per request. No XProf anchor: this
compares tbprof's two server paths (XProf's own server is TensorBoard's werkzeug one).
"""

from __future__ import annotations

import argparse
import http.client
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROUTES = ("/data/plugin/tbprof/settings", "/data/plugin/tbprof/runs",
          "/data/plugin/tbprof/data?run=torch_cnn&tool=framework_op_stats&rows=20")
WERKZEUG = ("from tbprof.http.app import PLUGIN_PREFIX, create_app; from werkzeug.serving import run_simple; "
            "import sys; run_simple('127.0.0.1', int(sys.argv[2]), create_app(sys.argv[1], prefix=PLUGIN_PREFIX), "
            "threaded=True, use_reloader=False)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(port: int, path: str, timeout_s: float = 30) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        return r.status
    finally:
        conn.close()


def start(kind: str, logdir: Path, cache: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"), TBPROF_CACHE_DIR=str(cache), TBPROF_WORKERS="1")
    cmd = ([sys.executable, "-m", "tbprof.cli", "serve", "--logdir", str(logdir), "--port", str(port)]
           if kind == "waitress" else [sys.executable, "-c", WERKZEUG, str(logdir), str(port)])
    def common_limit() -> None:  # the server starts under ulimit -Sn 1024; this process keeps its own
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=common_limit)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if get(port, ROUTES[0], 5) == 200:
                break
        except OSError:
            time.sleep(0.2)
    for route in ROUTES:
        get(port, route, 120)
    return proc, port


def load(port: int, clients: int, requests: int) -> tuple[int, list[float]]:
    answered: list[float] = []
    failed = [0]
    lock = threading.Lock()

    def client(k: int) -> None:
        for i in range(requests):
            t0 = time.perf_counter()
            try:
                ok = get(port, ROUTES[(k + i) % len(ROUTES)]) == 200
            except OSError:
                ok = False
            with lock:
                if ok:
                    answered.append(time.perf_counter() - t0)
                else:
                    failed[0] += 1

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failed[0], answered


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] * 1e3 if s else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--requests", type=int, default=15)
    ap.add_argument("--idle", type=int, default=2000)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < args.idle + 200 <= hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    work = Path(tempfile.mkdtemp(prefix="tbprof_idle_"))
    p50: dict[str, float] = {}
    p95: dict[str, float] = {}
    try:
        shutil.copytree(REPO / "demo_logs" / "torch_cnn", work / "logs" / "torch_cnn")
        for kind in ("werkzeug", "waitress"):
            proc, port = start(kind, work / "logs", work / f"cache_{kind}")
            try:
                failed, lat = load(port, args.clients, args.requests)
                p50[kind], p95[kind] = pct(lat, 0.5), pct(lat, 0.95)
                print(f"{kind:9s} latency: {len(lat)} answered, {failed} failed, "
                      f"p50 {p50[kind]:.1f} ms, p95 {p95[kind]:.1f} ms", flush=True)
                idle: list[socket.socket] = []
                try:
                    for _ in range(args.idle):
                        try:
                            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
                        except OSError:
                            break
                    failed, lat = load(port, args.clients, args.requests)
                    print(f"{kind:9s} beside {len(idle)} idle connections: {len(lat)} answered, {failed} not "
                          f"answered (refused or over 30 s), p50 {pct(lat, 0.5):.1f} ms, "
                          f"p95 {pct(lat, 0.95):.1f} ms", flush=True)
                finally:
                    for s in idle:
                        s.close()
            finally:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        print(f"waitress/werkzeug latency without idle connections: p50 x{p50['waitress'] / p50['werkzeug']:.2f}, "
              f"p95 x{p95['waitress'] / p95['werkzeug']:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
