"""hlo_cost byte rules on small hand-built HLO modules; every expected count is derived in a
comment (f32 = 4 bytes, s32 = 4 bytes)."""

from __future__ import annotations

from typing import Any

from tbprof.domain import hlo_cost
from tbprof.domain.hlo_map import HloProgram
from tests.hlo_builder import F32, HloBuilder, scalar_add

S32, TUPLE = 4, 13


class _LaidOut(HloBuilder):
    """Arrays get the default dimension order as layout (XLA counts no bytes without one)."""

    def add(self, comp: Any, name: str, opcode: str, dims: list[int], operands: tuple[Any, ...] = (),
            element_type: int = F32, **fields: Any) -> Any:
        ins = super().add(comp, name, opcode, dims, operands, element_type, **fields)
        if element_type != TUPLE:
            ins.shape.layout.minor_to_major.extend(reversed(range(len(dims))))
        return ins

    def bytes(self, entry: Any) -> dict[str, hlo_cost.OpBytes]:
        self.module.entry_computation_id = entry.id
        return hlo_cost._program_bytes(HloProgram(1, "m", self.module))


def _leaf(shape: Any, dims: list[int], element_type: int = F32) -> None:
    sub = shape.tuple_shapes.add(element_type=element_type)
    sub.dimensions.extend(dims)
    sub.layout.minor_to_major.extend(reversed(range(len(dims))))


def _same(total: float) -> hlo_cost.OpBytes:
    return hlo_cost.OpBytes(total, total)


def test_unfused_ops() -> None:
    b = _LaidOut()
    add = scalar_add(b)
    entry = b.computation("main")
    p = b.add(entry, "p", "parameter", [4, 8])
    v = b.add(entry, "v", "parameter", [100])
    i = b.add(entry, "i", "parameter", [], element_type=S32)
    u = b.add(entry, "u", "parameter", [10])
    z = b.add(entry, "z", "constant", [])
    b.add(entry, "a", "add", [4, 8], (p, p))
    b.add(entry, "s", "slice", [10], (v,))
    b.add(entry, "ds", "dynamic-slice", [10], (v, i))
    b.add(entry, "dus", "dynamic-update-slice", [100], (v, u, i))
    b.add(entry, "r", "reduce", [8], (p, z), dimensions=[0], called_computation_ids=[add.id])
    b.add(entry, "ar", "all-reduce", [4, 8], (p,), called_computation_ids=[add.id])
    b.add(entry, "bc", "bitcast", [32], (p,))
    got = b.bytes(entry)
    # add: two 128-byte operands + 128-byte output = 384. slice: reads only its 40-byte output
    # and writes it: 80; dynamic-slice: 80 + the 4-byte index = 84; dynamic-update-slice: the
    # 40-byte update read and written + index = 84. reduce f32[4,8] -> f32[8]: output 32 +
    # input 128 + init read once per output element 8 x 4 = 192. all-reduce: 128 + 128.
    # Parameters, constants and bitcasts touch no memory.
    assert got["a"] == _same(384)
    assert (got["s"], got["ds"], got["dus"]) == (_same(80), _same(84), _same(84))
    assert (got["r"], got["ar"]) == (_same(192), _same(256))
    assert (got["p"], got["z"], got["bc"]) == (_same(0), _same(0), _same(0))


def test_gemm_result_counts_in_total_only() -> None:
    b = _LaidOut()
    entry = b.computation("main")
    lhs = b.add(entry, "lhs", "parameter", [32, 64])
    rhs = b.add(entry, "rhs", "parameter", [64, 16])
    gemm = b.add(entry, "gemm", "custom-call", [], (lhs, rhs), element_type=TUPLE,
                 custom_call_target=b"__cublas$lt$matmul")
    _leaf(gemm.shape, [32, 16])
    _leaf(gemm.shape, [1024], element_type=2)  # s8 workspace
    b.add(entry, "other", "custom-call", [32, 16], (lhs,), custom_call_target=b"my_kernel")
    got = b.bytes(entry)
    # Operands 8192 + 4096 = 12288 in both; the f32[32,16] result (2048) in the total only;
    # the workspace nowhere. An unknown custom-call has no bytes at all.
    assert got["gemm"] == hlo_cost.OpBytes(14336, 12288)
    assert "other" not in got


def test_fusion_reads_parameters_by_utilization() -> None:
    b = _LaidOut()
    fused = b.computation("fused")
    p0 = b.add(fused, "p0", "parameter", [100], parameter_number=0)
    lo = b.add(fused, "lo", "slice", [50], (p0,))
    hi = b.add(fused, "hi", "slice", [50], (p0,))
    b.add(fused, "root", "add", [50], (lo, hi))
    entry = b.computation("main")
    q = b.add(entry, "q", "parameter", [100])
    b.add(entry, "f", "fusion", [50], (q,), fusion_kind=b"kLoop", called_computation_ids=[fused.id])
    # Output f32[50] = 200. Each slice reads half of p0: utilization 0.5 + 0.5 = 1, so p0 is
    # read once in full (400), not twice. Total 600.
    assert b.bytes(entry)["f"] == _same(600)


def test_fusion_large_constant_in_total_only() -> None:
    b = _LaidOut()
    fused = b.computation("fused")
    p0 = b.add(fused, "p0", "parameter", [4], parameter_number=0)
    bc = b.add(fused, "bc", "broadcast", [4, 10], (p0,), dimensions=[0])
    c = b.add(fused, "c", "constant", [4, 10])
    b.add(fused, "root", "add", [4, 10], (bc, c))
    entry = b.computation("main")
    q = b.add(entry, "q", "parameter", [4])
    b.add(entry, "f", "fusion", [4, 10], (q,), fusion_kind=b"kLoop", called_computation_ids=[fused.id])
    # Output 160; the broadcast reads p0 once (16); the 40-element constant is read once (160)
    # and counted in the total, but belongs to no operand or output: total 336, HBM 176.
    assert b.bytes(entry)["f"] == hlo_cost.OpBytes(336, 176)


def test_fusion_in_place_update_and_tuple_output() -> None:
    b = _LaidOut()
    fused = b.computation("fused")
    p0 = b.add(fused, "p0", "parameter", [100], parameter_number=0)
    p1 = b.add(fused, "p1", "parameter", [10], parameter_number=1)
    p2 = b.add(fused, "p2", "parameter", [], element_type=S32, parameter_number=2)
    b.add(fused, "root", "dynamic-update-slice", [100], (p0, p1, p2))
    pair = b.computation("pair")
    x = b.add(pair, "x", "parameter", [8], parameter_number=0)
    s = b.add(pair, "s", "add", [8], (x, x))
    m = b.add(pair, "m", "multiply", [8], (x, x))
    tup = b.add(pair, "t", "tuple", [], (s, m), element_type=TUPLE)
    _leaf(tup.shape, [8])
    _leaf(tup.shape, [8])
    entry = b.computation("main")
    buf = b.add(entry, "buf", "parameter", [100])
    upd = b.add(entry, "upd", "parameter", [10])
    idx = b.add(entry, "idx", "parameter", [], element_type=S32)
    b.add(entry, "dus_fusion", "fusion", [100], (buf, upd, idx), fusion_kind=b"kLoop",
          called_computation_ids=[fused.id])
    v = b.add(entry, "v", "parameter", [8])
    two = b.add(entry, "two", "fusion", [], (v,), element_type=TUPLE, fusion_kind=b"kLoop",
                called_computation_ids=[pair.id])
    _leaf(two.shape, [8])
    _leaf(two.shape, [8])
    got = b.bytes(entry)
    # In place: writes only the update (40); the buffer operand is not read (utilization 0);
    # the update (40) and index (4) are read: 84. Tuple output: two f32[8] (32 + 32) and x,
    # read elementwise by both, once (32): 96.
    assert (got["dus_fusion"], got["two"]) == (_same(84), _same(96))
