"""``events.input_tensors`` and ``output_tensors`` of XLA ops: the operand and result shapes of
the HLO instruction a device event ran, read from the profile's HLO protos (the ``Hlo Proto``
stats of ``/host:metadata``), as XProf's Events DB fills its columns of the same names.

An event is an XLA op where the op tools say so (``device_op_events``: its program's proto has
an instruction of its ``hlo_op`` name, or on a TPU ``XLA Ops`` line of its display name); other
events are NULL. Shapes are XLA's text without layouts (``human_shape_text``); an instruction
without operands has NULL inputs, as in XProf.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tbprof.analyses.ops.op_metrics import device_events, device_op_events
from tbprof.domain.hlo_map import HloProgram, hlo_programs
from tbprof.domain.hlo_text import TENSOR_SEPARATOR, human_shape_text
from tbprof.store.tables import ProfileStore


@dataclass(frozen=True)
class OpTensors:
    """Per store plane index: (event rows, code of the inputs' text, code of the output's text),
    codes into ``texts`` (-1: none)."""

    planes: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]
    texts: list[str]


def _operands_by_id(program: HloProgram) -> dict[int, Any]:
    module = program.module
    if module is None:
        return {}
    return {ins.id: ins for comp in module.computations for ins in comp.instructions}


def op_tensors(store: ProfileStore) -> OpTensors:
    """The shapes of every device event that is an XLA op (memoised per store)."""
    return store.memo(("sql_column", "op_tensors"), lambda: _op_tensors(store))


def _op_tensors(store: ProfileStore) -> OpTensors:
    ev = device_op_events(store)
    programs = hlo_programs(store)
    if ev.row.shape[0] == 0 or not programs:
        return OpTensors({}, [])
    index: dict[str, int] = {}
    by_id: dict[int, dict[int, Any]] = {}
    n_ops = len(ev.op_name)
    input_code = np.full(n_ops, -1, dtype=np.int32)
    output_code = np.full(n_ops, -1, dtype=np.int32)
    for k in np.unique(ev.op).tolist():
        program = programs.get(ev.op_program_id[k])
        ins = program.instruction(ev.op_name[k]) if program is not None else None
        if program is None or ins is None:
            continue
        if program.program_id not in by_id:
            by_id[program.program_id] = _operands_by_id(program)
        operands = [by_id[program.program_id].get(i) for i in ins.operand_ids]
        inputs = TENSOR_SEPARATOR.join(human_shape_text(o.shape) for o in operands if o is not None)
        if inputs:
            input_code[k] = index.setdefault(inputs, len(index))
        output_code[k] = index.setdefault(human_shape_text(ins.shape), len(index))
    planes: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    device_planes = [dev.plane.index for dev in device_events(store)]
    for pi in np.unique(ev.plane_index).tolist():
        sel = ev.plane_index == pi
        ops = ev.op[sel]
        planes[device_planes[pi]] = (ev.row[sel], input_code[ops], output_code[ops])
    return OpTensors(planes, list(index))
