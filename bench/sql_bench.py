#!/usr/bin/env python3
"""SQL over jax_large: XProf 2.24.2's Events DB (create + query) against tbprof, in one run.

    python bench/sql_bench.py [--xprof-python /opt/xprof-venv/bin/python] [--profiles-dir DIR] [--skip-xprof]
                              [--kineto-k K] [--stream-k K] [--skip-jax] [--repeat N]

Each side runs in its own process (wall time and peak RSS from ``wait4``), on the same file,
with the same group-by over every event:

* XProf: ``xspace_to_parquet`` (what ``xprof create_events_db`` runs) into a fresh folder, then the
  query over ``read_parquet`` with DuckDB (what ``xprof query_events_db`` runs);
* tbprof, cold: ``tbprof sql FILE QUERY`` with an empty cache (reading the file, building the
  store, the query), the console script as a user runs it: its wall time is the cold figure.
  Its memory and its phases come from a second cold run of the same command wrapped to report
  them (``CLI_WITH_STATUS``: that wrapper imports the SQL layer before the command starts, so its
  wall time is not the command's);
* tbprof, cached store: the same command again once the first one's detached cache write has
  committed (a fresh process: interpreter, imports, the store mapped from the disk cache, the
  query), and in one process the query alone over the cached store, first and second time.

With ``--kineto-k K``: a PyTorch trace made by ``shared/tools/big_kineto.py`` from
``demo_logs/torch_ddp``'s rank 0 repeated K times (450: about 1 GB), converted once by ``tbprof sql``
(not timed against anything: XProf reads no PyTorch trace), then the kernel group-by from the cached
store in a fresh process and in process.

With ``--stream-k K`` (2000: about 4 GB): such a trace larger than the memory budget
(``--stream-budget-bytes``, default tbprof's own default of 4 GiB, set as ``$TBPROF_MEMORY_BYTES``
and ``$TBPROF_CONVERT_MEMORY_BYTES`` so that the conversion streams into the disk cache instead of
taking the machine's free memory), made in ``--stream-dir`` (or given whole with ``--stream-trace``)
and deleted after: converted once by ``tbprof sql`` (the group-by over every event), then the same
group-by from the streamed store in a fresh process, ``--repeat`` times. Printed: each command's
peak RSS (``ru_maxrss``, what ``/usr/bin/time -f %M`` reports: mapped cache pages included) and
its sampled peak RssAnon, the query's own, against the budget.

Targets (issue #37): cold first query <= 0.05x XProf's create + query; from a cached store
<= 0.2 s; a 1 GB Kineto trace's group-by from cache <= 2 s; peak memory within the budget on the
4 GB streamed store. Prints ratios; the figures go to bench/measurements.md ("SQL").

tbprof runs from a fresh install, as XProf does from its own venv: ``pip install .[sql]`` of this
checkout into a venv without the machine's site-packages (``--install-dir``, made or remade when
the checkout changed, as ``bench/core_bench.py`` does); ``--source`` runs this checkout in the
current interpreter instead, its modules byte-compiled first (``compileall`` into their
``__pycache__``, which git ignores), as an installed package's are.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from core_bench import install  # noqa: E402
from json_bench import rss_anon_bytes  # noqa: E402

QUERY = "SELECT name, count(*) AS n, sum(dur_ps) AS total_ps FROM events GROUP BY name ORDER BY total_ps DESC LIMIT 10"
# The same question in XProf's columns (durations in whole ns there).
XPROF_QUERY = ("SELECT kernel_name, count(*) AS n, sum(end_ns - start_ns) AS total_ns FROM Events "
               "GROUP BY kernel_name ORDER BY total_ns DESC LIMIT 10")

XPROF_SCRIPT = r"""
import sys, pathlib, duckdb
from xprof.convert.events_db.python import pywrap_events_db_c_api as ev
src, out, query = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
ev.xspace_to_parquet(input_path=src, output_path=out, options=ev.ParquetExportOptions(
    compression_type=ev.ArrowCompressionType.ZSTD, compression_level=3))
con = duckdb.connect(":memory:")
con.execute("CREATE VIEW Events AS SELECT * FROM read_parquet('" + str(out).replace("'", "''") + "')")
print(len(con.execute(query).fetchall()))
"""

IN_PROCESS = r"""
import json, sys, time
t0 = time.perf_counter()
import tbprof
from tbprof.service.sql import run_sql
from tbprof.service.sql.engine import load_duckdb
load_duckdb()
t1 = time.perf_counter()
p = tbprof.open(sys.argv[1], cache_dir=sys.argv[2])
t2 = time.perf_counter(); first = run_sql(p.profiles, p.run.name, sys.argv[3]); t3 = time.perf_counter()
second = run_sql(p.profiles, p.run.name, sys.argv[3]); t4 = time.perf_counter()
print(json.dumps({"imports_s": t1 - t0, "first_s": t3 - t2, "second_s": t4 - t3, "rows": first["rows"],
                  "pandas_imported": "pandas" in sys.modules}))
"""

# ``tbprof sql`` as the console script runs it (``entry``: it leaves with ``os._exit``), reporting
# as it leaves VmHWM (peak resident, every page), RssFile and RssAnon from /proc/self/status, and
# the wall-clock times (``time.time``) between which ``run_sql`` ran, so that the sampler of the
# parent (``run_measured``) can tell the query's own anonymous peak from the conversion's.
CLI_WITH_STATUS = r"""
import os, sys, json, time
def status():
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem"):
                fields[key] = int(value.split()[0]) * 1024
    return fields
extra = {}
def report():
    os.write(2, ("TBPROF_STATUS " + json.dumps({**status(), **extra}) + "\n").encode())
from tbprof.cli.main import entry, prepare_process
prepare_process()  # (entry's first step, before this wrapper's import of numpy below)
import tbprof.service.sql as sql
real_run_sql = sql.run_sql
def run_sql(*a, **k):
    extra.update(query_anon_before=status()["RssAnon"], query_t0=time.time())
    try:
        return real_run_sql(*a, **k)
    finally:
        extra.update(query_t1=time.time())
sql.run_sql = run_sql
real_exit = os._exit
def leave(code):
    report()
    real_exit(code)
os._exit = leave
sys.argv = ["tbprof", *sys.argv[1:]]
try:
    entry()
finally:
    report()
"""
# How often the parent reads the child's RssAnon (as bench/json_bench.py does). A thread inside
# the child would do it more often but would keep the CLI from forking its cache writer.
SAMPLE_S = 0.005


class Measured(NamedTuple):
    seconds: float
    max_rss_bytes: int  # ru_maxrss: every resident page at the peak, mapped files included
    stdout: str
    status: dict[str, float]  # CLI_WITH_STATUS's fields, bytes and times (empty for other commands)
    peak_anon_bytes: int  # RssAnon's peak, sampled every SAMPLE_S: the process's own memory
    query_peak_anon_bytes: int  # the same while run_sql ran (0 where not reported)
    timings: str  # ``tbprof sql --timings``' line ("" where not asked)


def run_measured(cmd: list[str], env: dict[str, str] | None = None) -> Measured:
    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out_file, stderr=err_file)
        samples: list[tuple[float, int]] = []
        while True:
            pid, wait_status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            samples.append((time.time(), rss_anon_bytes(proc.pid)))
            time.sleep(SAMPLE_S)
        seconds = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(wait_status)
        proc.returncode = code
        err_file.seek(0)
        err = err_file.read()
        if code != 0:
            raise RuntimeError(f"{cmd[:3]} failed ({code}): {err.decode()[-2000:]}")
        out_file.seek(0)
        status: dict[str, float] = {}
        timings = ""
        for line in err.decode(errors="replace").splitlines():
            if line.startswith("TBPROF_STATUS "):
                status = json.loads(line.removeprefix("TBPROF_STATUS "))
            elif line.startswith("tbprof timings (s): "):
                timings = line.removeprefix("tbprof timings (s): ")
        t_q0, t_q1 = status.get("query_t0", 0.0), status.get("query_t1", 0.0)
        query_peak = max((a for t, a in samples if t_q0 <= t <= t_q1), default=0)
        return Measured(seconds, usage.ru_maxrss * 1024, out_file.read().decode(), status,
                        max((a for _, a in samples), default=0), query_peak, timings)


def memory_line(m: Measured) -> str:
    """Peak RSS (every resident page, mapped files included: the streamed input and the cache's
    columns are file-backed, which the kernel writes back and drops under pressure) and the
    process's own memory: RssAnon's sampled peak, the whole command's and the query's."""
    s = m.status
    if not s:
        return f"peak RSS {m.max_rss_bytes / 1e6:.0f} MB, peak anonymous {m.peak_anon_bytes / 1e6:.0f} MB"
    text = (f"peak RSS {s['VmHWM'] / 1e6:.0f} MB (mapped files included), peak anonymous "
            f"{m.peak_anon_bytes / 1e6:.0f} MB (sampled every {SAMPLE_S * 1e3:g} ms)")
    if "query_t0" in s:
        text += (f"; the query alone: peak anonymous {m.query_peak_anon_bytes / 1e6:.0f} MB (before it "
                 f"{s['query_anon_before'] / 1e6:.0f} MB)")
    return text


def median_of(runs: list[Measured]) -> Measured:
    """The run of median time (an odd count: the middle one)."""
    return sorted(runs, key=lambda m: m.seconds)[len(runs) // 2]


def wait_for_cache(cache: Path, timeout_s: float = 300) -> None:
    """The detached writer of the first command has committed the store (its meta.json is written last)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(cache.rglob("stores/*/meta.json")):
            time.sleep(1.0)
            return
        time.sleep(0.5)
    raise RuntimeError(f"no cache entry under {cache} after {timeout_s} s")


KINETO_QUERY = ("SELECT name, count(*) AS n, sum(dur_ps) / 1e6 AS total_us FROM events WHERE cat = 'kernel' "
                "GROUP BY name ORDER BY total_us DESC LIMIT 10")


# The interpreter that runs tbprof (``main``: a fresh install's, or this one with ``--source``).
TBPROF_PYTHON = sys.executable


def tbprof_command() -> list[str]:
    """``tbprof`` as a user runs it: the install's console script, else the source tree's module."""
    script = Path(TBPROF_PYTHON).parent / "tbprof"
    return [str(script)] if TBPROF_PYTHON != sys.executable else [TBPROF_PYTHON, "-m", "tbprof.cli"]


def tbprof_env(**extra: str) -> dict[str, str]:
    """The environment of a tbprof process: the source tree on the path where it runs from there."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TBPROF_CACHE_DIR")}
    if TBPROF_PYTHON == sys.executable:
        env["PYTHONPATH"] = str(REPO / "plugin")
    return {**env, **extra}


class ColdRuns(NamedTuple):
    plain: Measured  # the command alone: the wall time a user sees
    reported: Measured  # the same command wrapped to report its memory and phases


def cli_runs(source: Path, query: str, tmp: Path, env: dict[str, str], repeat: int,
             cache_timeout_s: float = 300) -> tuple[ColdRuns, Measured, dict[str, object]]:
    """``repeat`` times: ``tbprof sql`` cold (a fresh cache) as a user runs it, cold again wrapped
    to report memory and phases, again from the cached store (a new process), and in one process
    twice; the medians (the in-process figures' each on its own)."""
    plains, colds, warms, inprocs = [], [], [], []
    for i in range(repeat):
        plain_cache = tmp / f"plain{i}"
        plain_cache.mkdir()
        plains.append(run_measured([*tbprof_command(), "sql", str(source), query, "--format", "json",
                                    "--cache-dir", str(plain_cache)], env))
        # Not timed: its detached cache write must not run into the next measurement.
        wait_for_cache(plain_cache, timeout_s=cache_timeout_s)
        cache = tmp / f"cache{i}"
        cache.mkdir()
        cli = [TBPROF_PYTHON, "-c", CLI_WITH_STATUS, "sql", str(source), query, "--format", "json",
               "--cache-dir", str(cache), "--timings"]
        colds.append(run_measured(cli, env))
        wait_for_cache(cache, timeout_s=cache_timeout_s)
        warms.append(run_measured(cli, env))
        inprocs.append(json.loads(run_measured([TBPROF_PYTHON, "-c", IN_PROCESS, str(source), str(cache), query],
                                               env).stdout))
    inproc: dict[str, object] = {key: sorted(float(r[key]) for r in inprocs)[len(inprocs) // 2]
              for key in ("imports_s", "first_s", "second_s")}
    inproc["pandas_imported"] = any(bool(r["pandas_imported"]) for r in inprocs)
    for name, runs in (("cold", plains), ("cold, reported", colds), ("cached", warms)):
        print(f"  {name} runs: " + ", ".join(f"{m.seconds:.2f} s" for m in runs))
    answers = {json.dumps(json.loads(m.stdout)["rows"]) for m in (*plains, *colds, *warms)}
    print(f"  same answer every run: {len(answers) == 1}")
    return ColdRuns(median_of(plains), median_of(colds)), median_of(warms), inproc


def stream(args: argparse.Namespace) -> None:
    """A Kineto trace larger than the budget: converted once (streamed), then the group-by over
    every event from its store in fresh processes, peak memory against the budget."""
    budget = args.stream_budget_bytes
    env = tbprof_env(TBPROF_MEMORY_BYTES=str(budget), TBPROF_CONVERT_MEMORY_BYTES=str(budget))
    with tempfile.TemporaryDirectory(dir=args.stream_dir) as tmp_name:
        tmp = Path(tmp_name)
        if args.stream_trace:
            big = Path(args.stream_trace)
        else:
            src = next((REPO / "demo_logs" / "torch_ddp").glob("rank0.*.pt.trace.json"))
            # The trace, then the streamed store (up to 3x the file while it is written: STREAM_DISK_FACTOR).
            need = src.stat().st_size * args.stream_k * 4
            free = shutil.disk_usage(tmp).free
            if need > free:
                raise SystemExit(f"--stream-k {args.stream_k} needs about {need / 1e9:.1f} GB of disk in "
                                 f"{tmp.parent}, {free / 1e9:.1f} GB is free (--stream-dir)")
            big = tmp / "big" / "rank0.pt.trace.json"
            big.parent.mkdir()
            tool = Path(args.profiles_dir).parent / "tools" / "big_kineto.py"
            subprocess.run([sys.executable, str(tool), str(src), str(big), str(args.stream_k)], check=True)
        print(f"file: {big.name} {big.stat().st_size / 1e9:.2f} GB; budget {budget / 2**20:.0f} MiB; query: {QUERY}")
        cache = tmp / "cache"
        cache.mkdir()
        cli = [TBPROF_PYTHON, "-c", CLI_WITH_STATUS, "sql", str(big), QUERY, "--format", "json",
               "--cache-dir", str(cache), "--timeout", "3600", "--timings"]
        cold = run_measured(cli, env)
        wait_for_cache(cache, timeout_s=3600)
        warms = [run_measured(cli, env) for _ in range(args.repeat)]
        print("  cached-store runs: " + ", ".join(f"{m.seconds:.2f} s" for m in warms))
        for name, m in (("conversion (streamed) + query", cold), ("from the streamed store", median_of(warms))):
            print(f"tbprof sql, {name}: {m.seconds:.2f} s, peak RSS (ru_maxrss) {m.max_rss_bytes / 1e6:.0f} MB "
                  f"= {m.max_rss_bytes / budget:.2f}x the budget; {memory_line(m)}; peak anonymous / budget "
                  f"{m.peak_anon_bytes / budget:.2f} (process), {m.query_peak_anon_bytes / budget:.2f} (the query)")
        print(f"  where the conversion's run went (s): {cold.timings}")
        answers = {json.dumps(json.loads(m.stdout)["rows"]) for m in (cold, *warms)}
        print(f"same answer every run: {len(answers) == 1}")


def kineto(args: argparse.Namespace) -> None:
    env = tbprof_env()
    if args.memory_bytes:
        env.update(TBPROF_MEMORY_BYTES=str(args.memory_bytes), TBPROF_CONVERT_MEMORY_BYTES=str(args.memory_bytes))
        print(f"memory budget: {args.memory_bytes / 2**20:.0f} MiB")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        src = next((REPO / "demo_logs" / "torch_ddp").glob("rank0.*.pt.trace.json"))
        big = tmp / "big" / "rank0.pt.trace.json"
        big.parent.mkdir()
        tool = Path(args.profiles_dir).parent / "tools" / "big_kineto.py"
        subprocess.run([sys.executable, str(tool), str(src), str(big), str(args.kineto_k)], check=True)
        print(f"file: {big.name} {big.stat().st_size / 1e9:.2f} GB; query: {KINETO_QUERY}")
        colds, warm, inproc = cli_runs(big, KINETO_QUERY, tmp, env, args.repeat, cache_timeout_s=900)
        cold = colds.reported
        print(f"tbprof sql, cold (conversion included): {colds.plain.seconds:.2f} s; reported: {memory_line(cold)}")
        print(f"tbprof sql, cached store (new process): {warm.seconds:.2f} s, {memory_line(warm)}")
        print(f"tbprof run_sql on the cached store    : first {inproc['first_s']:.3f} s, again "
              f"{inproc['second_s']:.3f} s  (target <= 2 s)")
        if args.memory_bytes:
            for name, m in (("cold", cold), ("cached", warm)):
                budget = args.memory_bytes
                print(f"peak anonymous / budget, {name:6}      : {m.peak_anon_bytes / budget:.2f} (process), "
                      f"{m.query_peak_anon_bytes / budget:.2f} (the query)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--xprof-python", default="/opt/xprof-venv/bin/python")
    ap.add_argument("--profiles-dir", default=str(REPO.parent / "shared" / "profiles"),
                    help="folder of jax_large.tar.gz (default: ../shared/profiles)")
    ap.add_argument("--skip-xprof", action="store_true")
    ap.add_argument("--kineto-k", type=int, default=0, help="also a PyTorch trace of rank 0 repeated K times")
    ap.add_argument("--skip-jax", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each measurement; the median is printed")
    ap.add_argument("--memory-bytes", type=int, default=0,
                    help="tbprof's memory budget and conversion memory ($TBPROF_MEMORY_BYTES, "
                         "$TBPROF_CONVERT_MEMORY_BYTES): 2**30 streams a 4 GB trace into the disk cache")
    ap.add_argument("--stream-k", type=int, default=0,
                    help="also a PyTorch trace of rank 0 repeated K times (2000: ~4 GB), streamed into the cache")
    ap.add_argument("--stream-budget-bytes", type=int, default=4 << 30,
                    help="memory budget of --stream-k ($TBPROF_MEMORY_BYTES and $TBPROF_CONVERT_MEMORY_BYTES)")
    ap.add_argument("--stream-dir", default=None, help="folder for --stream-k's trace and cache (default: $TMPDIR)")
    ap.add_argument("--stream-trace", default=None, help="an existing trace for --stream-k's measurement")
    ap.add_argument("--install-dir", default="/tmp/tbprof-sql-venv",
                    help="the venv tbprof is installed into (pip install .[sql]; remade when the checkout changed)")
    ap.add_argument("--source", action="store_true", help="run the source tree in this interpreter")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    global TBPROF_PYTHON
    if args.source:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "plugin" / "tbprof")], check=True,
                       stdout=subprocess.DEVNULL)
    else:
        TBPROF_PYTHON = install(Path(args.install_dir), extras="sql")
    print(f"tbprof: {'source tree' if args.source else 'fresh install in ' + args.install_dir} ({TBPROF_PYTHON})")
    if args.stream_k or args.stream_trace:
        stream(args)
    if args.kineto_k:
        kineto(args)
    if args.skip_jax:
        return 0
    env = tbprof_env()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        with tarfile.open(Path(args.profiles_dir) / "jax_large.tar.gz") as tar:
            tar.extractall(tmp / "data", filter="data")
        xplane = next((tmp / "data").rglob("*.xplane.pb"))
        print(f"file: {xplane.name} {xplane.stat().st_size / 1e6:.1f} MB; query: {QUERY}")

        xp: Measured | None = None
        if not args.skip_xprof:
            xps = []
            for i in range(args.repeat):
                xps.append(run_measured([args.xprof_python, "-c", XPROF_SCRIPT, str(xplane),
                                         str(tmp / f"events{i}.parquet"), XPROF_QUERY]))
            print("  XProf runs: " + ", ".join(f"{m.seconds:.2f} s" for m in xps))
            xp = median_of(xps)
            print(f"XProf 2.24.2 create_events_db + query : {xp.seconds:.2f} s, "
                  f"peak RSS {xp.max_rss_bytes / 1e6:.0f} MB")

        colds, warm, inproc = cli_runs(xplane, QUERY, tmp, env, args.repeat)
        cold = colds.plain
        print(f"tbprof sql, cold (empty cache)        : {cold.seconds:.2f} s; reported run "
              f"{colds.reported.seconds:.2f} s, {memory_line(colds.reported)}")
        print(f"  where the median reported run went (s): {colds.reported.timings}")
        print(f"tbprof sql, cached store (new process): {warm.seconds:.2f} s, {memory_line(warm)}")
        print(f"tbprof run_sql on the cached store    : first {inproc['first_s']:.3f} s (store mapped, columns "
              f"built), again {inproc['second_s']:.3f} s; importing tbprof's SQL layer and DuckDB "
              f"{inproc['imports_s']:.2f} s; "
              f"pandas imported: {inproc['pandas_imported']}")
        if xp is not None:
            print(f"ratio cold / XProf create + query     : {cold.seconds / xp.seconds:.3f}  (target <= 0.05)")
            print(f"ratio peak RSS cold / XProf's         : {colds.reported.max_rss_bytes / xp.max_rss_bytes:.3f}")
        print(f"cached-store query (in process)       : {inproc['first_s']:.3f} s  (target <= 0.2 s)")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
