"""First-contact benchmark of the compiled core, side by side with XProf 2.24.2 in one run.

    python bench/core_bench.py [--xprof-python /opt/xprof-venv/bin/python] [--skip-xprof] [--repeat 3]
                               [--install-dir /tmp/tbprof-fresh-venv]

tbprof runs from a fresh install, as a user gets it: ``pip install .`` of this checkout into a
venv of its own (``--install-dir``; made, or remade when the checkout changed), without the
machine's site-packages, like XProf's venv; ``--source`` runs this checkout from the source tree
in the current interpreter instead.

Every case runs in a fresh process, the way a user meets it (min of ``--repeat`` runs):
  - ``tbprof summary`` of keras_cnn on a fresh install: new HOME, empty converted-profile
    cache, nothing compiled at run time. Against XProf's whole process on the same file
    (interpreter start, imports, overview_page conversion). Target: ratio <= 1.
  - ``tbprof summary`` of keras_cnn again (converted profile cached). Target: <= 0.3 s.
  - ``tbprof --help``. Target: <= 0.15 s.
  - ``tbprof summary`` of jax_large on a fresh install, wall time and peak RSS, against XProf's
    cold overview_page conversion time and peak RSS. Targets: <= 0.05x and <= 0.3x.
  - the wire scan of jax_large on 1 and 2 threads (in process), and the jax_large cold summary
    with TBPROF_THREADS=1 vs 2: how decoding scales with cores.
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "profiles"


def unpack(name: str, dest: Path) -> Path:
    with tarfile.open(SHARED / f"{name}.tar.gz") as tar:
        tar.extractall(dest, filter="data")
    return next((dest / name).rglob("vm.xplane.pb"))


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed ({proc.returncode}): {err[-2000:]}")
    return seconds, usage.ru_maxrss * 1024


# The interpreter that runs tbprof: a fresh install's (``install()``), else this one on the source tree.
TBPROF_PYTHON = sys.executable
FROM_SOURCE = True


def _checkout_digest() -> str:
    """What the install was made from: HEAD and the working tree's changes to the package."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    diff = subprocess.run(["git", "diff", "HEAD", "--", "plugin", "setup.py", "pyproject.toml"], cwd=REPO,
                          capture_output=True).stdout
    return f"{head}-{hashlib.sha256(diff).hexdigest()[:16]}"


def install(venv: Path, extras: str = "") -> str:
    """``pip install .[extras]`` of this checkout into ``venv`` (no system site-packages); its python."""
    stamp = venv / "tbprof-checkout.txt"
    python = venv / "bin" / "python"
    digest = f"{_checkout_digest()}[{extras}]"
    if not (python.exists() and stamp.exists() and stamp.read_text() == digest):
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        # A copy of the tree: an in-place build's leftovers (build/, *.so) must not leak in.
        with tempfile.TemporaryDirectory() as src:
            subprocess.run(["git", "worktree", "add", "--detach", src, "HEAD"], cwd=REPO, check=True,
                           capture_output=True)
            try:
                diff = subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=REPO, capture_output=True,
                                      check=True).stdout
                if diff:
                    subprocess.run(["git", "apply"], cwd=src, input=diff, check=True)
                target = f"{src}[{extras}]" if extras else src
                subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", target],
                               check=True)
            finally:
                subprocess.run(["git", "worktree", "remove", "--force", src], cwd=REPO, check=False)
        stamp.write_text(digest)
    return str(python)


def tbprof_env(home: Path, threads: int | None = None) -> dict[str, str]:
    # An installed package has its bytecode compiled by pip: allow .pyc files (see main()).
    drop = ("XDG_CACHE_HOME", "TBPROF_CACHE_DIR", "TBPROF_THREADS", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(HOME=str(home))
    if FROM_SOURCE:
        env["PYTHONPATH"] = str(REPO / "plugin")
    if threads is not None:
        env["TBPROF_THREADS"] = str(threads)
    return env


def tbprof(args: list[str], home: Path, threads: int | None = None) -> tuple[float, int]:
    # The installed ``tbprof`` command, as a user runs it; the source tree through ``-m``.
    command = [TBPROF_PYTHON, "-m", "tbprof.cli"] if FROM_SOURCE else [str(Path(TBPROF_PYTHON).parent / "tbprof")]
    return timed([*command, *args], tbprof_env(home, threads))


def wait_committed(home: Path, timeout_s: float = 60) -> None:
    """Until the store the last command converted is in HOME's cache (a detached child of the
    command writes it after the command has answered)."""
    deadline = time.monotonic() + timeout_s
    while not list((home / ".cache" / "tbprof" / "stores").glob("*/meta.json")):
        if time.monotonic() > deadline:
            raise RuntimeError(f"no converted store appeared in {home}")
        time.sleep(0.02)


def fresh_summary(xplane: Path, tmp: Path, repeat: int, threads: int | None = None) -> tuple[float, int]:
    runs = []
    for i in range(repeat):
        home = tmp / f"home_{xplane.parent.name}_{threads}_{i}_{time.monotonic_ns()}"
        home.mkdir()
        runs.append(tbprof(["summary", str(xplane)], home, threads))
        # Not timed: the command has answered and exited; its cache write must not run into the
        # next measurement (of either tool).
        wait_committed(home)
    return min(r[0] for r in runs), min(r[1] for r in runs)


def xprof_whole_process(xprof_python: str, xplane: Path, repeat: int) -> float:
    """XProf from interpreter start to the overview_page on a fresh copy (no XProf cache)."""
    best = float("inf")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            session = Path(d) / "plugins" / "profile" / "s"
            session.mkdir(parents=True)
            copy = session / xplane.name
            shutil.copy(xplane, copy)
            seconds, _ = timed([xprof_python, str(REPO / "bench" / "xprof_runner.py"), "overview_page", str(copy),
                                "--quiet"], dict(os.environ))
            best = min(best, seconds)
    return best


def xprof_cold(xprof_python: str, xplane: Path) -> tuple[float, float]:
    """XProf's own cold overview_page conversion time and the process's peak RSS."""
    with tempfile.TemporaryDirectory() as d:
        session = Path(d) / "plugins" / "profile" / "s"
        session.mkdir(parents=True)
        copy = session / xplane.name
        shutil.copy(xplane, copy)
        out = subprocess.run([xprof_python, str(REPO / "bench" / "xprof_runner.py"), "overview_page", str(copy)],
                             check=True, capture_output=True, text=True).stdout
    res = json.loads(out.strip().splitlines()[-1])
    return float(res["seconds"][0]), float(res["peak_rss_bytes"])


_SCAN_CHILD = r"""
import json, sys, time
from tbprof._core import wire
data = open(sys.argv[1], "rb").read()
out = {}
for threads in (1, 2):
    runs = []
    for _ in range(int(sys.argv[2])):
        t = time.perf_counter(); r = wire.scan(data, threads=threads); runs.append((time.perf_counter() - t, r.phase_s))
        del r
    best = min(runs, key=lambda x: x[0])
    out[threads] = {"total": best[0], **{k: v for k, v in best[1].items() if k in ("index", "count", "decode", "join")}}
print(json.dumps(out))
"""


def scan_scaling(xplane: Path, repeat: int) -> dict[str, dict[str, float]]:
    env = tbprof_env(Path.home())
    out = subprocess.run([TBPROF_PYTHON, "-c", _SCAN_CHILD, str(xplane), str(max(repeat, 3))], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--xprof-python", default="/opt/xprof-venv/bin/python")
    ap.add_argument("--skip-xprof", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--install-dir", default="/tmp/tbprof-fresh-venv")
    ap.add_argument("--source", action="store_true", help="run the source tree in this interpreter")
    args = ap.parse_args()
    global TBPROF_PYTHON, FROM_SOURCE
    if args.source:
        # pip compiles an installed package's bytecode at install time; the source tree gets the same.
        compileall.compile_dir(str(REPO / "plugin" / "tbprof"), quiet=1)
    else:
        TBPROF_PYTHON, FROM_SOURCE = install(Path(args.install_dir)), False
    print(f"tbprof: {'source tree' if FROM_SOURCE else 'fresh install in ' + args.install_dir} ({TBPROF_PYTHON})")
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        small = unpack("keras_cnn", tmp / "data")
        large = unpack("jax_large", tmp / "data")
        print(f"files: keras_cnn {small.stat().st_size / 1e6:.1f} MB, jax_large {large.stat().st_size / 1e6:.1f} MB; "
              f"{os.cpu_count()} CPUs")

        # Each tbprof case alternates with its XProf counterpart (or the 1- and 2-thread runs with
        # each other), so both sides of a ratio see the same load on a shared machine; the best
        # of ``--repeat`` rounds is reported for each side.
        xp = not args.skip_xprof
        rounds = []
        for _ in range(args.repeat):
            rounds.append({
                "fresh_small": fresh_summary(small, tmp, 1)[0],
                "xp_small": xprof_whole_process(args.xprof_python, small, 1) if xp else float("nan"),
            })
        cached_home = tmp / "home_cached"
        cached_home.mkdir()
        tbprof(["summary", str(small)], cached_home)
        wait_committed(cached_home)
        cached_small = min(tbprof(["summary", str(small)], cached_home)[0] for _ in range(args.repeat))
        help_s = min(tbprof(["--help"], cached_home)[0] for _ in range(args.repeat))
        large_runs, xp_large_runs, threads_runs = [], [], []
        for _ in range(args.repeat):
            large_runs.append(fresh_summary(large, tmp, 1))
            if xp:
                xp_large_runs.append(xprof_cold(args.xprof_python, large))
            one_thread = fresh_summary(large, tmp, 1, threads=1)[0]
            threads_runs.append((one_thread, fresh_summary(large, tmp, 1, threads=2)[0]))
        scan = scan_scaling(large, args.repeat)

        fresh_small = min(r["fresh_small"] for r in rounds)
        large_s, large_rss = min(r[0] for r in large_runs), min(r[1] for r in large_runs)
        large_1t, large_2t = min(r[0] for r in threads_runs), min(r[1] for r in threads_runs)
        print(f"tbprof summary keras_cnn, fresh install : {fresh_small:.3f} s (whole process)")
        print(f"tbprof summary keras_cnn, cached        : {cached_small:.3f} s (target <= 0.3 s)")
        print(f"tbprof --help                           : {help_s:.3f} s (target <= 0.15 s)")
        print(f"tbprof summary jax_large, fresh install : {large_s:.3f} s, peak RSS {large_rss / 1e6:.0f} MB")
        print(f"  TBPROF_THREADS=1 / 2                  : {large_1t:.3f} s / {large_2t:.3f} s "
              f"(x{large_1t / large_2t:.2f})")
        one, two = scan["1"], scan["2"]
        print(f"wire scan jax_large, 1 / 2 threads      : {one['total']:.3f} s / {two['total']:.3f} s "
              f"(x{one['total'] / two['total']:.2f}); phases index {one['index']:.3f} / {two['index']:.3f}, "
              f"count {one['count']:.3f} / {two['count']:.3f}, "
              f"decode {one['decode']:.3f} / {two['decode']:.3f} (x{one['decode'] / two['decode']:.2f}), "
              f"join {one['join']:.3f} / {two['join']:.3f}")
        print(f"load average now: {os.getloadavg()[0]:.1f}")
        if not xp:
            return 0
        xp_small = min(r["xp_small"] for r in rounds)
        xp_large_s, xp_large_rss = min(r[0] for r in xp_large_runs), min(r[1] for r in xp_large_runs)
        print(f"XProf 2.24.2 keras_cnn whole process    : {xp_small:.3f} s (interpreter + import + overview_page)")
        print(f"XProf 2.24.2 jax_large cold overview    : {xp_large_s:.2f} s, peak RSS {xp_large_rss / 1e6:.0f} MB")
        print(f"ratio keras_cnn fresh / XProf process   : {fresh_small / xp_small:.2f}  (target <= 1)")
        print(f"ratio jax_large cold / XProf cold       : {large_s / xp_large_s:.3f}  (target <= 0.05)")
        print(f"ratio jax_large peak RSS / XProf's      : {large_rss / xp_large_rss:.3f}  (target <= 0.3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
