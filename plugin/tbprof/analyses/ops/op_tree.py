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
from typing import NamedTuple

import numpy as np

from tbprof._core import kernels
from tbprof.domain.planes import device_planes
from tbprof.store import kineto_names as kn
from tbprof.store.derived import Derived
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


OP_TREE: Derived[OpTree | None] = Derived(("tb_profiler_op_tree",), lambda s: _build(s))


def op_tree(store: ProfileStore) -> OpTree | None:
    """The tree of the host plane (memoised); None without one."""
    return store.derive(OP_TREE)


def name_test(store: ProfileStore, name_ids: np.ndarray, test: Callable[[str], bool]) -> np.ndarray:
    """``test`` of each name, indexed by string id: tested once per distinct name among
    ``name_ids`` (a trace's string table also holds every shape and call stack), False elsewhere."""
    out = np.zeros(len(store.strings), bool)
    uniq = np.unique(name_ids)
    uniq = uniq[uniq >= 0]
    if uniq.shape[0]:
        out[uniq] = [test(s) for s in store.strings.lookup(uniq)]
    return out


def _device_work(store: ProfileStore, tc_kernel: Callable[[str], bool]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool, bool]:
    """The correlations of the kernels, memcpys and memsets (sorted), the device time and
    TensorCore kernel time of each; whether there is device work; whether a kernel matches the
    TensorCore name list."""
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
        empty = np.zeros(0, np.int64)
        return empty, empty, empty, False, False
    corr, dur, tc = np.concatenate(corr_parts), np.concatenate(dur_parts), np.concatenate(tc_parts)
    keep = corr >= 0
    uniq, inv = np.unique(corr[keep], return_inverse=True)
    inv = inv.reshape(-1)
    dev = _sum_by(inv, dur[keep], uniq.shape[0])
    tcs = _sum_by(inv, tc[keep], uniq.shape[0])
    return uniq.astype(np.int64), dev, tcs, True, judged


@dataclass(frozen=True)
class TreeArrays:
    """The tree of a plane's node rows (see ``nest``), in tree order: a parent before its children."""

    rows: np.ndarray  # row of each node
    parent: np.ndarray  # index into rows (-1: a root)
    dur_ps: np.ndarray
    self_host_ps: np.ndarray
    device_ps: np.ndarray
    self_device_ps: np.ndarray
    tc_eligible: np.ndarray
    tc_self_ps: np.ndarray
    tc_total_ps: np.ndarray


def _sum_by(index: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Exact int64 sums of ``values`` per ``index`` (0 <= index < n)."""
    out = np.zeros(n, np.int64)
    np.add.at(out, index, values.astype(np.int64, copy=False))
    return out


def nest(start_ps: np.ndarray, end_ps: np.ndarray, kind: np.ndarray, name_id: np.ndarray, external: np.ndarray,
         line_offsets: np.ndarray, launch_external: np.ndarray, launch_host_ps: np.ndarray,
         launch_device_ps: np.ndarray, launch_tc_ps: np.ndarray, tc_by_name: np.ndarray) -> TreeArrays:
    """The plugin's tree of a plane's events (rows of each thread ``line_offsets[i]:line_offsets[i + 1]``,
    each thread's in (start, -end) order): nodes are the rows of ``kind`` >= 0; the launches
    (runtime calls: their External id, the host time they take out of their node's self time, the
    device and TensorCore time of their work) join the first node with their External id.

    The nesting walk is the compiled core's (linear per thread); the rest is vector code. A thread's
    nesting lists its nodes in depth-first order, each subtree contiguous, so the tree order is the
    row order of the nodes that survive the same-name merge."""
    cand = np.nonzero(kind >= 0)[0]
    cand_offsets = np.searchsorted(cand, line_offsets)
    cand_parent = kernels.op_tree_parents(start_ps[cand], end_ps[cand], cand_offsets)
    kept = cand_parent != -2
    nodes = cand[kept]
    node_of_cand = np.cumsum(kept) - 1
    parent = np.where(cand_parent[kept] >= 0, node_of_cand[np.maximum(cand_parent[kept], 0)], -1)
    m0 = nodes.shape[0]
    node_kind, node_name = kind[nodes], name_id[nodes]
    has_parent = parent >= 0
    n_children = np.bincount(parent[has_parent], minlength=m0)
    # Same-name merge: an operator that is the only child of an operator of its name is one call with it.
    # Whether a node merges into its parent depends only on the two (a chain merges link by link).
    p_safe = np.maximum(parent, 0)
    merged = has_parent & (n_children[p_safe] == 1) & (node_kind == OPERATOR) & (node_kind[p_safe] == OPERATOR) \
        & (node_name == node_name[p_safe])
    rep = np.arange(m0)  # the node each one merged into (itself when it survives)
    rep[merged] = parent[merged]
    while True:
        nxt = rep[rep]
        if np.array_equal(nxt, rep):
            break
        rep = nxt
    # A merge hands the child's launches to its parent in place of the parent's own: a chain keeps
    # only its last node's launches.
    has_merged_child = np.zeros(m0, bool)
    has_merged_child[parent[merged]] = True
    survives = ~merged
    index_of = np.cumsum(survives) - 1  # node -> index in the tree (for survivors)
    rows = nodes[survives]
    m = rows.shape[0]
    tree_parent = np.where(has_parent, index_of[rep[p_safe]], -1)[survives]
    dur = (end_ps[rows] - start_ps[rows]).astype(np.int64)
    self_host = dur.copy()
    self_dev = np.zeros(m, np.int64)
    tc_self = np.zeros(m, np.int64)
    # Launches join the first node (by thread, then time) with their External id.
    ext = external[nodes]
    owners = np.nonzero((ext > 0) & (node_kind != MODULE))[0]
    if owners.shape[0] and launch_external.shape[0]:
        ext_ids, first = np.unique(ext[owners], return_index=True)
        owner_node = owners[first]
        pos = np.minimum(np.searchsorted(ext_ids, launch_external), ext_ids.shape[0] - 1)
        joined = ext_ids[pos] == launch_external
        node = owner_node[pos[joined]]
        counted = ~has_merged_child[node]
        owner = index_of[rep[node[counted]]]
        sel = np.nonzero(joined)[0][counted]
        self_host -= _sum_by(owner, launch_host_ps[sel], m)
        self_dev = _sum_by(owner, launch_device_ps[sel], m)
        tc_self = _sum_by(owner, launch_tc_ps[sel], m)
    child = tree_parent >= 0
    self_host -= _sum_by(tree_parent[child], dur[child], m)
    kinds = kind[rows]
    eligible = tc_by_name[rows] | ((kinds == OPERATOR) & (tc_self > 0))
    kernels.or_into_parents(tree_parent, eligible, kinds == OPERATOR)
    device = self_dev.copy()
    kernels.sum_into_parents(tree_parent, device)
    tc_total = tc_self.copy()
    kernels.sum_into_parents(tree_parent, tc_total)
    # Children and runtime calls lie inside their node, so this only bites on a trace whose runtime
    # calls overlap its operators' children: a time is never negative.
    self_host = np.maximum(self_host, 0)
    return TreeArrays(rows, tree_parent, dur, self_host, device, self_dev, eligible, tc_self, tc_total)


class NestInputs(NamedTuple):
    """``nest``'s arguments for a trace's host plane."""

    start_ps: np.ndarray
    end_ps: np.ndarray
    kind: np.ndarray
    name_id: np.ndarray
    external: np.ndarray
    line_offsets: np.ndarray
    launch_external: np.ndarray
    launch_host_ps: np.ndarray
    launch_device_ps: np.ndarray
    launch_tc_ps: np.ndarray
    tc_by_name: np.ndarray


def nest_inputs(store: ProfileStore) -> tuple[NestInputs, bool, bool] | None:
    """The host plane's node kinds, launches and their device work (``nest``'s arguments); whether
    the trace has device work; whether a kernel matches the TensorCore name list. None without a
    host plane."""
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
    launch = np.nonzero(np.isin(cat, [sid[c] for c in kn.LAUNCH_CATEGORIES if sid[c] >= 0]))[0]
    corr_ids, corr_dev, corr_tc, has_device, tc_judged = _device_work(
        store, lambda s: any(p in s for p in TC_KERNEL_PATTERNS))
    launch_corr = correlation[launch]
    launch_dev = np.zeros(launch.shape[0], np.int64)
    launch_tc = np.zeros(launch.shape[0], np.int64)
    if corr_ids.shape[0]:
        pos = np.minimum(np.searchsorted(corr_ids, launch_corr), corr_ids.shape[0] - 1)
        hit = corr_ids[pos] == launch_corr
        launch_dev[hit] = corr_dev[pos[hit]]
        launch_tc[hit] = corr_tc[pos[hit]]
    start = plane.start_ps.astype(np.int64)
    end = start + plane.dur_ps.astype(np.int64)
    launch_host = end[launch] - start[launch] if kn.runtime_is_pytorch_18(store.metadata) \
        else np.zeros(launch.shape[0], np.int64)
    node_names = plane.name_id[kind >= 0]
    tc_by_name = name_test(store, node_names, lambda s: s in TC_OPERATORS)[plane.name_id]
    inputs = NestInputs(start, end, kind, plane.name_id, external, plane.line_offsets, external[launch], launch_host,
                        launch_dev, launch_tc, tc_by_name)
    return inputs, has_device, tc_judged


def _build(store: ProfileStore) -> OpTree | None:
    found = nest_inputs(store)
    if found is None:
        return None
    inputs, has_device, tc_judged = found
    tree = nest(*inputs)
    kinds = inputs.kind[tree.rows]
    names = inputs.name_id[tree.rows]
    excluded = name_test(store, names, lambda s: s.startswith("Optimizer.") or s in NOT_LISTED or is_data_loader(s))
    listed = (kinds == OPERATOR) & ~excluded[names]
    return OpTree(tree.rows, tree.parent, kinds, listed, tree.dur_ps, tree.self_host_ps, tree.device_ps,
                  tree.self_device_ps, tree.tc_eligible, tree.tc_self_ps, tree.tc_total_ps, has_device, tc_judged)


def listed_rows(tree: OpTree) -> Sequence[int]:
    """Indexes (into the tree) of the operators the operator view lists."""
    return np.nonzero(tree.listed)[0].tolist()
