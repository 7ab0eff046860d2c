"""The tfprof ProfileProto reader on the real profile.pb, and on broken variants of it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tbprof.errors import ProfileReadError
from tbprof.protos import tfprof_log_pb2
from tbprof.readers.tfprof import read_tfprof
from tests.tfprof_data import PROFILE_PB, golden


def test_nodes_steps_and_exec_records() -> None:
    p = read_tfprof(PROFILE_PB)
    # TensorFlow's graph view with every option open lists each graph node once under the root.
    graph_rows = next(c for c in golden("tfprof_views.json")["cases"] if c["id"] == "graph_default")["rows"]
    assert p.n_nodes == len(graph_rows) - 1 == 104
    assert p.steps == [0, 1, 2, 3, 4, 5]  # the README: 6 traced steps
    assert p.names == sorted(p.names)
    assert p.has_trace and not p.miss_accelerator_stream
    assert p.warnings == []
    # One exec row per (node, step) record of the file, decoded here with plain protobuf.
    proto = tfprof_log_pb2.ProfileProto.FromString(PROFILE_PB.read_bytes())
    records = sorted((n.name.decode(), s) for n in proto.nodes.values() for s in n.execs)
    assert sorted((p.names[i], int(s)) for i, s in zip(p.execs.node, p.execs.step, strict=True)) == records
    # CPU time per step: the sum of every cpu_execs (start, duration) pair of that step.
    for step in p.steps:
        want = sum(t.int64_values[1] for n in proto.nodes.values() if step in n.execs
                   for times in n.execs[step].cpu_execs.values() for t in times.times)
        got = int(p.execs.values["cpu_exec_micros"][p.execs.step == step].sum())
        assert got == want, step
    assert int(p.execs.values["accelerator_exec_micros"].sum()) == 0  # a CPU-only run


def test_node_stats_average_truncates_like_tfprof() -> None:
    p = read_tfprof(PROFILE_PB)
    avg = p.node_stats(-1)
    per_step = np.stack([p.node_stats(s)["exec_micros"] for s in p.steps])
    count = np.bincount(p.execs.node, minlength=p.n_nodes)
    ran = count > 0
    # tfprof: integer mean over the steps the node has a record for.
    assert np.array_equal(avg["exec_micros"][ran], per_step.sum(axis=0)[ran] // count[ran])
    assert not avg["exec_micros"][~ran].any()


def _write(tmp_path: Path, data: bytes, name: str = "profile.pb") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(ProfileReadError, match="empty"):
        read_tfprof(_write(tmp_path, b""))


def test_truncated_file(tmp_path: Path) -> None:
    data = PROFILE_PB.read_bytes()
    with pytest.raises(ProfileReadError, match="truncated") as e:
        read_tfprof(_write(tmp_path, data[: len(data) // 2]))
    assert e.value.path.endswith("profile.pb")


def test_json_is_not_a_profile_proto(tmp_path: Path, sample_profiles: Path) -> None:
    data = (sample_profiles / "tf1_timeline" / "timeline-0.json").read_bytes()
    with pytest.raises(ProfileReadError, match="not a tfprof ProfileProto"):
        read_tfprof(_write(tmp_path, data))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def test_unknown_fields_from_another_version_are_named(tmp_path: Path) -> None:
    proto = tfprof_log_pb2.ProfileProto.FromString(PROFILE_PB.read_bytes())
    some_id = min(proto.nodes)
    # A newer tfprof's fields: ProfileProto field 40 (varint) and ProfileNode field 77 (bytes).
    proto.nodes[some_id].MergeFromString(_varint(77 << 3 | 2) + _varint(3) + b"new")
    data = proto.SerializeToString() + _varint(40 << 3) + _varint(7)
    p = read_tfprof(_write(tmp_path, data))
    assert len(p.warnings) == 1
    assert "ProfileProto field 40" in p.warnings[0]
    assert f"ProfileProto.nodes[{some_id}] field 77" in p.warnings[0]
    # The known fields read as before.
    base = read_tfprof(PROFILE_PB)
    assert p.names == base.names
    assert np.array_equal(p.node_stats(-1)["exec_micros"], base.node_stats(-1)["exec_micros"])


def test_only_unknown_fields_is_an_error(tmp_path: Path) -> None:
    data = _varint(40 << 3) + _varint(7) + _varint(41 << 3 | 2) + _varint(2) + b"ok"
    with pytest.raises(ProfileReadError, match=r"only fields tfprof does not define.*field 40"):
        read_tfprof(_write(tmp_path, data))


def test_no_nodes_is_an_error(tmp_path: Path) -> None:
    data = tfprof_log_pb2.ProfileProto(steps=[1, 2]).SerializeToString()
    with pytest.raises(ProfileReadError, match="no graph nodes"):
        read_tfprof(_write(tmp_path, data))
