#!/usr/bin/env python3
"""A pod command's own CPU, phase by phase (issue #39): ``tbprof summary POD --workers W`` with the
command's calls timed by thread CPU (``time.thread_time``: independent of the machine's load,
unlike wall time) and the whole command's CPU (``getrusage(RUSAGE_SELF)``), variants alternating.

    python bench/pod_parent_cpu.py [--hosts 256 1024] [--workers 16 2] [--repeat 3]
                                   [--variant LABEL=PYTHONPATH ...] [--tmp DIR]

Pods are byte copies of jax_2hosts' two real hosts (bench/make_pod.py). The workers are forked
from the command as on a machine of ``--workers`` cores or more (the command forks them only up
to its cores: on a small machine 16 workers would go to the fork server instead), so a 2-core
machine measures the parent the 16-core device runs. Each run is a fresh process with a fresh
cache dir; the JSON answers of all variants are compared (the run fails on a difference).

Prints the medians per variant: the command's CPU (rusage), and thread CPU of forking the
workers (numpy included), decoding the batches' frames (``open_batch``), keeping the partials
and combined tables, the conversion loop (``PodConversion.prepare``, on the load thread) and the
summary after it (``of_hosts``); and a timeline in ms since the process started (wall, so only
comparable on an idle machine of enough cores): workers forked, first frame decoded, last batch
done in a worker, exit, and from that last batch to the exit (``tail``: the command's critical
path after its workers), of which ending the workers (``close wall``). Timings never go into
tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from make_pod import make_pod  # noqa: E402

# The calls whose thread CPU is summed (module, class or None, function, label).
TIMED = (("tbprof.service.executor", "ProcessPool", "_start_forked", "fork"),
         ("tbprof.service.executor", None, "open_batch", "open_batch"),
         ("tbprof.service.host_partials", "HostPartials", "keep_fresh", "keep_fresh"),
         ("tbprof.service.host_partials", "HostPartials", "keep_combined", "keep_combined"),
         ("tbprof.service.pod_conversion", "PodConversion", "prepare", "prepare"),
         ("tbprof.service.summary", None, "of_hosts", "of_hosts"),
         ("tbprof.cli.common", None, "close_executors", "close"))
# In the workers: wall clock readings (the clock every process shares) of each batch's end.
WORKER_CALLS = ("convert_batch",)


def child(out: str, workers: int, argv: list[str]) -> None:
    """Runs ``tbprof`` with the timed calls wrapped as each module is imported (the command's
    import order unchanged), then writes what was measured to ``out`` as it exits."""
    import importlib.abc
    import importlib.util
    import resource
    import threading
    import time

    started, age_s = time.perf_counter(), process_age_s()
    cpu: dict[str, float] = {}
    marks: dict[str, float] = {}
    worker_ends = os.pipe()  # workers write each batch's end here (8 bytes: a perf_counter reading)
    parent = os.getpid()

    def wrap(owner: Any, name: str, label: str) -> None:
        real = getattr(owner, name)

        def timed(*a: Any, **k: Any) -> Any:
            t = time.thread_time()
            marks.setdefault(f"{label}>", time.perf_counter())
            try:
                return real(*a, **k)
            finally:
                cpu[label] = cpu.get(label, 0.0) + time.thread_time() - t
                marks[f"{label}<"] = time.perf_counter()

        setattr(owner, name, timed)

    def in_worker(module: Any, name: str) -> None:
        real = getattr(module, name)

        def timed(*a: Any, **k: Any) -> Any:
            try:
                return real(*a, **k)
            finally:
                if os.getpid() != parent:
                    os.write(worker_ends[1], time.perf_counter().hex().encode().ljust(32))

        timed.__qualname__, timed.__module__ = name, module.__name__
        setattr(module, name, timed)

    def patch(module: Any) -> None:
        if module.__name__ == "tbprof.service.executor":
            module.default_cores = lambda: max(workers, 2)  # forked as on a machine of that many cores
            for name in WORKER_CALLS:
                in_worker(module, name)
        for mod, cls, fn, label in TIMED:
            if mod == module.__name__ and hasattr(getattr(module, cls) if cls else module, fn):
                wrap(getattr(module, cls) if cls else module, fn, label)

    names = {m for m, *_ in TIMED}

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
            if name not in names:
                return None
            sys.meta_path.remove(self)
            try:
                spec = importlib.util.find_spec(name)
            finally:
                sys.meta_path.insert(0, self)
            if spec is None or spec.loader is None:
                return spec
            run = spec.loader.exec_module

            def exec_module(module: Any) -> None:
                run(module)
                patch(module)

            spec.loader.exec_module = exec_module  # type: ignore[method-assign]
            return spec

    sys.meta_path.insert(0, Finder())
    done: list[bool] = []
    real_exit = os._exit

    def dump() -> None:
        if done or os.getpid() != parent:  # (a forked worker inherits this)
            return
        done.append(True)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        os.close(worker_ends[1])
        os.set_blocking(worker_ends[0], False)
        try:
            raw = os.read(worker_ends[0], 1 << 20)
        except BlockingIOError:
            raw = b""
        ends = [float.fromhex(raw[i:i + 32].decode().strip()) for i in range(0, len(raw) - 31, 32)]
        with open(out, "w") as f:
            json.dump({"rusage_s": usage.ru_utime + usage.ru_stime, "cpu_s": cpu, "started": started,
                       "age_s": age_s, "marks": marks, "exit": time.perf_counter(),
                       "last_batch": max(ends) if ends else None, "threads": threading.active_count()}, f)

    def leave(code: int) -> None:
        dump()
        real_exit(code)

    os._exit = leave  # type: ignore[assignment]
    import atexit

    atexit.register(dump)
    sys.argv = ["tbprof", *argv]
    from tbprof.cli.main import entry

    entry()


def process_age_s() -> float:
    """Seconds since this process started (so the timeline counts the interpreter's start)."""
    import time

    with open("/proc/self/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK")


def one_run(pythonpath: str, pod: Path, workers: int) -> tuple[dict[str, Any], bytes]:
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "measured.json")
        env = dict(os.environ, PYTHONPATH=pythonpath, TBPROF_CACHE_DIR=os.path.join(d, "cache"))
        proc = subprocess.run([sys.executable, __file__, "--child", out, str(workers), "summary", str(pod),
                               "--workers", str(workers), "--json"], env=env, capture_output=True, timeout=900)
        if proc.returncode != 0:
            raise SystemExit(f"failed ({pythonpath}): {proc.stderr.decode()[-800:]}")
        with open(out) as f:
            return json.load(f), proc.stdout


def row(m: dict[str, Any]) -> dict[str, float]:
    """The figures of one run, ms: CPU, then the timeline since the process started."""
    def at(t: float | None) -> float:
        return float("nan") if t is None else (t - m["started"] + m["age_s"]) * 1e3

    marks = m["marks"]
    out = {"rusage": m["rusage_s"] * 1e3, **{k: v * 1e3 for k, v in m["cpu_s"].items()}}
    out.update({"@forked": at(marks.get("fork<")), "@first open": at(marks.get("open_batch>")),
                "@last batch": at(m["last_batch"]), "@exit": at(m["exit"])})
    out["tail"] = out["@exit"] - out["@last batch"]  # from the last batch's end in a worker to the exit
    out["close wall"] = (marks["close<"] - marks["close>"]) * 1e3 if "close>" in marks else float("nan")
    return out


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--workers", type=int, nargs="+", default=[16, 2])
    ap.add_argument("--repeat", type=int, default=3, help="runs per variant and cell (alternating); medians")
    ap.add_argument("--variant", action="append", default=[], metavar="LABEL=PYTHONPATH")
    ap.add_argument("--tmp", type=Path, default=None, help="where the pods are written (default: a temp dir)")
    args = ap.parse_args()
    variants = [tuple(v.split("=", 1)) for v in args.variant] or [("this", str(REPO / "plugin"))]
    print(f"load average {os.getloadavg()[0]:.1f}; cores {len(os.sched_getaffinity(0))}")
    with tempfile.TemporaryDirectory(dir=args.tmp) as d:
        for n in args.hosts:
            pod = Path(d) / f"pod{n}"
            make_pod(pod, n)
            for w in args.workers:
                runs: dict[str, list[dict[str, float]]] = {label: [] for label, _ in variants}
                for _ in range(args.repeat):
                    answers = set()
                    for label, path in variants:
                        measured, answer = one_run(path, pod, w)
                        runs[label].append(row(measured))
                        answers.add(answer)
                    if len(answers) != 1:
                        raise SystemExit(f"{n} hosts, {w} workers: the variants' JSON answers differ")
                print(f"\n{n} hosts, {w} workers: medians of {args.repeat} (ms; identical JSON)")
                keys = list(dict.fromkeys(k for rs in runs.values() for r in rs for k in r))
                print("| variant | " + " | ".join(keys) + " |")
                print("|---|" + "---|" * len(keys))
                for label, rs in runs.items():
                    cells = [statistics.median(r.get(k, float("nan")) for r in rs) for k in keys]
                    print(f"| {label} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")
    print(f"\nload average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
