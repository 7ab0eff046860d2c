"""Small hand-built HLO modules for the hlo_cost unit tests (FLOP and byte rules)."""

from __future__ import annotations

from typing import Any

from tbprof.domain import hlo_cost
from tbprof.domain.hlo_map import HloProgram
from tbprof.protos import hlo_pb2

F32, U32 = 11, 8


class HloBuilder:
    def __init__(self) -> None:
        self.module = hlo_pb2.HloModuleProto(name=b"m")
        self._next_id = 1

    def computation(self, name: str) -> Any:
        comp = self.module.computations.add(name=name.encode(), id=len(self.module.computations) + 1)
        return comp

    def add(self, comp: Any, name: str, opcode: str, dims: list[int], operands: tuple[Any, ...] = (),
            element_type: int = F32, **fields: Any) -> Any:
        ins = comp.instructions.add(name=name.encode(), opcode=opcode.encode(), id=self._next_id)
        self._next_id += 1
        ins.shape.element_type = element_type
        ins.shape.dimensions.extend(dims)
        ins.operand_ids.extend(o.id for o in operands)
        for key, value in fields.items():
            if isinstance(value, list):
                getattr(ins, key).extend(value)
            else:
                setattr(ins, key, value)
        comp.root_id = ins.id
        return ins

    def flops(self, entry: Any) -> dict[str, int]:
        self.module.entry_computation_id = entry.id
        return hlo_cost._program_flops(HloProgram(1, "m", self.module))


def scalar_add(b: HloBuilder) -> Any:
    comp = b.computation("add")
    x = b.add(comp, "x", "parameter", [])
    y = b.add(comp, "y", "parameter", [])
    b.add(comp, "sum", "add", [], (x, y))
    return comp
