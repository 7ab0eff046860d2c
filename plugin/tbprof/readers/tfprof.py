"""Reader of tfprof ``ProfileProto`` files (``Profiler.serialize_to_string()``, ``profile_<step>``).

The file is small next to an XSpace (one record per graph node and traced step, not per
event), so upb parses it whole; one pass over the nodes fills the ``TfprofProfile`` lists
and the exec/kernel long tables.

Files written by another TensorFlow version may carry fields this schema does not know.
They are ignored and named in ``warnings`` (the views use the known fields, as an older
tfprof would); a file whose content is only unknown fields is not a ProfileProto at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError, Message

from tbprof.cache.memory_guard import check_allocation
from tbprof.errors import ProfileReadError
from tbprof.fs import Location, shown_name
from tbprof.fs import location as as_location
from tbprof.protos import tfprof_log_pb2
from tbprof.readers.xplane import read_file_bytes
from tbprof.store.tfprof import EXEC_COLUMNS, ExecTable, KernelTable, TfprofProfile, Trace, views_need_bytes

MAX_UNKNOWN_REPORTED = 8


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _is_repeated(fd: Any) -> bool:
    # protobuf >= 5.28 has is_repeated (7 dropped label); older ones only label.
    flag = getattr(fd, "is_repeated", None)
    return bool(flag) if flag is not None else fd.label == fd.LABEL_REPEATED


def _unknown_fields(msg: Message, path: str) -> Iterator[str]:
    """Paths of unknown fields, e.g. ``ProfileNode(id 3).field 40`` (only called when some exist)."""
    from google.protobuf import unknown_fields

    for f in unknown_fields.UnknownFieldSet(msg):
        yield f"{path} field {f.field_number}"
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        if fd.message_type.GetOptions().map_entry:
            value_fd = fd.message_type.fields_by_name["value"]
            if value_fd.message_type is not None:
                for k, v in value.items():
                    yield from _unknown_fields(v, f"{path}.{fd.name}[{k}]")
        elif _is_repeated(fd):
            for i, v in enumerate(value):
                yield from _unknown_fields(v, f"{path}.{fd.name}[{i}]")
        else:
            yield from _unknown_fields(value, f"{path}.{fd.name}")


def read_tfprof(path: str | Location, host: str | None = None) -> TfprofProfile:
    """Reads one tfprof ProfileProto file. Raises ProfileReadError with a readable reason."""
    path = as_location(path)
    data = read_file_bytes(path)
    return tfprof_from_bytes(data, str(path), host if host is not None else shown_name(path.name))


def tfprof_from_bytes(data: bytes, source: str, host: str) -> TfprofProfile:
    if len(data) == 0:
        raise ProfileReadError(source, "the file is empty (0 bytes)")
    proto = tfprof_log_pb2.ProfileProto()
    try:
        proto.ParseFromString(data)
    except DecodeError as e:
        raise ProfileReadError(source, f"not a tfprof ProfileProto (protobuf decoding failed: {e}); "
                               "is the file truncated or of another kind?") from e
    warnings: list[str] = []
    size_all = proto.ByteSize()
    proto.DiscardUnknownFields()
    if proto.ByteSize() != size_all:
        reparsed = tfprof_log_pb2.ProfileProto.FromString(data)
        found = []
        for item in _unknown_fields(reparsed, "ProfileProto"):
            found.append(item)
            if len(found) > MAX_UNKNOWN_REPORTED:
                break
        if len(proto.nodes) == 0:
            raise ProfileReadError(source, "not a tfprof ProfileProto: it has no graph nodes, only fields tfprof "
                                   f"does not define ({', '.join(found[:MAX_UNKNOWN_REPORTED])})")
        more = " and more" if len(found) > MAX_UNKNOWN_REPORTED else ""
        warnings.append(f"{size_all - proto.ByteSize()} bytes of fields this tbprof does not know were ignored "
                        f"(written by another TensorFlow version?): {', '.join(found[:MAX_UNKNOWN_REPORTED])}{more}")
    if len(proto.nodes) == 0:
        raise ProfileReadError(source, "the tfprof ProfileProto has no graph nodes (nothing was profiled)")
    _check_fits(proto, source)
    return _build(proto, source, host, warnings)


def _check_fits(proto: Any, source: str) -> None:
    """Refuses (MemoryRefusal) a file whose nodes, name scopes and call-stack frames would not
    fit in memory once read and shown: a 120 KB file can hold 60 000 name scopes or 15 000
    frames, each a node of a view (the guard's size factor cannot know that)."""
    nodes = scopes = frames = 0
    for node in proto.nodes.values():
        nodes += 1
        scopes += node.name.count(b"/")
        frames += len(node.trace.traces)
    check_allocation(source, views_need_bytes(nodes, scopes, frames),
                     f"{nodes} graph nodes, {scopes} name scopes and {frames} call-stack frames")


def _build(proto: Any, source: str, host: str, warnings: list[str]) -> TfprofProfile:
    id_to_string = {k: _text(v) for k, v in proto.id_to_string.items()}
    # tfprof keys its node map by name; the first node of a duplicated name wins (by id).
    by_name: dict[str, Any] = {}
    for node_id in sorted(proto.nodes):
        node = proto.nodes[node_id]
        by_name.setdefault(_text(node.name), node)
    names = sorted(by_name)
    index = {n: i for i, n in enumerate(names)}
    id_to_name = {k: _text(v.name) for k, v in proto.nodes.items()}

    n = len(names)
    ops: list[str] = []
    op_types: list[tuple[str, ...]] = []
    canonical: list[str] = []
    host_dev: list[str] = []
    static_flops = np.zeros(n, dtype=np.int64)
    params = np.zeros(n, dtype=np.int64)
    shapes: list[tuple[int, ...]] = []
    inputs: list[list[int]] = []
    input_names: list[list[str]] = []
    input_src: list[list[int]] = []
    output_shapes: list[dict[int, tuple[int, ...]]] = []
    traces: list[tuple[Trace, ...]] = []
    data_format: list[str] = []
    devices: dict[str, int] = {}
    ex_cols: dict[str, list[int]] = {k: [] for k in ("node", "step", *EXEC_COLUMNS)}
    k_cols: dict[str, list[Any]] = {k: [] for k in ("node", "step", "device", "accelerator", "start", "dur")}
    missing_inputs = 0

    for i, name in enumerate(names):
        node = by_name[name]
        ops.append(_text(node.op))
        op_types.append(tuple(sorted({_text(t) for t in node.op_types})))
        canonical.append(_text(node.canonical_device))
        host_dev.append(_text(node.host_device))
        static_flops[i] = node.float_ops
        shape = tuple(node.shape)
        shapes.append(shape)
        # tfprof: parameters are the product of a complete shape (a Variable's), else 0.
        if shape and all(d >= 0 for d in shape):
            params[i] = int(np.prod(np.asarray(shape, dtype=np.int64)))
        src_index = {id_to_name.get(k, ""): v for k, v in node.src_output_index.items()}
        idx_list, name_list, src_list = [], [], []
        for slot in sorted(node.inputs):
            input_name = id_to_name.get(node.inputs[slot])
            if input_name is None:
                missing_inputs += 1
                continue
            name_list.append(input_name)
            src_list.append(src_index.get(input_name, 0))
            j = index.get(input_name, -1)
            if j >= 0:
                idx_list.append(j)
        inputs.append(idx_list)
        input_names.append(name_list)
        input_src.append(src_list)
        output_shapes.append({k: tuple(v.int64_values) for k, v in node.output_shapes.items()})
        traces.append(tuple(Trace(id_to_string.get(t.file_id, ""), t.lineno, id_to_string.get(t.function_id, ""),
                                  t.func_start_line) for t in node.trace.traces))
        fmt = node.attrs.get("data_format")
        data_format.append(_text(fmt.s) if fmt is not None and fmt.WhichOneof("value") == "s" else "")
        for step in sorted(node.execs):
            e = node.execs[step]
            acc_us = 0
            cpu_us = 0
            for is_acc, execs in ((True, e.accelerator_execs), (False, e.cpu_execs)):
                for dev in sorted(execs):
                    d = devices.setdefault(dev, len(devices))
                    for t in execs[dev].times:
                        if len(t.int64_values) < 2:
                            continue
                        start, dur = t.int64_values[0], t.int64_values[1]
                        k_cols["node"].append(i)
                        k_cols["step"].append(step)
                        k_cols["device"].append(d)
                        k_cols["accelerator"].append(is_acc)
                        k_cols["start"].append(start)
                        k_cols["dur"].append(dur)
                        if is_acc:
                            acc_us += dur
                        else:
                            cpu_us += dur
            mem = e.memory_execs
            ex_cols["node"].append(i)
            ex_cols["step"].append(step)
            ex_cols["run_count"].append(e.run_count)
            ex_cols["accelerator_exec_micros"].append(acc_us)
            ex_cols["cpu_exec_micros"].append(cpu_us)
            ex_cols["requested_bytes"].append(sum(m.requested_bytes for m in mem))
            ex_cols["peak_bytes"].append(sum(m.peak_bytes for m in mem))
            ex_cols["residual_bytes"].append(sum(m.residual_bytes for m in mem))
            ex_cols["output_bytes"].append(sum(m.output_bytes for m in mem))
            ex_cols["all_start_micros"].append(e.all_start_micros)
            ex_cols["latest_end_micros"].append(e.latest_end_micros)

    if missing_inputs:
        warnings.append(f"{missing_inputs} node inputs name node ids that are not in the file; they are ignored")
    execs = ExecTable(np.asarray(ex_cols["node"], dtype=np.int32), np.asarray(ex_cols["step"], dtype=np.int64),
                      {k: np.asarray(ex_cols[k], dtype=np.int64) for k in EXEC_COLUMNS})
    kernels = KernelTable(np.asarray(k_cols["node"], dtype=np.int32), np.asarray(k_cols["step"], dtype=np.int64),
                          np.asarray(k_cols["device"], dtype=np.int32), np.asarray(k_cols["accelerator"], dtype=bool),
                          np.asarray(k_cols["start"], dtype=np.int64), np.asarray(k_cols["dur"], dtype=np.int64))
    steps = sorted(set(proto.steps) | set(execs.step.tolist()))
    return TfprofProfile(
        source_path=source, host=host, names=names, ops=ops, op_types=op_types, canonical_device=canonical,
        host_device=host_dev, static_float_ops=static_flops, parameters=params, shapes=shapes, inputs=inputs,
        input_names=input_names, input_src_output=input_src, output_shapes=output_shapes, traces=traces,
        data_format=data_format, execs=execs, kernels=kernels, devices=list(devices), steps=steps,
        has_trace=bool(proto.has_trace), miss_accelerator_stream=bool(proto.miss_accelerator_stream),
        warnings=warnings)
