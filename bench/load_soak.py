#!/usr/bin/env python3
"""Load test and soak of a real ``tbprof serve`` on loopback (issue #15).

    python bench/load_soak.py [--clients 20] [--requests 25] [--soak-s 180] [--soak-clients 4]

Starts ``tbprof serve`` on 127.0.0.1 over a copy of two demo runs (jax_mlp: XSpace with HLO,
torch_cnn: a PyTorch Chrome trace) with a fresh cache, then

1. load: ``--clients`` concurrent clients each send ``--requests`` mixed requests (tool JSON,
   sorted/filtered table pages, trace windows at random zoom, trace search, CSV) split over
   the two runs; prints status counts (5xx must be 0), latency p50/p95/max and the server's
   peak RSS (VmHWM);
2. soak: ``--soak-clients`` clients loop over the same mix for ``--soak-s`` seconds with
   varying options (so caches keep filling), sampling the server's RSS every 5 s; prints RSS
   after the warm-up (first 20 %) and at the end, and their ratio. Every cache lives in one
   byte budget (``$TBPROF_MEMORY_BYTES``, default 4 GiB): random trace windows keep adding
   entries until the budget is full, so flatness shows with a budget the soak can fill
   (``--budget 100000000``); with the default the RSS grows toward it.

Measured (2 shared cores, load average ~8 from other work): load 500 requests, 0 5xx, p95
115-186 ms, peak RSS 91 MB; soak 150 s with --budget 100 MB: 36 k requests, p95 41 ms, RSS
131 MB after warm-up, 143 MB at the end (x1.09).
On waitress (``tbprof serve`` since issue #25), same machine: load 500 requests, 0 5xx, p50
41 ms, p95 135 ms, peak RSS 92 MB; soak 60 s with --budget 100 MB: 29 k requests, all 200,
p95 24 ms, RSS 128 MB after warm-up, 134 MB at the end (x1.05).

Bounded: loopback only, a fixed number of requests, and the soak stops at its deadline. No
anchor run: XProf has no server load mode comparable to this (its tools re-convert per
request), so these are absolute numbers for this machine.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "demo_logs"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_bytes(pid: int, field: str = "VmRSS") -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


class Client:
    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)

    def get(self, route: str, query: dict[str, Any]) -> tuple[int, bytes, float]:
        path = "/data/plugin/tbprof/" + route + "?" + urllib.parse.urlencode(query)
        started = time.perf_counter()
        for attempt in range(2):
            try:
                self.conn.request("GET", path, headers={"Accept-Encoding": "gzip"})
                r = self.conn.getresponse()
                body = r.read()
                elapsed = time.perf_counter() - started
                if r.getheader("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                return r.status, body, elapsed
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
                if attempt:
                    raise
        raise AssertionError("unreachable")


def mixed_request(rnd: random.Random, runs: dict[str, dict[str, Any]], variant: int) -> tuple[str, dict[str, Any]]:
    run_name = rnd.choice(sorted(runs))
    run = runs[run_name]
    host = run["hosts"][0]
    span = run.get("span_ps") or 10**12
    kind = rnd.choice(["data", "table", "trace", "trace", "search", "csv", "tools"])
    tools = run["tools"]
    table_tools = [t for t in ("framework_op_stats", "kernel_stats", "op_profile", "profile_summary") if t in tools]
    if kind == "data":
        return "data", {"run": run_name, "host": host, "tool": rnd.choice(tools), "rows": 50}
    if kind in ("table", "csv") and table_tools:
        q: dict[str, Any] = {"run": run_name, "host": host, "tool": rnd.choice(table_tools),
                             "limit": 50, "offset": rnd.choice([0, 50])}
        if variant:
            q["offset"] = variant % 200
        return kind, q
    if kind in ("trace", "table", "csv"):
        start = rnd.randrange(0, max(1, span // 2))
        width = max(1000, span >> rnd.randrange(0, 8))
        return "trace", {"run": run_name, "host": host, "start_ps": start, "end_ps": start + width,
                         "width_px": rnd.choice([800, 1600, 2400])}
    if kind == "search":
        return "trace_search", {"run": run_name, "host": host, "q": rnd.choice(["conv", "matmul", "fusion",
                                                                                "^aten::", "step"]),
                                "regex": rnd.choice(["0", "1"])}
    return "tools", {"run": run_name, "host": host}


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] if s else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--requests", type=int, default=25)
    ap.add_argument("--soak-s", type=float, default=180.0)
    ap.add_argument("--soak-clients", type=int, default=4)
    ap.add_argument("--budget", type=int, default=None, help="TBPROF_MEMORY_BYTES for the server")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="tbprof_load_"))
    server: subprocess.Popen[bytes] | None = None
    try:
        logdir = work / "logs"
        for name in ("jax_mlp", "torch_cnn"):
            shutil.copytree(DEMO / name, logdir / name)
        port = free_port()
        env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"), TBPROF_CACHE_DIR=str(work / "cache"))
        if args.budget:
            env["TBPROF_MEMORY_BYTES"] = str(args.budget)
        log = open(work / "server.log", "wb")
        server = subprocess.Popen([sys.executable, "-m", "tbprof.cli", "serve", "--logdir", str(logdir),
                                   "--host", "127.0.0.1", "--port", str(port), "--no-capture"],
                                  stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        probe = Client(port)
        deadline = time.monotonic() + 120
        while True:
            try:
                status, body, _ = probe.get("runs", {})
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                print((work / "server.log").read_text(errors="replace"), file=sys.stderr)
                return 1
            time.sleep(0.3)
        runs: dict[str, dict[str, Any]] = {}
        for entry in json.loads(body)["runs"]:
            status, tools_body, _ = probe.get("tools", {"run": entry["run"], "host": entry["hosts"][0]})
            entry["tools"] = [t["name"] for t in json.loads(tools_body)["tools"]]
            status, summary, _ = probe.get("data", {"run": entry["run"], "host": entry["hosts"][0],
                                                    "tool": "profile_summary"})
            entry["span_ps"] = int(json.loads(summary).get("span_ps") or 0) if status == 200 else 0
            runs[entry["run"]] = entry
        rss_start = rss_bytes(server.pid)

        # --- load ------------------------------------------------------------------------
        latencies: list[float] = []
        statuses: dict[int, int] = {}
        lock = threading.Lock()

        def load_client(seed: int) -> None:
            rnd = random.Random(seed)
            c = Client(port)
            for _ in range(args.requests):
                route, query = mixed_request(rnd, runs, 0)
                status, _, dt = c.get(route, query)
                with lock:
                    latencies.append(dt)
                    statuses[status] = statuses.get(status, 0) + 1

        started = time.perf_counter()
        threads = [threading.Thread(target=load_client, args=(i,)) for i in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - started
        n = len(latencies)
        five_xx = sum(v for k, v in statuses.items() if k >= 500)
        print(f"load: {args.clients} clients x {args.requests} requests = {n} in {wall:.1f} s "
              f"({n / wall:.1f} req/s); statuses {dict(sorted(statuses.items()))}; 5xx {five_xx}")
        print(f"load latency: p50 {percentile(latencies, 0.5) * 1e3:.0f} ms, p95 "
              f"{percentile(latencies, 0.95) * 1e3:.0f} ms, max {max(latencies) * 1e3:.0f} ms")
        print(f"server RSS: {rss_start / 1e6:.0f} MB after opening the runs, peak (VmHWM) "
              f"{rss_bytes(server.pid, 'VmHWM') / 1e6:.0f} MB")

        # --- soak ------------------------------------------------------------------------
        if args.soak_s > 0:
            samples: list[tuple[float, int]] = []
            stop = time.monotonic() + args.soak_s
            soak_statuses: dict[int, int] = {}
            soak_latencies: list[float] = []

            def soak_client(seed: int) -> None:
                rnd = random.Random(1000 + seed)
                c = Client(port)
                variant = 0
                while time.monotonic() < stop:
                    variant += 1
                    route, query = mixed_request(rnd, runs, variant)
                    status, _, dt = c.get(route, query)
                    with lock:
                        soak_statuses[status] = soak_statuses.get(status, 0) + 1
                        soak_latencies.append(dt)

            threads = [threading.Thread(target=soak_client, args=(i,)) for i in range(args.soak_clients)]
            t0 = time.monotonic()
            for t in threads:
                t.start()
            while any(t.is_alive() for t in threads):
                samples.append((time.monotonic() - t0, rss_bytes(server.pid)))
                time.sleep(5)
            for t in threads:
                t.join()
            warm = [r for t, r in samples if t >= 0.2 * args.soak_s]
            after_warmup, end = (warm[0], warm[-1]) if warm else (samples[0][1], samples[-1][1])
            print(f"soak: {args.soak_clients} clients for {args.soak_s:.0f} s, {len(soak_latencies)} requests; "
                  f"statuses {dict(sorted(soak_statuses.items()))}; p95 "
                  f"{percentile(soak_latencies, 0.95) * 1e3:.0f} ms")
            print(f"soak RSS: after warm-up {after_warmup / 1e6:.0f} MB, end {end / 1e6:.0f} MB, "
                  f"max {max(r for _, r in samples) / 1e6:.0f} MB, end/warm-up {end / after_warmup:.2f}")
            five_xx += sum(v for k, v in soak_statuses.items() if k >= 500)
        if five_xx:
            print((work / "server.log").read_text(errors="replace")[-5000:], file=sys.stderr)
        return 1 if five_xx else 0
    finally:
        if server is not None and server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
