"""Device compute precision: the share of device compute time in 16-bit floating point, from
what the profile actually says about element types.

XProf's rule (steps/breakdown.classify_gpu_event) calls a kernel 16-bit when its TensorFlow
``tensor_shapes`` say "half", or, without them, when its name says "fp16". A JAX or PyTorch
profile has no ``tensor_shapes``, and bf16 kernels are named "bf16", so XProf reports 0 % 16-bit
(and suggests bf16) on runs that are visibly bf16. Here, in order:

1. ``hlo_element_types``: the profile carries the HLO modules: each device op's output element
   type (bf16/f16 vs f32/f64; other types, integers and predicates, tell nothing about float
   precision and are left out), weighted by the op's self time. Collectives and data movement
   are not compute and are left out.
2. ``tensor_shapes``: the device events carry TensorFlow's ``tensor_shapes``: XProf's rule,
   which then reads real types.
3. ``operator_input_types``: a PyTorch trace, whose step breakdown types each kernel by its
   launching operator's input types, else its name (domain/kineto_links.py), when that tells
   for most of its device compute time.
4. ``unknown``: nothing tells; the page says "unknown" rather than "0 % 16-bit".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tbprof.analyses.ops.headline import COLLECTIVE_CATEGORIES
from tbprof.analyses.ops.kineto_ops import is_kineto
from tbprof.analyses.ops.op_metrics import hosts_op_metrics
from tbprof.analyses.partial_formats import HOST_PRECISION_KEY
from tbprof.analyses.results.whole_run import PrecisionSource
from tbprof.domain.hlo_map import hlo_programs
from tbprof.store.tables import ProfileStore
from tbprof.store.view import CarriedValue, StoreView

# xla_data.proto PrimitiveType numbers.
_F16, _BF16, _F32, _F64, _TUPLE = 10, 16, 11, 12, 13
_NOT_COMPUTE = COLLECTIVE_CATEGORIES | {"data formatting", "copy", "copy-start", "copy-done", "parameter",
                                         "constant", "tuple", "get-tuple-element", "bitcast"}


@dataclass(frozen=True)
class Precision:
    source: PrecisionSource
    percent_16bit: float | None  # of device compute time whose precision is known
    percent_32bit: float | None


def _float_type(shape: object) -> int | None:
    """The first floating element type of a shape (a tuple's first floating element)."""
    et = int(getattr(shape, "element_type", 0))
    if et == _TUPLE:
        for s in getattr(shape, "tuple_shapes", ()):
            t = _float_type(s)
            if t is not None:
                return t
        return None
    return et if et in (_F16, _BF16, _F32, _F64) else None


@dataclass(frozen=True)
class HostPrecision:
    has_tensor_shapes: bool
    hlo_16bit_ps: float  # device compute self time in bf16/f16 HLO ops
    hlo_32bit_ps: float  # ... in f32/f64 HLO ops (both 0: no HLO, or no float compute op)


def _host_precision(store: ProfileStore) -> HostPrecision:
    programs = hlo_programs(store)
    low_ps = high_ps = 0.0
    if programs:
        db = hosts_op_metrics([store], "device")
        for i in range(db.n_ops):
            module = programs.get(int(db.program_id[i]))
            if module is None or str(db.type[i]) in _NOT_COMPUTE:
                continue
            ins = module.instruction(str(db.name[i]))
            t = _float_type(ins.shape) if ins is not None else None
            if t in (_F16, _BF16):
                low_ps += float(db.self_time_ps[i])
            elif t in (_F32, _F64):
                high_ps += float(db.self_time_ps[i])
    return HostPrecision(store.stat_id("tensor_shapes") >= 0, low_ps, high_ps)


HOST_PRECISION: CarriedValue[HostPrecision] = CarriedValue(HOST_PRECISION_KEY, _host_precision)


def host_precision(store: StoreView) -> HostPrecision:
    """One host's precision facts (memoised)."""
    return store.derive(HOST_PRECISION)


def device_precision(stores: Sequence[StoreView], xprof_16bit_ps: float, xprof_32bit_ps: float,
                     unknown_ps: float = 0.0) -> Precision:
    """The precision with its source; ``xprof_*`` are the step breakdown's compute times (XProf's
    rule; for PyTorch, by operator input types), ``unknown_ps`` the PyTorch compute it could not type."""
    if stores and all(is_kineto(s) for s in stores):
        known = xprof_16bit_ps + xprof_32bit_ps
        if known > 0 and known >= unknown_ps:
            return Precision("operator_input_types", 100.0 * xprof_16bit_ps / known, 100.0 * xprof_32bit_ps / known)
        return Precision("unknown", None, None)
    facts = [host_precision(s) for s in stores]
    low = sum(f.hlo_16bit_ps for f in facts)
    high = sum(f.hlo_32bit_ps for f in facts)
    if low + high > 0:
        return Precision("hlo_element_types", 100.0 * low / (low + high), 100.0 * high / (low + high))
    total = xprof_16bit_ps + xprof_32bit_ps
    if any(f.has_tensor_shapes for f in facts) and total > 0:
        return Precision("tensor_shapes", 100.0 * xprof_16bit_ps / total, 100.0 * xprof_32bit_ps / total)
    return Precision("unknown", None, None)
