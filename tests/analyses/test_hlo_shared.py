"""Hosts with byte-identical HLO programs share one decoded program (a pod parses and
cost-walks each program once); the costs are those of a program decoded on its own."""

from __future__ import annotations

import shutil
from pathlib import Path

from tbprof.domain import hlo_cost, hlo_map
from tbprof.readers.xplane import read_xspace
from tests.conftest import xplane_of


def test_identical_programs_are_shared(profiles_root: Path, tmp_path: Path) -> None:
    source = xplane_of(profiles_root, "jax_2hosts", "worker0")
    copy = tmp_path / "worker0_copy.xplane.pb"
    shutil.copyfile(source, copy)
    a, b = read_xspace(source), read_xspace(copy)
    programs_a, programs_b = hlo_map.hlo_programs(a), hlo_map.hlo_programs(b)
    assert programs_a and programs_a.keys() == programs_b.keys()
    for pid, program in programs_a.items():
        assert programs_b[pid] is program
        # The shared program's FLOPs equal those of the same proto decoded alone (not shared).
        plane = a.plane(hlo_map.METADATA_PLANE)
        assert plane is not None
        protos = plane.meta_stat_column(a.stat_id("Hlo Proto"))
        ids = plane.meta_stat_column(a.stat_id("program_id"))
        id_of = dict(zip(ids.rows.tolist(), ids.as_int().tolist(), strict=True))
        blobs = [plane.blobs[v] for row, k, v in zip(protos.rows.tolist(), protos.kind.tolist(),
                                                      protos.value.tolist(), strict=True)
                 if k == hlo_map.KIND_BYTES and id_of.get(row) == pid]
        assert blobs
        match = [hlo_map.parse_hlo_proto(pid, blobs[0])]
        assert hlo_cost.hlo_op_flops(b, pid) == hlo_cost._program_flops(match[0])


def test_other_hosts_programs_are_not_confused(profiles_root: Path) -> None:
    w0 = read_xspace(xplane_of(profiles_root, "jax_2hosts", "worker0"))
    w1 = read_xspace(xplane_of(profiles_root, "jax_2hosts", "worker1"))
    p0, p1 = hlo_map.hlo_programs(w0), hlo_map.hlo_programs(w1)
    # Shared only when the bytes are the same: a program id of both hosts maps to one object
    # exactly when the two hosts' protos of that id are byte-identical.
    for pid in p0.keys() & p1.keys():
        same_bytes = p0[pid].module.SerializeToString() == p1[pid].module.SerializeToString()
        assert (p0[pid] is p1[pid]) <= same_bytes
