"""FLOPs and bytes accessed per HLO instruction, as XProf's GPU cost analysis counts them.

XProf 2.24.2 runs XLA's GPU cost analysis (``GpuHloCostAnalysis``, with no device
description) over the entry computation of every HLO module of a profile and shows, for a
device op, ``flops = per-execution FLOPs x occurrences``. This module re-derives those
per-execution counts from the ``HloProto`` bytes alone. The rules (our own statement of what
that analysis does; docs/formulas.md has them as formulas):

* Elementwise ops (add, multiply, compare, select, convert, exp, ...) cost
  ``cycles(opcode, element type) x output elements``. ``cycles`` is XLA's table of measured
  clock cycles per element; without a device XLA falls back to its sm_86 table, and pairs
  missing from it (most cheap f32/bf16/integer ops) cost 3 per element.
* dot and cuBLAS gemm custom-calls: 2 x output elements x product of the lhs contracting
  dimensions (one multiply-add per contracted element). A gemm's dimension numbers are in its
  JSON backend config, its output is the first tuple element.
* reduce: ``(input elements - output elements) x FLOPs of one application of the reducer``.
* all-reduce: the reducer's root op priced as an elementwise op over the output shape.
* concatenate: 6 per output element (compare and branch), 400 when the concatenated
  dimension is not the major one and the first operand's extent there is not a multiple of
  32 (a warp straddles operands).
* fusion: every fused instruction's FLOPs weighted by its *utilization*, the fraction of its
  output that the fusion root needs (see ``_fusion_flops``); not the plain sum.
* convolution (and cuDNN convolution custom-calls): 2 x features x batch x the kernel /
  output position pairs that read a real input element; reduce-window, map, scatter,
  select-and-scatter: the called computation's FLOPs x how often it runs; sort: n log2 n;
  fft, triangular-solve, cholesky: XLA's closed forms.
* call / async-start: the called computation's total; while: body + condition once;
  conditional: the most expensive branch; everything else (copies, data movement,
  parameters, constants, broadcasts, slices, iota, rng, other custom-calls): 0.

XLA stores every cost as a 32-bit float, so sums and products are rounded to float32 at the
same steps; the final count is truncated to an integer as XProf does.

Bytes accessed (``hlo_op_bytes``, rules in ``_BytesWalk`` and docs/formulas.md): by default
every operand read once and the output written once; slicing ops read only what they output;
a fusion writes its outputs and reads each parameter for its utilization (at most once), its
intermediates staying on chip. Each op has a total (XLA's bytes-accessed property, which
XProf's framework op stats divide by time) and an HBM part (the bytes XLA attributes to array
operands and output leaves, which XProf's op profile shows); they differ for gemms returning
a (result, workspace) tuple and for fusions with large constants.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tbprof.domain.hlo_map import HloProgram, hlo_programs
from tbprof.store.tables import ProfileStore

# xla_data.proto PrimitiveType numbers used below.
_TUPLE = 13
_TYPE_IDS = {"S8": 2, "S16": 3, "S32": 4, "S64": 5, "U8": 6, "U16": 7, "U32": 8, "U64": 9, "F16": 10,
             "F32": 11, "F64": 12, "C64": 15, "C128": 18}

# Clock cycles per element of XLA's measured sm_86 profile (xla/service/gpu/model/
# hlo_op_profiles_data.h), the profile XLA uses when the cost analysis has no device.
_SM86_CYCLES: dict[str, dict[str, int]] = {
    "S8": {"divide": 370, "power": 392},
    "S16": {"divide": 367, "power": 396},
    "S32": {"divide": 306},
    "S64": {"divide": 918, "power": 601},
    "U8": {"divide": 306, "power": 388},
    "U16": {"divide": 302, "power": 399},
    "U32": {"divide": 115},
    "U64": {"divide": 838, "power": 604},
    "F16": {"cbrt": 925, "cosine": 691, "exponential": 108, "exponential-minus-one": 396, "log": 266,
            "log-plus-one": 284, "logistic": 226, "rsqrt": 97, "sqrt": 97, "tanh": 212, "atan2": 482, "power": 975},
    "F32": {"cbrt": 867, "cosine": 662, "exponential": 86, "exponential-minus-one": 381, "log": 244,
            "log-plus-one": 262, "logistic": 176, "rsqrt": 75, "sine": 662, "sqrt": 75, "tanh": 190, "atan2": 486,
            "power": 925},
    "F64": {"cbrt": 6339, "cosine": 1717, "exponential": 1652, "exponential-minus-one": 1900, "log": 608,
            "log-plus-one": 2073, "logistic": 2412, "rsqrt": 698, "sine": 1789, "sqrt": 986, "tanh": 1609, "add": 97,
            "atan2": 3747, "divide": 2016, "multiply": 97, "power": 5511, "subtract": 97},
    "C64": {"exponential": 1360, "exponential-minus-one": 1400, "log": 950, "log-plus-one": 842, "rsqrt": 2383,
            "sqrt": 3193, "atan2": 5353, "divide": 687, "power": 3351},
    "C128": {"cosine": 6613, "exponential": 4028, "exponential-minus-one": 4161, "log": 7599, "log-plus-one": 6962,
             "rsqrt": 11318, "sine": 5878, "sqrt": 15606, "tanh": 9939, "add": 97, "atan2": 39027, "divide": 7941,
             "multiply": 270, "power": 18205, "subtract": 97},
}
_CYCLES_PER_ELEMENT = {(op, _TYPE_IDS[t]): c for t, ops in _SM86_CYCLES.items() for op, c in ops.items()}
# XLA's guess for an elementwise op it has not profiled: "a few clock cycles".
_DEFAULT_CYCLES_PER_ELEMENT = 3
_FMA_FLOPS = 2  # a multiply-add is two FLOPs

# Opcodes XLA prices as elementwise ops (cycles x elements).
_PRICED_ELEMENTWISE = frozenset((
    "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "clz", "compare", "complex", "convert", "cosine",
    "divide", "erf", "exponential", "exponential-minus-one", "floor", "imag", "is-finite", "log", "log-plus-one",
    "logistic", "maximum", "minimum", "multiply", "negate", "not", "or", "popcnt", "power", "real",
    "reduce-precision", "remainder", "round-nearest-afz", "round-nearest-even", "rsqrt", "select",
    "shift-left", "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sqrt", "subtract", "tan",
    "tanh", "xor",
))
# Opcodes whose output element i depends only on element i of their operands: in a fusion they
# pass the utilization of their users straight through (XLA's HloInstruction::IsElementwise).
_ELEMENTWISE = _PRICED_ELEMENTWISE | {"copy", "bitcast-convert", "stochastic-convert"}
_PASS_THROUGH = _ELEMENTWISE | {"tuple", "get-tuple-element"}
_CUBLAS_GEMM_TARGETS = frozenset(("__cublas$gemm", "__cublas$lt$matmul", "__cublas$lt$matmul$f8"))
_CUDNN_CONV_TARGETS = frozenset(("__cudnn$convForward", "__cudnn$convBackwardInput", "__cudnn$convBackwardFilter",
                                 "__cudnn$convBiasActivationForward", "__cudnn$convForwardGraph"))
_WARP_SIZE = 32
_CONCAT_FLOPS_PER_ELEMENT = 6
_CONCAT_DIVERGENT_FLOPS_PER_ELEMENT = 400


def _f32(x: float) -> float:
    """Rounds to float32, as XLA stores every cost property."""
    return float(np.float32(x))


def _elements(shape: Any) -> int:
    """Elements of an array shape (tuple shapes: their elements summed, recursively)."""
    if shape.element_type == _TUPLE:
        return sum(_elements(s) for s in shape.tuple_shapes)
    return math.prod(shape.dimensions)


def _array_shape(shape: Any) -> Any:
    """The shape itself, or the first element of a tuple shape (e.g. a gemm's result)."""
    return shape.tuple_shapes[0] if shape.element_type == _TUPLE and shape.tuple_shapes else shape


def elementwise_flops(opcode: str, shape: Any) -> int:
    """FLOPs of an elementwise op over ``shape``: cycles per element x elements."""
    cycles = _CYCLES_PER_ELEMENT.get((opcode, shape.element_type), _DEFAULT_CYCLES_PER_ELEMENT)
    return cycles * _elements(shape)


def dot_flops(lhs_shape: Any, out_shape: Any, lhs_contracting: Iterable[int]) -> int:
    """One multiply-add per output element and contracted lhs element."""
    contracted_elements = math.prod(int(lhs_shape.dimensions[d]) for d in lhs_contracting)
    return _FMA_FLOPS * _elements(out_shape) * contracted_elements


@dataclass
class _Computation:
    instructions: list[Any]  # HloInstructionProto, in proto order
    by_id: dict[int, Any]
    root_id: int
    # _fusion_utilization of this computation, computed once for both FLOPs and bytes.
    utilization: tuple[list[Any], dict[int, np.float32]] | None = field(default=None, repr=False)


class _Module:
    """The computations of one HloModuleProto, indexed for the cost walk."""

    def __init__(self, module: Any) -> None:
        self.computations: dict[int, _Computation] = {}
        for comp in module.computations:
            by_id = {ins.id: ins for ins in comp.instructions}
            root = comp.root_id if comp.root_id in by_id else (comp.instructions[-1].id if comp.instructions else -1)
            self.computations[comp.id] = _Computation(list(comp.instructions), by_id, root)
        self._totals: dict[int, float] = {}
        self.flops: dict[int, dict[int, float]] = {}  # computation id -> instruction id -> FLOPs (float32)
        # Per-op results of the whole program, computed once per program: a program shared by
        # the hosts of a pod (hlo_map) serves them to every host's store. Never mutated.
        self.op_flops: dict[str, int] | None = None
        self.op_bytes: dict[str, OpBytes] | None = None

    def computation_flops(self, comp_id: int) -> float:
        """Total FLOPs of one run of a computation (float32 sum in instruction order)."""
        if comp_id not in self._totals:
            self._totals[comp_id] = 0.0  # guards against (invalid) recursive calls
            comp = self.computations.get(comp_id)
            total = 0.0
            if comp is not None:
                per = self.flops.setdefault(comp_id, {})
                for ins in comp.instructions:
                    per[ins.id] = self.instruction_flops(comp, ins)
                    total = _f32(total + per[ins.id])
            self._totals[comp_id] = total
        return self._totals[comp_id]

    def operand(self, comp: _Computation, ins: Any, i: int) -> Any:
        return comp.by_id[ins.operand_ids[i]]

    def instruction_flops(self, comp: _Computation, ins: Any) -> float:
        """FLOPs of one execution of ``ins`` (float32)."""
        opcode = ins.opcode.decode()
        try:
            return _f32(self._flops_of(comp, ins, opcode))
        except (KeyError, IndexError, ValueError, AttributeError, TypeError):
            return 0.0  # malformed or truncated proto: no estimate rather than a wrong one

    def _flops_of(self, comp: _Computation, ins: Any, opcode: str) -> float:
        if opcode in _PRICED_ELEMENTWISE:
            return elementwise_flops(opcode, ins.shape)
        handler = _HANDLERS.get(opcode)
        return handler(self, comp, ins) if handler is not None else 0.0

    # --- handlers -----------------------------------------------------------------------------

    def _dot(self, comp: _Computation, ins: Any) -> float:
        lhs = self.operand(comp, ins, 0)
        return dot_flops(lhs.shape, ins.shape, ins.dot_dimension_numbers.lhs_contracting_dimensions)

    def _custom_call(self, comp: _Computation, ins: Any) -> float:
        target = ins.custom_call_target.decode()
        if target in _CUDNN_CONV_TARGETS:
            return self._convolution(comp, ins)
        if target not in _CUBLAS_GEMM_TARGETS:
            return 0.0  # XLA marks other custom-calls' cost unknown; XProf shows 0
        config = json.loads(ins.backend_config.decode() or "{}")
        dnums = config.get("gemm_backend_config", {}).get("dot_dimension_numbers", {})
        contracting = [int(d) for d in dnums.get("lhs_contracting_dimensions", [])]
        lhs = self.operand(comp, ins, 0)
        return dot_flops(lhs.shape, _array_shape(ins.shape), contracting)

    def _reduce(self, comp: _Computation, ins: Any) -> float:
        reducer_flops = self.computation_flops(ins.called_computation_ids[0])
        reductions = _elements(self.operand(comp, ins, 0).shape) - _elements(_array_shape(ins.shape))
        return _f32(reducer_flops * reductions)

    def _all_reduce(self, comp: _Computation, ins: Any) -> float:
        reducer = self.computations[ins.called_computation_ids[0]]
        root_opcode = reducer.by_id[reducer.root_id].opcode.decode()
        return elementwise_flops(root_opcode, ins.shape)

    def _concatenate(self, comp: _Computation, ins: Any) -> float:
        dim = int(ins.dimensions[0]) if ins.dimensions else 0
        per_element = _CONCAT_FLOPS_PER_ELEMENT
        if dim > 0 and int(self.operand(comp, ins, 0).shape.dimensions[dim]) % _WARP_SIZE:
            per_element = _CONCAT_DIVERGENT_FLOPS_PER_ELEMENT
        return per_element * _elements(ins.shape)

    def _called_total(self, comp: _Computation, ins: Any) -> float:
        total = 0.0
        for cid in ins.called_computation_ids:
            total = _f32(total + self.computation_flops(cid))
        return total

    def _conditional(self, comp: _Computation, ins: Any) -> float:
        return max((self.computation_flops(cid) for cid in ins.called_computation_ids), default=0.0)

    def _fusion(self, comp: _Computation, ins: Any) -> float:
        fused_id = ins.called_computation_ids[0]
        fused = self.computations[fused_id]
        self.computation_flops(fused_id)
        if ins.fusion_kind.decode() == "kCustom":
            # XLA prices a custom fusion around a gather or scatter as that one op.
            for inner in fused.instructions:
                opcode = inner.opcode.decode()
                if opcode == "gather":
                    return 0.0
                if opcode == "scatter":
                    return self._scatter(fused, inner)
        return _fusion_flops(fused, self.flops[fused_id])

    def _convolution(self, comp: _Computation, ins: Any) -> float:
        lhs, rhs = self.operand(comp, ins, 0).shape, self.operand(comp, ins, 1).shape
        return convolution_flops(ins, lhs, rhs, _array_shape(ins.shape))

    def _reduce_window(self, comp: _Computation, ins: Any) -> float:
        reducer_flops = self.computation_flops(ins.called_computation_ids[0])
        return _f32(reducer_flops * reduce_window_count(ins.window, _array_shape(ins.shape)))

    def _map(self, comp: _Computation, ins: Any) -> float:
        return _f32(self.computation_flops(ins.called_computation_ids[0]) * _elements(ins.shape))

    def _scatter(self, comp: _Computation, ins: Any) -> float:
        # operands: n inputs, the indices, n updates; the combiner runs once per update element.
        n_inputs = (len(ins.operand_ids) - 1) // 2
        updates = self.operand(comp, ins, n_inputs + 1).shape
        return _f32(self.computation_flops(ins.called_computation_ids[0]) * _elements(updates))

    def _select_and_scatter(self, comp: _Computation, ins: Any) -> float:
        # called computations: select, then scatter. Per source element: window - 1 selects
        # and one scatter.
        select_id, scatter_id = ins.called_computation_ids[0], ins.called_computation_ids[1]
        source = _elements(self.operand(comp, ins, 1).shape)
        window = math.prod(int(d.size) for d in ins.window.dimensions)
        selects = _f32(self.computation_flops(select_id) * (source * (window - 1)))
        return _f32(selects + _f32(self.computation_flops(scatter_id) * source))

    def _sort(self, comp: _Computation, ins: Any) -> float:
        n = _elements(self.operand(comp, ins, 0).shape)  # comparison sort: n log2 n compares
        return n * (n - 1).bit_length() if n > 1 else 0

    def _fft(self, comp: _Computation, ins: Any) -> float:
        # One complex multiply-add (4 FMAs) per element and radix-2 stage.
        stages = math.prod(int(length).bit_length() - 1 for length in ins.fft_length)
        return _FMA_FLOPS * 4 * stages * _elements(_array_shape(self.operand(comp, ins, 0).shape))

    def _triangular_solve(self, comp: _Computation, ins: Any) -> float:
        a, b = self.operand(comp, ins, 0).shape, self.operand(comp, ins, 1).shape
        return _FMA_FLOPS * int(a.dimensions[-1]) * _elements(b)

    def _cholesky(self, comp: _Computation, ins: Any) -> float:
        a = self.operand(comp, ins, 0).shape
        return int(a.dimensions[-1]) * _elements(a) // 3


_HANDLERS = {
    "dot": _Module._dot,
    "custom-call": _Module._custom_call,
    "reduce": _Module._reduce,
    "all-reduce": _Module._all_reduce,
    "all-reduce-start": _Module._all_reduce,
    "concatenate": _Module._concatenate,
    "call": _Module._called_total,
    "async-start": _Module._called_total,
    "while": _Module._called_total,
    "conditional": _Module._conditional,
    "fusion": _Module._fusion,
    "convolution": _Module._convolution,
    "reduce-window": _Module._reduce_window,
    "map": _Module._map,
    "scatter": _Module._scatter,
    "select-and-scatter": _Module._select_and_scatter,
    "sort": _Module._sort,
    "fft": _Module._fft,
    "triangular-solve": _Module._triangular_solve,
    "cholesky": _Module._cholesky,
}


def _spatial_positions(dim: Any, input_size: int, kernel_size: int, output_size: int) -> int:
    """How many (kernel position, output position) pairs of one spatial dimension read a real
    input element (not padding, not a hole of a dilated input)."""
    stride = int(dim.stride) or 1
    window_dilation = int(dim.window_dilation) or 1
    base_dilation = int(dim.base_dilation) or 1
    valid = 0
    for k in range(kernel_size):
        offset = k * window_dilation - int(dim.padding_low)  # input index of output 0
        if base_dilation == 1:
            # Outputs o with 0 <= o * stride + offset <= input_size - 1, counted in closed form.
            first = max(0, -(offset // stride))
            last = min(output_size - 1, (input_size - 1 - offset) // stride)
            valid += max(0, last - first + 1)
            continue
        for o in range(output_size):
            undilated = o * stride + offset
            if undilated % base_dilation == 0 and 0 <= undilated // base_dilation < input_size:
                valid += 1
    return valid


def convolution_flops(ins: Any, lhs: Any, rhs: Any, out: Any) -> int:
    """One multiply-add per (batch, input feature of the group, output feature, valid
    kernel/output spatial position pair)."""
    dn = ins.convolution_dimension_numbers
    feature_groups = int(ins.feature_group_count) or 1
    batch_groups = int(ins.batch_group_count) or 1
    input_features = int(lhs.dimensions[dn.input_feature_dimension])
    output_features = int(out.dimensions[dn.output_feature_dimension])
    batch = int(lhs.dimensions[dn.input_batch_dimension])
    positions = 1
    for i, dim in enumerate(ins.window.dimensions):
        positions *= _spatial_positions(dim, int(lhs.dimensions[dn.input_spatial_dimensions[i]]),
                                        int(rhs.dimensions[dn.kernel_spatial_dimensions[i]]),
                                        int(out.dimensions[dn.output_spatial_dimensions[i]]))
    fmas = (input_features // feature_groups) * output_features * (batch // batch_groups) * positions
    return _FMA_FLOPS * fmas


def reduce_window_count(window: Any, out: Any) -> int:
    """Reducer applications of a reduce-window: window size - 1 per output element, except
    for a window that reduces one padded dimension to its full extent (a reduce followed by a
    broadcast), which XLA counts as one reduction of that dimension plus the rest."""
    dims = list(window.dimensions)
    window_elements = math.prod(int(d.size) for d in dims)
    outputs = _elements(out)
    reduced = [i for i, d in enumerate(dims) if int(d.size) != 1]
    padded = [d for d in dims if int(d.padding_low) or int(d.padding_high)]
    if len(reduced) == 1 and len(padded) == 1 and out.element_type != _TUPLE:
        for i, d in enumerate(dims):
            low, high, size = int(d.padding_low), int(d.padding_high), int(d.size)
            if size != 1 and low and high and low == high and size == 2 * low + 1:
                extent = int(out.dimensions[i])
                if low == extent - 1:
                    return outputs // extent + (extent - 1)
                break
    return (window_elements - 1) * outputs


def _users_first(comp: _Computation) -> list[Any]:
    """The computation's instructions ordered so that every user precedes its operands
    (reverse of a depth-first post order from the instructions nobody uses)."""
    used = {op for ins in comp.instructions for op in ins.operand_ids}
    order: list[Any] = []
    seen: set[int] = set()
    for start in comp.instructions:
        if start.id in used or start.id in seen:
            continue
        stack: list[tuple[Any, int]] = [(start, 0)]
        seen.add(start.id)
        while stack:
            ins, i = stack.pop()
            if i < len(ins.operand_ids):
                stack.append((ins, i + 1))
                child = comp.by_id.get(ins.operand_ids[i])
                if child is not None and child.id not in seen:
                    seen.add(child.id)
                    stack.append((child, 0))
            else:
                order.append(ins)
    order.extend(ins for ins in comp.instructions if ins.id not in seen)
    order.reverse()
    return order


def _operand_utilization(comp: _Computation, ins: Any, index: int, unread_operand0: frozenset[int]) -> float:
    """The fraction of operand ``index``'s elements one full execution of ``ins`` reads. Only
    slicing ops read less than all of it; XLA counts everything else (broadcasts too) as 1,
    except a reduce's init values, read once per output element."""
    opcode = ins.opcode.decode()
    if index == 0 and opcode in ("slice", "dynamic-slice", "gather"):
        n = _elements(comp.by_id[ins.operand_ids[0]].shape)
        return _elements(ins.shape) / n if n else 0.0
    if index == 0 and opcode == "dynamic-update-slice":
        if ins.id in unread_operand0:
            return 0.0  # a fusion output updated in place: operand 0 is the output buffer itself
        # The part of operand 0 that the update overwrites is never read.
        n = _elements(ins.shape)
        return (n - _elements(comp.by_id[ins.operand_ids[1]].shape)) / n if n else 0.0
    if opcode == "reduce" and index >= len(ins.operand_ids) // 2:
        return float(_elements(_array_shape(ins.shape)))
    return 1.0


def _same_array_layout(a: Any, b: Any) -> bool:
    """Same dimensions and dimension order, element types aside (XLA's
    ShapeUtil::EqualIgnoringElementType)."""
    return (a.element_type != _TUPLE and b.element_type != _TUPLE and list(a.dimensions) == list(b.dimensions)
            and list(a.layout.minor_to_major) == list(b.layout.minor_to_major))


def _passes_utilization_through(comp: _Computation, ins: Any, opcode: str) -> bool:
    """Whether ``ins`` reads element i of its operands only for its own element i, so its
    operands inherit its roots instead of starting new ones. A bitcast does when it only
    changes the element type, not when it reshapes."""
    if opcode in _PASS_THROUGH:
        return True
    if opcode == "bitcast" and ins.operand_ids:
        operand = comp.by_id.get(ins.operand_ids[0])
        return operand is not None and _same_array_layout(operand.shape, ins.shape)
    return False


def _in_place_updates(comp: _Computation) -> frozenset[int]:
    """dynamic-update-slice instructions that produce a fusion output (the root, or an element
    of a root tuple): XLA updates the output buffer in place, so their operand 0 is not read."""
    root = comp.by_id.get(comp.root_id)
    if root is None:
        return frozenset()
    outputs = [comp.by_id[i] for i in root.operand_ids if i in comp.by_id] if root.opcode == b"tuple" else [root]
    return frozenset(o.id for o in outputs if o.opcode == b"dynamic-update-slice")


def _fusion_utilization(comp: _Computation) -> tuple[list[Any], dict[int, np.float32]]:
    """Each fused instruction's utilization, with the instructions users first.

    The root is fully used (1). An elementwise op (or tuple / get-tuple-element / a bitcast
    that keeps the shape) passes on the set of "roots" that use it; any other op starts a new
    root at each operand, worth its own utilization times the fraction of the operand it reads,
    rounded up to whole elements. An instruction's utilization is the sum over its roots, so a
    value a broadcast and a reduce both read counts twice (the fused emitter computes it
    twice), and a value only ever read elementwise counts once however many elementwise users
    it has. Sums and products are float32, as in XLA.
    """
    if comp.utilization is None:
        comp.utilization = _compute_fusion_utilization(comp)
    return comp.utilization


def _compute_fusion_utilization(comp: _Computation) -> tuple[list[Any], dict[int, np.float32]]:
    f32 = np.float32
    unread = _in_place_updates(comp)
    root_util: dict[int, np.float32] = {ins.id: f32(0) for ins in comp.instructions}
    roots: dict[int, set[int]] = {ins.id: set() for ins in comp.instructions}
    root_util[comp.root_id] = f32(1)
    roots[comp.root_id].add(comp.root_id)
    order = _users_first(comp)
    util_of: dict[int, np.float32] = {}
    for ins in order:
        util = f32(0)
        for r in roots[ins.id]:
            util = f32(util + root_util[r])
        util_of[ins.id] = util
        opcode = ins.opcode.decode()
        through = _passes_utilization_through(comp, ins, opcode)
        for index, op_id in enumerate(ins.operand_ids):
            operand = comp.by_id.get(op_id)
            if operand is None:
                continue
            if through:
                roots[op_id] |= roots[ins.id]
                continue
            roots[op_id].add(op_id)
            op_util = f32(util * f32(_operand_utilization(comp, ins, index, unread)))
            n = _elements(operand.shape)
            op_util = f32(0) if n == 0 else f32(f32(math.ceil(f32(op_util * f32(n)))) / f32(n))
            root_util[op_id] = f32(root_util[op_id] + op_util)
    return order, util_of


def _fusion_flops(comp: _Computation, flops: dict[int, float]) -> float:
    """FLOPs of one fusion execution: each fused instruction's FLOPs times its utilization
    (``_fusion_utilization``), not the plain sum."""
    order, util_of = _fusion_utilization(comp)
    total = np.float32(0)
    for ins in order:
        total = np.float32(total + util_of[ins.id] * np.float32(flops.get(ins.id, 0.0)))
    return float(total)


# Bytes per element of xla_data.proto's PrimitiveType numbers. Sub-byte types (S4, U4, S2, U2,
# S1, U1, F4E2M1FN) take one byte each unless a layout packs them, which we do not read.
_ELEMENT_BYTES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 2, 8: 4, 9: 8, 10: 2, 11: 4, 12: 8, 15: 8, 16: 2,
                  18: 16, 19: 1, 20: 1, 21: 1, 22: 1, 23: 1, 24: 1, 25: 1, 26: 1, 27: 1, 28: 1, 29: 1, 30: 1,
                  31: 1, 32: 1, 33: 1}


def shape_bytes(shape: Any) -> int:
    """Bytes of one array shape as XLA's cost analysis sizes it: 0 for a shape without a layout
    (every tuple shape of these protos has none), a token or an opaque value."""
    if shape.element_type == _TUPLE or not shape.HasField("layout"):
        return 0
    return _ELEMENT_BYTES.get(shape.element_type, 0) * math.prod(shape.dimensions)


def _leaves(shape: Any, index: tuple[int, ...] = ()) -> Iterable[tuple[tuple[int, ...], Any]]:
    """(tuple index, array shape) of every array leaf of a shape."""
    if shape.element_type == _TUPLE:
        for i, sub in enumerate(shape.tuple_shapes):
            yield from _leaves(sub, (*index, i))
    else:
        yield index, shape


def leaf_bytes(shape: Any) -> int:
    """Bytes of every array of a (possibly tuple) shape."""
    return sum(shape_bytes(leaf) for _, leaf in _leaves(shape))


def _llround(x: float) -> int:
    """C's llround: to nearest, halves away from zero."""
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


@dataclass(frozen=True)
class OpBytes:
    """Bytes accessed by one execution of an HLO op, as XLA's cost analysis records them.

    ``total`` is XLA's bytes-accessed property (XProf's op ``bytes_accessed``: framework op
    stats, roofline). ``hbm`` is what XProf's memory breakdown puts in HBM: the bytes XLA
    attributes to each array operand and each array leaf of the output, in memory space 0
    (what the op profile shows). They differ where XLA counts bytes it attributes to no
    operand or output leaf: a cuBLAS gemm's result inside its (result, workspace) tuple, a
    fusion's large constants.
    """

    total: float
    hbm: float


class _BytesWalk:
    """Bytes accessed of one execution of each instruction of a module, as XLA's GPU cost
    analysis counts them (float32, like every XLA cost property). None: XLA does not know
    (e.g. an unrecognised custom-call, where it records -1) or we do not reproduce it."""

    def __init__(self, module: _Module) -> None:
        self.m = module
        self._util: dict[int, dict[int, np.float32]] = {}

    def instruction_bytes(self, comp: _Computation, ins: Any) -> OpBytes | None:
        try:
            b = self._bytes_of(comp, ins, ins.opcode.decode())
        except (KeyError, IndexError, ValueError, AttributeError, TypeError):
            return None  # malformed or truncated proto: no estimate rather than a wrong one
        return None if b is None else OpBytes(_f32(b.total), _f32(b.hbm))

    def _operand_shape(self, comp: _Computation, ins: Any, i: int) -> Any:
        return comp.by_id[ins.operand_ids[i]].shape

    def _operands(self, comp: _Computation, ins: Any) -> float:
        """Each operand read once in full (a tuple operand has no layout: 0)."""
        total = 0.0
        for i in range(len(ins.operand_ids)):
            total = _f32(total + shape_bytes(self._operand_shape(comp, ins, i)))
        return total

    def _default(self, comp: _Computation, ins: Any) -> OpBytes:
        # By default an op reads each operand once and writes its output once. A tuple output
        # has no layout and counts 0, in the total and in the breakdown.
        total = _f32(shape_bytes(ins.shape) + self._operands(comp, ins))
        return OpBytes(total, total)

    def _same(self, total: float) -> OpBytes:
        return OpBytes(total, total)

    def _bytes_of(self, comp: _Computation, ins: Any, opcode: str) -> OpBytes | None:
        shape = ins.shape
        if opcode in _NO_MEMORY_OPS:
            return self._same(0.0)
        if opcode in ("slice", "gather"):
            # Reads only the elements it outputs (plus a gather's indices).
            indices = shape_bytes(self._operand_shape(comp, ins, 1)) if opcode == "gather" else 0
            return self._same(2 * shape_bytes(shape) + indices)
        if opcode == "dynamic-slice":
            return self._same(2 * shape_bytes(shape) + shape_bytes(self._operand_shape(comp, ins, 1)))
        if opcode == "dynamic-update-slice":
            # Operand 0 is the output buffer, updated in place: the update is read and written.
            return self._same(2 * shape_bytes(self._operand_shape(comp, ins, 1))
                              + shape_bytes(self._operand_shape(comp, ins, 2)))
        if opcode == "scatter":
            return self._same(self._scatter(comp, ins))
        if opcode == "reduce":
            return self._reduce(comp, ins)
        if opcode == "all-reduce":
            # Output arrays plus operands. The breakdown has the output only when it is one
            # array (XLA records the output bytes for the whole shape, not per tuple leaf).
            out = leaf_bytes(shape)
            total = _f32(out + self._operands(comp, ins))
            return OpBytes(total, total if shape.element_type != _TUPLE else _f32(total - out))
        if opcode in _UNKNOWN_BYTES_OPS:
            return None  # XLA's GPU rules need the replica groups or nested walks; not reproduced
        if opcode == "fusion":
            return self._fusion(comp, ins)
        if opcode == "custom-call":
            return self._custom_call(comp, ins)
        return self._default(comp, ins)

    def _custom_call(self, comp: _Computation, ins: Any) -> OpBytes | None:
        target = ins.custom_call_target.decode()
        if target in _CUBLAS_GEMM_TARGETS or target in _CUDNN_CONV_TARGETS:
            # Operands plus the real result. A gemm or convolution returns (result, scratch):
            # XLA counts the result, not the scratch, in the total, but records it for the
            # whole tuple, which no output leaf carries, so the breakdown has operands only.
            base = self._default(comp, ins)
            if ins.shape.element_type != _TUPLE:
                return base
            result = shape_bytes(ins.shape.tuple_shapes[0]) if ins.shape.tuple_shapes else 0
            return OpBytes(_f32(base.total + result), base.hbm)
        return None  # XLA records -1: unknown

    def _reduce(self, comp: _Computation, ins: Any) -> OpBytes:
        # Inputs once, outputs once, and each init value once per output element. As for
        # all-reduce, a tuple output is missing from the breakdown.
        n = len(ins.operand_ids) // 2
        outputs = _elements(_array_shape(ins.shape))
        out = leaf_bytes(ins.shape)
        total = _f32(out)
        for i in range(n):
            total = _f32(total + shape_bytes(self._operand_shape(comp, ins, i)))
        for i in range(n, len(ins.operand_ids)):
            total = _f32(total + outputs * shape_bytes(self._operand_shape(comp, ins, i)))
        return OpBytes(total, total if ins.shape.element_type != _TUPLE else _f32(total - out))

    def _scatter(self, comp: _Computation, ins: Any) -> float:
        # Each update element is read, and its operand element read and written; plus indices.
        n = (len(ins.operand_ids) - 1) // 2
        updates = sum(shape_bytes(self._operand_shape(comp, ins, n + 1 + i)) for i in range(n))
        return 3 * updates + shape_bytes(self._operand_shape(comp, ins, n))

    def utilization(self, comp_id: int) -> dict[int, np.float32]:
        if comp_id not in self._util:
            self._util[comp_id] = _fusion_utilization(self.m.computations[comp_id])[1]
        return self._util[comp_id]

    def _fusion(self, comp: _Computation, ins: Any) -> OpBytes | None:
        """Outputs written once; each parameter read for the fraction of it the fusion uses
        (its utilization, at most 1: several users share one read); large constants likewise,
        but those are in the total only. Intermediate values stay on chip and cost nothing."""
        fused_id = ins.called_computation_ids[0]
        fused = self.m.computations[fused_id]
        if ins.fusion_kind == b"kCustom":
            # A custom fusion around a gather or scatter costs what that one op costs.
            for inner in fused.instructions:
                if inner.opcode in (b"gather", b"scatter"):
                    return self._bytes_of(fused, inner, inner.opcode.decode())
        util = self.utilization(fused_id)
        root = fused.by_id[fused.root_id]
        total = 0.0
        for index, leaf in _leaves(ins.shape):
            producer = root
            if len(index) == 1 and root.opcode == b"tuple":
                producer = fused.by_id[root.operand_ids[index[0]]]
            if producer.opcode == b"dynamic-update-slice":
                # Updated in place: only the update is written.
                total = _f32(total + shape_bytes(fused.by_id[producer.operand_ids[1]].shape))
            else:
                total = _f32(total + shape_bytes(leaf))
        constants = 0.0
        for inner in fused.instructions:
            if inner.opcode == b"constant" and _elements(inner.shape) > 1:
                read = _f32(shape_bytes(inner.shape) * min(float(util[inner.id]), 1.0))
                constants = _f32(constants + read)
                total = _f32(total + read)
        params = sorted((i for i in fused.instructions if i.opcode == b"parameter"), key=lambda i: i.parameter_number)
        for param in params:
            total = _f32(total + self._parameter_read(fused, param, util))
        return OpBytes(total, _f32(total - constants))

    def _parameter_read(self, fused: _Computation, param: Any, util: dict[int, np.float32]) -> int:
        def read(value: Any) -> int:
            u = min(float(util[value.id]), 1.0)
            return _llround(_f32(shape_bytes(value.shape) * u))
        if param.shape.element_type != _TUPLE:
            return read(param)
        users: dict[int, list[Any]] = {}
        for other in fused.instructions:
            for op in other.operand_ids:
                users.setdefault(op, []).append(other)
        total = 0
        for index, _ in _leaves(param.shape):
            # Follow the get-tuple-element chain to the leaf; the deepest one found is read.
            value = param
            for sub in index:
                for user in users.get(value.id, []):
                    if user.opcode == b"get-tuple-element" and user.tuple_index == sub:
                        value = user
                        break
            total += read(value)
        return total


# No code, no memory traffic: pointers and compile-time ordering only.
_NO_MEMORY_OPS = frozenset(("parameter", "constant", "get-tuple-element", "bitcast", "tuple", "after-all",
                            "add-dependency", "domain"))
# XLA's GPU rules for these need the replica groups (collectives) or sum nested properties in
# ways we have not checked against XProf (calls, loops, async wrappers): no estimate.
_UNKNOWN_BYTES_OPS = frozenset(("all-gather", "all-gather-start", "reduce-scatter", "all-reduce-start",
                                "call", "while", "conditional", "async-start"))


def program_module(program: HloProgram) -> _Module:
    """The indexed module of a program, shared by the FLOP and byte walks (they reuse its
    fusion utilizations). Kept on the HloProgram object, which is memoised per store."""
    if program.cost_module is None:
        program.cost_module = _Module(program.module)
    return program.cost_module


def _program_bytes(program: HloProgram) -> dict[str, OpBytes]:
    """HLO instruction name -> bytes accessed of one execution (instructions whose bytes XLA
    does not know are left out; the first instruction of a name wins)."""
    module = program.module
    if module is None:
        return {}
    walk = _BytesWalk(program_module(program))
    out: dict[str, OpBytes] = {}
    seen: set[str] = set()
    # Instructions inside fusion bodies never run as device ops of their own (a fusion's bytes
    # come from its operands and outputs): skipping them saves most of the walk.
    fusion_bodies = {cid for comp in module.computations for ins in comp.instructions
                     if ins.opcode == b"fusion" for cid in ins.called_computation_ids}
    for comp in module.computations:
        if comp.id in fusion_bodies:
            continue
        c = walk.m.computations[comp.id]
        for ins in comp.instructions:
            name = ins.name.decode("utf-8", errors="replace")
            if name in seen:
                continue
            seen.add(name)
            b = walk.instruction_bytes(c, ins)
            if b is not None and b.total >= 0 and b.hbm >= 0:
                out[name] = OpBytes(float(int(b.total)), float(int(b.hbm)))
    return out


def hlo_op_bytes(store: ProfileStore, program_id: int) -> dict[str, OpBytes]:
    """Bytes accessed by one execution of every HLO op of a program (memoised per store)."""
    def build() -> dict[str, OpBytes]:
        program = hlo_programs(store).get(program_id)
        if program is None or program.module is None:
            return {}
        walk = program_module(program)
        if walk.op_bytes is None:
            walk.op_bytes = _program_bytes(program)
        return walk.op_bytes
    return store.memo(("hlo_bytes", program_id), build)


def _program_flops(program: HloProgram) -> dict[str, int]:
    """HLO instruction name -> FLOPs of one execution, for every instruction of the module
    (computations visited from the entry computation; the first instruction of a name wins)."""
    module = program.module
    if module is None:
        return {}
    walk = program_module(program)
    entry = module.entry_computation_id
    if entry not in walk.computations and module.computations:
        entry = module.computations[-1].id
    walk.computation_flops(entry)
    out: dict[str, int] = {}
    for comp in module.computations:
        per = walk.flops.get(comp.id, {})
        for ins in comp.instructions:
            name = ins.name.decode("utf-8", errors="replace")
            if name not in out:
                out[name] = max(0, int(per.get(ins.id, 0.0)))
    return out


def hlo_op_flops(store: ProfileStore, program_id: int) -> dict[str, int]:
    """FLOPs of one execution of every HLO op of a program (memoised per store)."""
    def build() -> dict[str, int]:
        program = hlo_programs(store).get(program_id)
        if program is None or program.module is None:
            return {}
        walk = program_module(program)
        if walk.op_flops is None:
            walk.op_flops = _program_flops(program)
        return walk.op_flops
    return store.memo(("hlo_flops", program_id), build)
