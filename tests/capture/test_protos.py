"""Our profiler-service messages are wire-compatible with TensorFlow's.

TensorFlow ships ``profiler_options_pb2`` (not the service messages): its serialized file
descriptor is read from the installed package's source without importing TensorFlow, and
every field of ours must have TensorFlow's number, type and label. The request/response
messages are exercised against a real server in test_capture_tf.py.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from tbprof.capture import client
from tbprof.protos import profiler_options_pb2, profiler_service_pb2
from tests.servers import PLUGIN_SRC


def _tf_descriptor(relative: str) -> descriptor_pb2.FileDescriptorProto:
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or spec.origin is None:
        pytest.skip("tensorflow is not installed")
    source = (Path(spec.origin).parent / relative).read_text()
    match = re.search(r"AddSerializedFile\((b'.*?')\)\n", source)
    assert match, f"no serialized descriptor in {relative}"
    return descriptor_pb2.FileDescriptorProto.FromString(ast.literal_eval(match.group(1)))


def _fields(message: descriptor_pb2.DescriptorProto) -> dict[str, tuple[int, int, int]]:
    return {f.name: (f.number, f.type, f.label) for f in message.field}


def test_profile_options_match_tensorflow() -> None:
    tf_file = _tf_descriptor("tsl/profiler/protobuf/profiler_options_pb2.py")
    assert tf_file.package == "tensorflow"
    tf_options = next(m for m in tf_file.message_type if m.name == "ProfileOptions")
    ours = descriptor_pb2.DescriptorProto()
    profiler_options_pb2.ProfileOptions.DESCRIPTOR.CopyToProto(ours)
    assert _fields(ours) == _fields(tf_options)
    for nested in ours.nested_type:
        theirs = next(m for m in tf_options.nested_type if m.name == nested.name)
        assert _fields(nested) == _fields(theirs), nested.name
    assert [(v.name, v.number) for v in ours.enum_type[0].value] == \
        [(v.name, v.number) for v in tf_options.enum_type[0].value]


def test_request_bytes_as_tensorflow_numbers_them() -> None:
    """Field numbers of ProfileRequest from TSL profiler_service.proto, checked on the bytes:
    duration_ms=1, tools=3, opts=4, repository_root=5, session_id=6, host_name=7."""
    req = profiler_service_pb2.ProfileRequest(duration_ms=5, tools=["xplane.pb"], repository_root="r",
                                              session_id="s", host_name="h")
    req.opts.version = 1
    wire = req.SerializeToString()
    # tag = number << 3 | wire type (0 varint, 2 length-delimited)
    assert wire == bytes([1 << 3, 5, 3 << 3 | 2, 9, *b"xplane.pb", 4 << 3 | 2, 2, 5 << 3, 1,
                          5 << 3 | 2, 1, *b"r", 6 << 3 | 2, 1, *b"s", 7 << 3 | 2, 1, *b"h"])
    resp = profiler_service_pb2.ProfileResponse.FromString(bytes([7 << 3, 1]))
    assert resp.empty_trace is True
    assert client.PROFILE_METHOD == "/tensorflow.ProfilerService/Profile"


@pytest.mark.slow
def test_loads_next_to_tensorflow() -> None:
    """TensorBoard processes often import TensorFlow, which registers tensorflow.ProfileOptions in
    the default descriptor pool; our messages must not collide with it (hence our package)."""
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow is not installed")
    code = ("import tensorflow.tsl.profiler.protobuf.profiler_options_pb2 as tf_opts\n"
            "from tbprof.capture import client\n"
            "req = client.build_request(client.CaptureOptions(), '/r', 's', 'h')\n"
            "assert tf_opts.ProfileOptions.FromString(req.opts.SerializeToString()).host_tracer_level == 2\n")
    env = dict(os.environ, PYTHONPATH=str(PLUGIN_SRC), TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
