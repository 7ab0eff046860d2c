"""The tfprof model: graph nodes of a ``ProfileProto`` with their per-step execution records.

tfprof (``tf.compat.v1.profiler``) keeps one record per (graph node, traced step): run
count, CPU / accelerator kernel times and memory. ``TfprofProfile`` holds the nodes as
parallel lists (names, op types, inputs, call stacks: one entry per graph node) and the
records as numpy columns of a long table (one row per node and step), so the statistics
of a step, or the average over steps, are a few ``np.bincount`` calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from tbprof.store.memo import Memo
from tbprof.store.strings import StringTable
from tbprof.store.view import Derived

T = TypeVar("T")

# Per-record columns of ExecTable (all int64), in the order tfprof shows them.
EXEC_COLUMNS = ("run_count", "accelerator_exec_micros", "cpu_exec_micros", "requested_bytes", "peak_bytes",
                "residual_bytes", "output_bytes", "all_start_micros", "latest_end_micros")


# Memory per item of a tfprof file, an upper bound of what it takes in crafted files whose
# items are as small as they can be (tracemalloc and peak RSS: tests/hostile/test_tfprof_memory.py,
# bench/tfprof_memory_bench.py; bench/measurements.md#conversion-memory): a graph node as the
# reader keeps it (names, op types, inputs as Python lists) and in a view; a name scope (each
# ``/`` of a name: a scope-view node and its displayed row); a call-stack frame (its ``Trace``,
# a code-view node and row).
NODE_BYTES = 2560
SCOPE_BYTES = 2560
FRAME_BYTES = 2560
HELD_NODE_BYTES = 1100
HELD_FRAME_BYTES = 160


def views_need_bytes(nodes: int, scopes: int, frames: int) -> int:
    """Peak memory of reading a tfprof file and building its largest views, from its counts."""
    return nodes * NODE_BYTES + scopes * SCOPE_BYTES + frames * FRAME_BYTES


@dataclass(frozen=True)
class Trace:
    """One frame of the Python call stack that created a node."""

    file: str
    lineno: int
    function: str
    func_start_line: int


@dataclass
class ExecTable:
    """One row per (node, step) with an ``ExecProfile``; sorted by (node, step)."""

    node: np.ndarray  # int32 node index
    step: np.ndarray  # int64
    values: dict[str, np.ndarray]  # EXEC_COLUMNS -> int64

    def __len__(self) -> int:
        return int(self.node.shape[0])


@dataclass
class KernelTable:
    """Every (start, duration) pair of ``accelerator_execs`` / ``cpu_execs``: the timeline."""

    node: np.ndarray  # int32
    step: np.ndarray  # int64
    device: np.ndarray  # int32 index into TfprofProfile.devices
    accelerator: np.ndarray  # bool: from accelerator_execs (else cpu_execs)
    start_micros: np.ndarray  # int64, absolute as recorded
    exec_micros: np.ndarray  # int64


@dataclass
class TfprofProfile:
    """A decoded tfprof ``ProfileProto`` (one file)."""

    source_path: str
    host: str
    names: list[str]  # node names, sorted (tfprof orders its views by name)
    ops: list[str]
    op_types: list[tuple[str, ...]]  # sorted, deduplicated (op type, device, user types)
    canonical_device: list[str]
    host_device: list[str]
    static_float_ops: np.ndarray  # int64, float ops of one run
    parameters: np.ndarray  # int64, product of the node's shape (0 when unknown)
    shapes: list[tuple[int, ...]]
    inputs: list[list[int]]  # node indices in input-index order (inputs that are nodes of the file)
    input_names: list[list[str]]  # every input name, including ones without a node
    input_src_output: list[list[int]]  # output index of the source node, per input
    output_shapes: list[dict[int, tuple[int, ...]]]
    traces: list[tuple[Trace, ...]]  # call stack per node, outermost first (empty without traces)
    data_format: list[str]  # "data_format" attr ("" when absent), for the advisor
    execs: ExecTable
    kernels: KernelTable
    devices: list[str]  # device names of KernelTable.device
    steps: list[int]
    has_trace: bool
    miss_accelerator_stream: bool
    format: str = "tfprof"
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # A tfprof profile has no event planes. These keep code written for ProfileStore (run
    # summaries, availability checks) working on it: it reads as a profile without events.
    planes: list[Any] = field(default_factory=list)
    hostnames: list[str] = field(default_factory=list)
    strings: StringTable = field(default_factory=StringTable)
    origin_ps: int = 0
    span_ps: int = 0
    _index: dict[str, int] = field(default_factory=dict, repr=False)
    _memo: Memo = field(default_factory=Memo, repr=False)

    def __post_init__(self) -> None:
        self._index = {n: i for i, n in enumerate(self.names)}

    @property
    def n_nodes(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        return self._index.get(name, -1)

    n_events = 0

    def plane(self, name: str) -> None:
        return None

    def planes_with_prefix(self, prefix: str) -> list[Any]:
        return []

    def stat_id(self, name: str) -> int:
        return -1

    @property
    def nbytes(self) -> int:
        """Rough memory size for the store cache's byte budget."""
        arrays = [self.static_float_ops, self.parameters, self.execs.node, self.execs.step,
                  *self.execs.values.values(), self.kernels.node, self.kernels.step, self.kernels.start_micros,
                  self.kernels.exec_micros]
        frames = sum(len(t) for t in self.traces)
        return sum(int(a.nbytes) for a in arrays) + HELD_NODE_BYTES * self.n_nodes + HELD_FRAME_BYTES * frames

    def memo(self, key: Any, compute: Callable[[], T]) -> T:
        return self._memo.get(key, compute)

    def derive(self, value: Derived[T]) -> T:
        """``ProfileStore.derive``: ``tbprof summary``'s step fields read every run's stores, a
        tfprof profile as a store without events (its step assignment: none)."""
        store: Any = self  # computed as from a ProfileStore without planes
        return self.memo(value.key, lambda: value.compute(store))

    def has_execs(self) -> np.ndarray:
        """Whether each node has any exec record (tfprof then counts float ops per run)."""
        return self.memo("has_execs", lambda: np.bincount(self.execs.node, minlength=self.n_nodes) > 0)

    def node_stats(self, step: int) -> dict[str, np.ndarray]:
        """Self statistics of every node for ``step`` (-1: the average over the steps it ran).

        As tfprof: the average of a value is its sum over the node's records divided by the
        number of steps that node has a record for, in integer arithmetic (C++ truncation);
        ``exec_micros`` is averaged on its own, so it can differ from accelerator + CPU by one.
        Float ops are the node's static count times its run count once it ran, else static.
        """
        # One memo entry per distinct answer: every negative step is the average, and every
        # step without records has the same (zero) statistics; a request cannot mint new keys.
        key: int | str
        if step < 0:
            step, key = -1, -1
        elif step in self.steps:
            key = step
        else:
            key = "no_records"
        return self.memo(("node_stats", key), lambda: self._node_stats(step))

    def _node_stats(self, step: int) -> dict[str, np.ndarray]:
        n = self.n_nodes
        ex = self.execs
        rows = np.arange(len(ex)) if step < 0 else np.nonzero(ex.step == step)[0]
        node = ex.node[rows]

        def summed(values: np.ndarray) -> np.ndarray:
            # int64 sums stay exact (np.bincount weights would go through float64).
            out = np.zeros(n, dtype=np.int64)
            np.add.at(out, node, values[rows])
            return out

        exec_total = ex.values["accelerator_exec_micros"] + ex.values["cpu_exec_micros"]
        cols = {name: summed(ex.values[name]) for name in ("run_count", "accelerator_exec_micros",
                                                          "cpu_exec_micros", "requested_bytes", "peak_bytes",
                                                          "residual_bytes", "output_bytes")}
        cols["exec_micros"] = summed(exec_total)
        if step < 0:
            count = np.bincount(ex.node, minlength=n).astype(np.int64)
            safe = np.maximum(count, 1)
            for k, v in cols.items():
                # C++ int64 division truncates toward zero (bytes can be negative).
                cols[k] = np.where(count > 0, np.sign(v) * (np.abs(v) // safe), 0)
        cols["float_ops"] = np.where(self.has_execs(), self.static_float_ops * cols["run_count"],
                                     self.static_float_ops)
        cols["parameters"] = self.parameters.copy()
        return cols
