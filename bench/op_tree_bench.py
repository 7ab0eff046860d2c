"""torch-tb-profiler's operator tree (analyses/ops/op_tree.py) on a large PyTorch trace: the vector
tree against the per-event rule walk, and the two tools built on it.

    python bench/op_tree_bench.py [--copies 45] [--source TRACE] [--dir /tmp/tbprof_op_tree_bench] [--repeat 5]
                                  [--variant both|vector|loop] [--tb-profiler-python /tmp/tbp/bin/python]
                                  [--baseline-plugin ../main/plugin]

The trace is ``demo_logs/torch_ddp``'s rank 0 (2.2 MB) repeated ``--copies`` times by
``shared/tools/big_kineto.py`` (45 copies: about 100 MB), written under ``--dir`` (never in the
repository); ``--source`` picks another trace (``tests/data/kineto_with_modules``'s, for a module
view with rows). It is read once into a store; then, warm (store in memory, the tree and the
tools' rows dropped from its memo before each run; best of ``--repeat``):

- ``nest_inputs``: the host plane's node kinds, launches and their device work (vector code);
- ``vector``: ``op_tree.nest`` on those inputs (the compiled nesting walk + numpy);
- ``loop``: the per-event rule walk (``reference`` in tests/analyses/test_op_tree_nest.py, the
  algorithm op_tree.py had before it was vectorised) on the same inputs; its result is checked
  equal to ``vector``'s;
- ``operators_by_shape`` and ``module_view``: the tools' rows (``op_shapes.operator_groups``,
  ``modules.module_rows``), the tree included; with ``--baseline-plugin`` (e.g. main's
  ``plugin/`` folder), the same on that checkout's package, in a child process, in the same run.

Times are printed in ms and in µs per host event (the target is <= 1 µs per host event for the
tree). With ``--tb-profiler-python`` (a venv with torch-tb-profiler 0.4.3, as
tests/golden/make_tb_profiler_goldens.py makes it), that Python times the plugin's own
``RunProfileData.from_json(...)`` + ``process()`` on the same file in a child process: its
whole load of a run (JSON parse, every view), which holds its operator tree, so it is a bound
only. Timed assertions do not belong in tests: this prints.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tbprof.analyses.ops import modules, op_shapes
from tbprof.analyses.ops.op_tree import nest, nest_inputs
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store.tables import ProfileStore

REPO = Path(__file__).resolve().parent.parent
SOURCE = next((REPO / "demo_logs" / "torch_ddp").glob("rank0.*.pt.trace.json"))
BIG_KINETO = next((p for p in (REPO.parent / "shared" / "tools" / "big_kineto.py",
                               Path("/work/shared/tools/big_kineto.py")) if p.exists()), None)
FIELDS = ("rows", "parent", "dur_ps", "self_host_ps", "device_ps", "self_device_ps", "tc_eligible", "tc_self_ps",
          "tc_total_ps")

# Child: argv = trace, repeat. The two tools on another checkout's package (``--baseline-plugin``).
BASELINE_CHILD = r"""
import json, sys, time
from pathlib import Path
from tbprof.analyses.ops import modules, op_shapes
from tbprof.readers.chrome_trace import read_chrome_trace
store = read_chrome_trace(Path(sys.argv[1]))
out = {}
for name, fn, key in (("operators_by_shape", op_shapes.operator_groups, ("operators_by_shape", "input_shape")),
                      ("module_view", modules.module_rows, ("module_view",))):
    best = float("inf")
    for _ in range(int(sys.argv[2])):
        for k in (key, ("tb_profiler_op_tree",)):
            store._memo.clear_key(k)
        t = time.perf_counter()
        fn(store)
        best = min(best, time.perf_counter() - t)
    out[name] = 1e3 * best
print(json.dumps(out))
"""

TB_PROFILER_CHILD = r"""
import json, sys, time
t = time.perf_counter()
from torch_tb_profiler.profiler.data import RunProfileData
with open(sys.argv[1]) as f:
    data = RunProfileData.from_json("worker", "span", json.load(f))
data.process()
print(json.dumps({"s": time.perf_counter() - t}))
"""


def _best_ms(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return 1e3 * best


def _reference() -> Callable[..., Any]:
    spec = importlib.util.spec_from_file_location("op_tree_reference", REPO / "tests" / "analyses" /
                                                  "test_op_tree_nest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    walk: Callable[..., Any] = module.reference
    return walk


MEMO_KEYS = (("tb_profiler_op_tree",), ("operators_by_shape", "input_shape"), ("module_view",))


def _fresh(store: ProfileStore, fn: Callable[[ProfileStore], Any]) -> Callable[[], Any]:
    """``fn`` on the store with the tree and the tools' rows dropped from its memo (its decoded
    columns stay: a page opened on a loaded run)."""
    def run() -> Any:
        for key in MEMO_KEYS:
            store._memo.clear_key(key)
        return fn(store)
    return run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=45, help="copies of torch_ddp rank 0 (2.2 MB each)")
    ap.add_argument("--source", type=Path, default=SOURCE, help="the trace to repeat")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "tbprof_op_tree_bench")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--variant", choices=("both", "vector", "loop"), default="both")
    ap.add_argument("--tb-profiler-python", type=Path, default=None)
    ap.add_argument("--baseline-plugin", type=Path, default=None,
                    help="another checkout's plugin/ folder (main's): its two tools timed in a child, as here")
    args = ap.parse_args()

    trace = args.dir / f"{args.source.name.split('.')[0]}_x{args.copies}.pt.trace.json"
    if not trace.exists():
        if BIG_KINETO is None:
            sys.exit("shared/tools/big_kineto.py not found")
        args.dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(BIG_KINETO), str(args.source), str(trace), str(args.copies)], check=True)
    t = time.perf_counter()
    store = read_chrome_trace(trace)
    read_s = time.perf_counter() - t
    plane = store.plane("/host:CPU")
    found = nest_inputs(store)
    if plane is None or found is None:
        sys.exit("no host plane")
    inputs = found[0]
    n_host = plane.n_events
    n_nodes = int((inputs.kind >= 0).sum())
    print(f"{trace.name}: {trace.stat().st_size / 1e6:.0f} MB, {n_host} host events ({n_nodes} tree candidates), "
          f"read in {read_s:.1f} s; best of {args.repeat}, warm")

    def row(label: str, ms: float) -> None:
        print(f"  {label:<34} {ms:9.1f} ms  {1e3 * ms / n_host:6.3f} µs/host event")

    row("nest_inputs", _best_ms(_fresh(store, nest_inputs), args.repeat))
    vector_ms = loop_ms = None
    if args.variant in ("both", "vector"):
        vector_ms = _best_ms(lambda: nest(*inputs), args.repeat)
        row("vector: nest", vector_ms)
    if args.variant in ("both", "loop"):
        walk = _reference()
        loop_ms = _best_ms(lambda: walk(*inputs), min(args.repeat, 2))
        row("loop: per-event rule walk", loop_ms)
    if vector_ms is not None and loop_ms is not None:
        got, want = nest(*inputs), _reference()(*inputs)
        same = all(np.array_equal(getattr(got, f), getattr(want, f)) for f in FIELDS)
        print(f"  loop / vector = {loop_ms / vector_ms:.1f}x; results equal: {same}")
    tools_ms = 0.0
    baseline: dict[str, float] = {}
    if args.baseline_plugin is not None:
        out = subprocess.run([sys.executable, "-c", BASELINE_CHILD, str(trace), str(args.repeat)], capture_output=True,
                             text=True, check=True, env={**os.environ, "PYTHONPATH": str(args.baseline_plugin)})
        baseline = json.loads(out.stdout.strip().splitlines()[-1])
    for label, fn in (("operators_by_shape", op_shapes.operator_groups), ("module_view", modules.module_rows)):
        ms = _best_ms(_fresh(store, fn), args.repeat)
        tools_ms += ms
        row(f"{label} (tree included)", ms)
        if label in baseline:
            print(f"  {'  baseline ' + str(args.baseline_plugin):<34} {baseline[label]:9.1f} ms; baseline / this = "
                  f"{baseline[label] / ms:.1f}x" if ms > 0 else "")
    if args.tb_profiler_python is not None:
        out = subprocess.run([str(args.tb_profiler_python), "-c", TB_PROFILER_CHILD, str(trace)], capture_output=True,
                             text=True, check=True)
        tb_s = float(json.loads(out.stdout.strip().splitlines()[-1])["s"])
        print(f"  torch-tb-profiler 0.4.3 load + process (every view): {tb_s:.1f} s; tbprof read + both tools "
              f"{read_s + tools_ms / 1e3:.1f} s; ratio tbprof / plugin = {(read_s + tools_ms / 1e3) / tb_s:.3f}")


if __name__ == "__main__":
    main()
