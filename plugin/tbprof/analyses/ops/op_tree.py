"""torch-tb-profiler 0.4.3's operator tree of a Kineto trace: the nodes its operator and module
views aggregate, with their host, device and TensorCore times.

Its rules (``profiler/trace.py``, ``event_parser.py``, ``op_tree.py``, ``node.py``), per thread:

* **nodes**: operators (``cpu_op``; PyTorch 1.8's ``Operator``), ``ProfilerStep#N``,
  ``nn.Module`` calls (``python_function`` with a ``Python module id``) and, of the
  ``user_annotation`` events, only ``ProfilerStep#N`` and the communication names
  (``nccl:all_reduce``, ``gloo:broadcast``, ...): every other annotation (``record_function``
  ranges, ``CompiledFunction``) is not read at all, so its time stays in its parent's self time.
  Plain Python functions are transparent;
* **nesting** by time on the thread, sorted by (start, -end); a node that starts inside another
  but ends after it is dropped (the plugin logs "ranges on the same thread should not intersect");
* **same-name merge**: an operator whose only child is an operator of the same name is one call
  (the child's children and launches become its own), repeatedly (``aten::layer_norm`` calling
  ``aten::layer_norm`` counts once);
* **launches**: runtime calls join the first node with their ``External id`` and the device work
  (kernels, memcpys, memsets) of their ``correlation``. The plugin reads PyTorch 1.8's ``Runtime``
  category only; a runtime call's duration leaves its operator's self host time. Kineto's
  ``cuda_runtime`` / ``cuda_driver`` categories (PyTorch >= 1.9) it does not read: their
  durations stay in the self host time, as there; their device work is attributed here all the
  same (docs/differences.md: the plugin shows no device time for such traces);
* **operators listed**: plain operator nodes but ``DataParallel.forward``,
  ``DistributedDataParallel.forward``, ``Optimizer.*`` and the data loader's
  ``enumerate(DataLoader)#...__next__`` / ``enumerate(DataPipe)#...`` (tree nodes all the same);
* per node: self host = duration - its children's - its runtime calls'; device total = its
  launches' device time + its children's; device self = its launches'; TensorCore-eligible = its
  name in the plugin's operator allowlist, or (an operator) a child eligible or a launch running a
  TensorCore kernel (the plugin's kernel-name allowlist); TensorCore self / total time = the
  device time of those kernels among its own launches / with its children's. Where no kernel of
  the trace matches the plugin's kernel names (newer GEMM kernels: cuBLASLt's ``nvjet_*``,
  Triton's), its TensorCore time of 0 says nothing: ``tc_judged`` is false.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from tbprof.domain.planes import device_planes
from tbprof.store import kineto_names as kn
from tbprof.store.tables import ProfileStore

# torch-tb-profiler's TensorCore lists (profiler/tensor_core.py): a kernel runs on TensorCores when
# its name contains one of these; an operator is eligible when its name is one of these.
TC_KERNEL_PATTERNS = (
    "h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816", "dgrad_1x1_stride_2x2", "first_layer_wgrad_kernel",
    "conv1x1", "conv2d_c1_k1", "direct_group", "xmma_implicit_gemm", "xmma_sparse_conv",
    "xmma_warp_specialized_implicit_gemm", "xmma_gemm", "xmma_sparse_gemm", "c1688",
)
TC_OPERATORS = frozenset((
    "aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_tbc", "aten::conv_transpose1d",
    "aten::conv_transpose2d", "aten::conv_transpose3d", "aten::convolution", "aten::cudnn_convolution",
    "aten::cudnn_convolution_transpose", "aten::prelu", "aten::addmm", "aten::addmv", "aten::addr", "aten::matmul",
    "aten::mm", "aten::mv", "aten::linear", "aten::addbmm", "aten::baddbmm", "aten::bmm", "aten::chain_matmul",
    "aten::linalg_multi_dot", "aten::_thnn_fused_lstm_cell", "aten::_thnn_fused_gru_cell", "aten::lstm_cell",
    "aten::gru_cell", "aten::rnn_tanh_cell", "aten::rnn_relu_cell", "CudnnConvolutionBackward", "BmmBackward0",
    "aten::cudnn_convolution_transpose_backward", "CudnnConvolutionTransposeBackward", "MmBackward",
    "aten::cudnn_convolution_backward_weight", "aten::addmm_", "AddmvBackward", "MvBackward",
    "aten::cudnn_convolution_transpose_backward_weight", "aten::cudnn_convolution_transpose_backward_input",
    "AddmmBackward", "aten::cudnn_convolution_backward_input", "AddbmmBackward", "aten::cudnn_convolution_backward",
))
COMMUNICATION_ANNOTATIONS = frozenset(f"{lib}:{op}" for lib in ("nccl", "gloo")
                                      for op in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter"))
NOT_LISTED = ("DataParallel.forward", "DistributedDataParallel.forward")

# Node kinds.
OPERATOR, STEP, MODULE, COMMUNICATION = 0, 1, 2, 3


def is_data_loader(name: str) -> bool:
    return (name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__")) \
        or name.startswith("enumerate(DataPipe)#")


@dataclass(frozen=True)
class OpTree:
    """The tree's nodes (host-plane rows, in tree order: a parent before its children)."""

    rows: np.ndarray  # host-plane row of each node
    parent: np.ndarray  # index into rows (-1: a root)
    kind: np.ndarray  # OPERATOR, STEP, MODULE, COMMUNICATION
    listed: np.ndarray  # an operator of the operator view
    dur_ps: np.ndarray
    self_host_ps: np.ndarray
    device_ps: np.ndarray  # its launches' device time and its children's
    self_device_ps: np.ndarray  # its own launches' device time
    tc_eligible: np.ndarray
    tc_self_ps: np.ndarray
    tc_total_ps: np.ndarray
    has_device: bool  # the trace has device work (the device columns mean something)
    tc_judged: bool  # some kernel of the trace matches the TensorCore name list (else its 0 % says nothing)


def op_tree(store: ProfileStore) -> OpTree | None:
    """The tree of the host plane (memoised); None without one."""
    return store.memo(("tb_profiler_op_tree",), lambda: _build(store))


def name_test(store: ProfileStore, name_ids: np.ndarray, test: Callable[[str], bool]) -> np.ndarray:
    """``test`` of each name, indexed by string id: tested once per distinct name among
    ``name_ids`` (a trace's string table also holds every shape and call stack), False elsewhere."""
    out = np.zeros(len(store.strings), bool)
    uniq = np.unique(name_ids)
    uniq = uniq[uniq >= 0]
    if uniq.shape[0]:
        out[uniq] = [test(s) for s in store.strings.lookup(uniq)]
    return out


def _device_work(store: ProfileStore,
                 tc_kernel: Callable[[str], bool]) -> tuple[dict[int, tuple[int, int]], bool, bool]:
    """Per correlation: (device time, TensorCore kernel time) of the kernels, memcpys and memsets;
    whether there is device work; whether a kernel matches the TensorCore name list."""
    cat_sid, corr_sid = store.stat_id("cat"), store.stat_id("correlation")
    ids = [store.strings.id(c) for c in kn.DEVICE_CATEGORIES[:3]]
    kernel_id = store.strings.id(kn.KERNEL)
    corr_parts, dur_parts, tc_parts = [], [], []
    judged = False
    planes = [p for p in device_planes(store) if p.n_events and cat_sid >= 0]
    is_tc_name = name_test(store, np.concatenate([p.name_id for p in planes]) if planes else np.zeros(0, np.int64),
                           tc_kernel)
    for plane in planes:
        cat = plane.dense_str_ids(cat_sid)
        rows = np.nonzero(np.isin(cat, [i for i in ids if i >= 0]))[0]
        if rows.shape[0] == 0:
            continue
        corr = plane.event_stat(corr_sid).dense_int(plane.n_events)[rows] if corr_sid >= 0 \
            else np.full(rows.shape[0], -1)
        dur = plane.dur_ps[rows].astype(np.int64)
        corr_parts.append(corr)
        dur_parts.append(dur)
        is_tc = (cat[rows] == kernel_id) & is_tc_name[plane.name_id[rows]]
        judged |= bool(is_tc.any())
        tc_parts.append(np.where(is_tc, dur, 0))
    if not corr_parts:
        return {}, False, False
    corr, dur, tc = np.concatenate(corr_parts), np.concatenate(dur_parts), np.concatenate(tc_parts)
    keep = corr >= 0
    uniq, inv = np.unique(corr[keep], return_inverse=True)
    inv = inv.reshape(-1)
    dev = np.bincount(inv, weights=dur[keep], minlength=uniq.shape[0]).astype(np.int64)
    tcs = np.bincount(inv, weights=tc[keep], minlength=uniq.shape[0]).astype(np.int64)
    per_corr = {int(c): (int(d), int(t)) for c, d, t in zip(uniq.tolist(), dev.tolist(), tcs.tolist(), strict=True)}
    return per_corr, True, judged


def _build(store: ProfileStore) -> OpTree | None:
    plane = store.plane("/host:CPU")
    cat_sid = store.stat_id("cat")
    if plane is None or plane.n_events == 0 or cat_sid < 0:
        return None
    n = plane.n_events
    cat = plane.dense_str_ids(cat_sid)
    sid = {k: store.strings.id(k) for k in (kn.OPERATOR, kn.USER_ANNOTATION, kn.PYTHON_FUNCTION, *kn.LAUNCH_CATEGORIES)}
    module_sid, corr_sid = store.stat_id("Python module id"), store.stat_id("correlation")
    module_id = plane.event_stat(module_sid).dense_int(n) if module_sid >= 0 else np.full(n, -1)
    external = np.full(n, -1, np.int64)
    for key in ("External id", "external id"):  # the plugin reads "external id" first
        ext_sid = store.stat_id(key)
        if ext_sid >= 0:
            col = plane.event_stat(ext_sid).dense_int(n, missing=-1)
            external = np.where(col >= 0, col, external)
    correlation = plane.event_stat(corr_sid).dense_int(n, missing=-1) if corr_sid >= 0 else np.full(n, -1)
    name_step = name_test(store, plane.name_id, lambda s: s.startswith("ProfilerStep#"))[plane.name_id]
    name_comm = name_test(store, plane.name_id, lambda s: s in COMMUNICATION_ANNOTATIONS)[plane.name_id]
    kind = np.full(n, -1, np.int64)
    is_op_cat = cat == sid[kn.OPERATOR]
    kind[is_op_cat] = OPERATOR
    kind[(cat == sid[kn.USER_ANNOTATION]) & name_comm] = COMMUNICATION
    kind[(is_op_cat | (cat == sid[kn.USER_ANNOTATION])) & name_step] = STEP
    kind[(cat == sid[kn.PYTHON_FUNCTION]) & (module_id >= 0)] = MODULE
    is_launch = np.isin(cat, [sid[c] for c in kn.LAUNCH_CATEGORIES if sid[c] >= 0])
    work, has_device, tc_judged = _device_work(store, lambda s: any(p in s for p in TC_KERNEL_PATTERNS))
    subtract_runtime = kn.runtime_is_pytorch_18(store.metadata)

    start = plane.start_ps.astype(np.int64)
    end = start + plane.dur_ps.astype(np.int64)
    node_rows: list[int] = []
    parent_of: dict[int, int] = {}  # row -> parent row (-1: root)
    children: dict[int, list[int]] = {-1: []}
    for line in range(plane.n_lines):
        sl = plane.line_rows(line)
        rows = sl.start + np.nonzero(kind[sl] >= 0)[0]
        stack: list[int] = []
        for r in rows.tolist():
            while stack and start[r] >= end[stack[-1]]:
                stack.pop()
            if stack and end[r] > end[stack[-1]]:
                continue  # starts inside its parent, ends after it: the plugin drops it
            p = stack[-1] if stack else -1
            parent_of[r] = p
            children.setdefault(p, []).append(r)
            children[r] = []
            node_rows.append(r)
            stack.append(r)
    # Launches join the first node (by thread, then time) with their External id.
    launches: dict[int, list[int]] = {}
    first_with_ext: dict[int, int] = {}
    for r in node_rows:
        e = int(external[r])
        if e > 0 and e not in first_with_ext and kind[r] != MODULE:
            first_with_ext[e] = r
    for r in np.nonzero(is_launch)[0].tolist():
        owner = first_with_ext.get(int(external[r]))
        if owner is not None:
            launches.setdefault(owner, []).append(r)
    # Same-name merge, parents first.
    order: list[int] = []
    todo = list(reversed(children[-1]))
    while todo:
        r = todo.pop()
        while len(children[r]) == 1:
            c = children[r][0]
            if not (kind[r] == OPERATOR and kind[c] == OPERATOR and plane.name_id[r] == plane.name_id[c]):
                break
            children[r] = children[c]
            for g in children[r]:
                parent_of[g] = r
            launches[r] = launches.pop(c, [])
            parent_of.pop(c)
        order.append(r)
        todo.extend(reversed(children[r]))
    index = {r: i for i, r in enumerate(order)}
    m = len(order)
    rows_arr = np.asarray(order, np.int64)
    parent = np.asarray([index.get(parent_of[r], -1) for r in order], np.int64)
    dur = end[rows_arr] - start[rows_arr]
    self_host = dur.copy()
    self_dev = np.zeros(m, np.int64)
    tc_self = np.zeros(m, np.int64)
    for i, r in enumerate(order):
        for lr in launches.get(r, []):
            if subtract_runtime:
                self_host[i] -= int(end[lr] - start[lr])
            d, t = work.get(int(correlation[lr]), (0, 0))
            self_dev[i] += d
            tc_self[i] += t
    kinds = kind[rows_arr]
    node_names = plane.name_id[rows_arr]
    eligible = name_test(store, node_names, lambda s: s in TC_OPERATORS)[node_names]
    eligible |= (kinds == OPERATOR) & (tc_self > 0)
    device = self_dev.copy()
    tc_total = tc_self.copy()
    for i in range(m - 1, -1, -1):  # children after parents: bottom-up by reverse order
        p = int(parent[i])
        if p < 0:
            continue
        self_host[p] -= dur[i]
        device[p] += device[i]
        tc_total[p] += tc_total[i]
        if eligible[i] and kinds[p] == OPERATOR:
            eligible[p] = True
    # Children and runtime calls lie inside their node, so this only bites on a trace whose runtime
    # calls overlap its operators' children: a time is never negative.
    self_host = np.maximum(self_host, 0)
    excluded = name_test(store, node_names,
                         lambda s: s.startswith("Optimizer.") or s in NOT_LISTED or is_data_loader(s))
    listed = (kinds == OPERATOR) & ~excluded[node_names]
    return OpTree(rows_arr, parent, kinds, listed, dur, self_host, device, self_dev, eligible, tc_self, tc_total,
                  has_device, tc_judged)


def listed_rows(tree: OpTree) -> Sequence[int]:
    """Indexes (into the tree) of the operators the operator view lists."""
    return np.nonzero(tree.listed)[0].tolist()
