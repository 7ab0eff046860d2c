"""The HLO programs of a profile: what each XLA op is, decoded from the ``Hlo Proto`` stats.

JAX and TF/XLA profiles carry one ``HloProto`` per compiled program on the
``/host:metadata`` plane (event metadata with stats ``Hlo Proto`` and ``program_id``).
Device events name their HLO op (``hlo_op`` stat) and program (``program_id``); the proto
says which framework op the HLO op came from (``metadata.op_name``/``op_type``) and its
XLA category ("loop fusion", "custom-call", ...). XProf reads the same protos, and like it
an HLO op absent from its program's proto (e.g. a thunk name such as ``command_buffer_1``)
is not an op.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from tbprof.domain.planes import METADATA_PLANE
from tbprof.store.memo import Memo
from tbprof.store.tables import KIND_BYTES, ProfileStore

# XLA's HloInstruction::IsElementwise opcodes (the ones a profile shows unfused).
_ELEMENTWISE = frozenset((
    "abs", "add", "and", "atan2", "bitcast-convert", "cbrt", "ceil", "clamp", "clz", "compare",
    "complex", "convert", "cos", "divide", "erf", "exponential", "exponential-minus-one", "floor",
    "imag", "is-finite", "log", "log-plus-one", "logistic", "maximum", "minimum", "multiply",
    "negate", "not", "or", "popcnt", "power", "real", "reduce-precision", "remainder",
    "round-nearest-afz", "round-nearest-even", "rsqrt", "select", "shift-left",
    "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sqrt", "stochastic-convert",
    "subtract", "tan", "tanh", "xor",
))
_FUSION_KIND = {"kLoop": "loop fusion", "kInput": "input fusion", "kOutput": "output fusion",
                "kCustom": "custom fusion"}


def hlo_category(opcode: str, fusion_kind: str) -> str:
    """XLA's HloInstruction::ToCategory: the category XProf groups HLO ops by."""
    if opcode in ("transpose", "copy", "copy-start", "copy-done"):
        return "data formatting"
    if opcode in _ELEMENTWISE:
        return "non-fusion elementwise"
    if opcode == "fusion":
        return _FUSION_KIND.get(fusion_kind, "fusion")
    return opcode


def tf_op_fullname(op_type: str, op_name: str) -> str:
    """The framework op of an HLO op as XProf writes it: "name:type", "" when unknown."""
    if not op_type:
        if not op_name:
            return ""
        if op_name in ("XLA_Args", "XLA_Retvals"):
            op_type = op_name
    return f"{op_name}:{op_type}"


@dataclass(frozen=True)
class HloOp:
    name: str
    opcode: str
    category: str
    provenance: str  # framework op fullname "op_name:op_type" ("" when the HLO op has none)
    source: str  # "file.py:123" or ""


def program_id_text(program_id: int) -> str:
    """A program id as XProf prints it: an unsigned 64-bit number (TPU fingerprints such as
    12190760917235803885 do not fit int64; the store's stat columns hold them wrapped)."""
    return str(int(program_id) & 0xFFFF_FFFF_FFFF_FFFF)


class HloProgram:
    """One HLO module. Instructions are decoded on first lookup: a profile names few of them,
    and its events name few of its programs, so the index of the instructions by name is built
    on first lookup too."""

    def __init__(self, program_id: int, module_name: str, module: Any, buffer_assignment: Any = None) -> None:
        self.program_id = program_id
        self.module_name = module_name
        self.module = module  # the HloModuleProto (instructions, the cost analysis)
        # The BufferAssignmentProto (memory viewer); None when the proto has none.
        self.buffer_assignment = buffer_assignment
        self._index: dict[bytes, Any] | None = None  # name (bytes) -> HloInstructionProto
        self._ops: dict[str, HloOp | None] = {}
        self.cost_module: Any = None  # hlo_cost's index of the module, built on first use

    @property
    def _instructions(self) -> dict[bytes, Any]:
        # Threads building it at once build equal indexes; the first instruction of a name wins.
        index = self._index
        if index is None:
            index = {}
            for comp in self.module.computations:
                for ins in comp.instructions:
                    index.setdefault(ins.name, ins)
            self._index = index
        return index

    @property
    def display_name(self) -> str:
        """``jit_train_step(13929)``, as XProf names programs."""
        return f"{self.module_name}({program_id_text(self.program_id)})"

    def __len__(self) -> int:
        return len(self._instructions)

    def instruction(self, name: str) -> Any:
        """The HloInstructionProto called ``name`` (None when the module has none)."""
        return self._instructions.get(name.encode())

    def op(self, name: str) -> HloOp | None:
        """The HLO op called ``name`` (None when the module has no such instruction)."""
        if name in self._ops:
            return self._ops[name]
        ins = self._instructions.get(name.encode())
        found = None
        if ins is not None:
            opcode = _text(ins.opcode)
            meta = ins.metadata
            source = f"{_text(meta.source_file).rsplit('/', 1)[-1]}:{meta.source_line}" if meta.source_file else ""
            found = HloOp(name, opcode, hlo_category(opcode, _text(ins.fusion_kind)),
                          tf_op_fullname(_text(meta.op_type), _text(meta.op_name)), source)
        self._ops[name] = found
        return found


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def parse_hlo_proto(program_id: int, data: bytes) -> HloProgram:
    # Imported here: protobuf and the HLO schema take time to import (bench/measurements.md#services), and are for
    # profiles that carry HLO only.
    from tbprof.protos import hlo_pb2

    proto = hlo_pb2.HloProto()
    proto.ParseFromString(data)
    module = proto.hlo_module
    assignment = proto.buffer_assignment if proto.HasField("buffer_assignment") else None
    return HloProgram(program_id, _text(module.name), module, assignment)


def hlo_programs(store: ProfileStore) -> dict[int, HloProgram]:
    """program_id -> decoded program, for every ``Hlo Proto`` of the profile (memoised)."""
    # Sized as a small dict: the programs are shared by the hosts and charged once, by
    # _shared_program; estimating them per store walked every instruction again.
    return store.memo(("hlo_programs",), lambda: _hlo_programs(store), size=lambda progs: 64 * (1 + len(progs)))


def _hlo_programs(store: ProfileStore) -> dict[int, HloProgram]:
    plane = store.plane(METADATA_PLANE)
    proto_id = store.stat_id("Hlo Proto")
    if plane is None or proto_id < 0:
        return {}
    protos = plane.meta_stat_column(proto_id)
    program_col = plane.meta_stat_column(store.stat_id("program_id"))
    program_of = dict(zip(program_col.rows.tolist(), program_col.as_int().tolist(), strict=False))
    out: dict[int, HloProgram] = {}
    for meta_row, kind, value in zip(protos.rows.tolist(), protos.kind.tolist(), protos.value.tolist(), strict=False):
        if kind != KIND_BYTES:
            continue
        # XProf keys programs by the metadata id when the program_id stat is absent.
        program_id = program_of.get(meta_row, int(plane.meta_ids[meta_row]))
        if program_id in out:
            continue
        try:
            out[program_id] = _shared_program(program_id, plane.blobs[value])
        except Exception:
            continue
    return out


# The hosts of a pod run the same XLA programs: their profiles carry byte-identical HLO protos.
# A program decoded (and cost-indexed, see hlo_cost.program_module) for one host serves every
# host with the same bytes, so an all-hosts page of N hosts parses and walks each program once,
# not N times (bench/: the overview of a 64-host pod). Kept in the process-wide byte budget
# (store/memo.py) with everything else cached: a decoded module plus its cost index is charged
# SHARED_BYTES_PER_PROTO_BYTE x the proto's size (Python objects by tracemalloc, plus upb's
# arena, which tracemalloc does not see), and the proto's bytes, kept to compare.
SHARED_BYTES_PER_PROTO_BYTE = 8
_PROGRAMS = Memo()


def _shared_program(program_id: int, data: bytes) -> HloProgram:
    # Found by a CRC-32 (a third of a SHA-256's CPU: a pod's worker finds every program of every
    # host here) and taken only when the bytes are equal: a CRC collision, chance or crafted,
    # parses the program for this host alone.
    key = ("hlo_program", program_id, len(data), zlib.crc32(data))
    shared_data, program = _PROGRAMS.get(key, lambda: (data, parse_hlo_proto(program_id, data)),
                                         size=lambda _: len(data) * (SHARED_BYTES_PER_PROTO_BYTE + 1))
    return program if shared_data == data else parse_hlo_proto(program_id, data)
