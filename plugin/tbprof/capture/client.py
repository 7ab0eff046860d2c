"""gRPC client of the profiler server's ``Profile`` method (TensorFlow, JAX: same server).

The server traces for ``opts.duration_ms`` and then writes
``<repository_root>/<session_id>/<host_name>.xplane.pb`` itself, on its own filesystem; the
response only says whether any event was collected. We call the method by its path with our
own message classes, so neither grpc_tools nor TensorFlow is needed at run time.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import grpc

from tbprof.capture.addresses import Address
from tbprof.protos import profiler_options_pb2, profiler_service_pb2

PROFILE_METHOD = "/tensorflow.ProfilerService/Profile"

# gRPC's own retries and DNS service configs are off: we retry ourselves (and say so per
# address), and a TXT record must not re-route the call. Proxies are off too: the connection
# goes to exactly the address the user typed, or nowhere.
CHANNEL_OPTIONS: list[tuple[str, int]] = [
    ("grpc.enable_retries", 0),
    ("grpc.service_config_disable_resolution", 1),
    ("grpc.enable_http_proxy", 0),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
]


@dataclass(frozen=True)
class CaptureOptions:
    duration_ms: int = 1000
    host_tracer_level: int = 2
    device_tracer_level: int = 1
    python_tracer_level: int = 0
    delay_ms: int = 0
    retries: int = 3


@dataclass
class Attempt:
    """How one Profile call ended (its details go to the debug log only: session.py)."""

    code: str  # "OK", "EMPTY_TRACE", "CONNECT_TIMEOUT" or a grpc.StatusCode name
    message: str


def deadline_s(options: CaptureOptions) -> float:
    """Delay + duration + a margin for the server to collect and write the trace.

    The margin grows with the duration (collecting a long trace takes long) and has a
    floor of 30 s; TensorFlow's own client allows max(60 s, 2 x duration).
    """
    return options.delay_ms / 1000 + options.duration_ms / 1000 + max(30.0, options.duration_ms / 1000)


def build_request(options: CaptureOptions, repository_root: str, session_id: str,
                  host_name: str) -> profiler_service_pb2.ProfileRequest:
    """The Profile RPC. The server writes ``<repository_root>/<session_id>/<host_name>.xplane.pb``
    (session.repository_root_for says which root a server is sent); ``ProfileOptions.repository_path``
    is left empty: servers do not need it for this RPC."""
    opts = profiler_options_pb2.ProfileOptions(
        # version 1: the levels below are meant as given (with 0 the server uses its defaults).
        version=1,
        host_tracer_level=options.host_tracer_level,
        device_tracer_level=options.device_tracer_level,
        python_tracer_level=options.python_tracer_level,
        duration_ms=options.duration_ms,
        # Same as TensorFlow's defaults: tf.data analysis needs dataset ops, op profile needs HLO.
        include_dataset_ops=True,
        enable_hlo_proto=True,
    )
    if options.delay_ms > 0:
        opts.start_timestamp_ns = time.time_ns() + options.delay_ms * 1_000_000
    return profiler_service_pb2.ProfileRequest(
        duration_ms=options.duration_ms, tools=["xplane.pb"], opts=opts,
        repository_root=repository_root, session_id=session_id, host_name=host_name)


def _wait_connectable(channel: grpc.Channel, timeout_s: float) -> bool:
    """True once the channel is READY or has failed (then the call fails fast with gRPC's
    reason); False when it is still trying after ``timeout_s`` (a silent, filtered host)."""
    settled = threading.Event()
    final = (grpc.ChannelConnectivity.READY, grpc.ChannelConnectivity.TRANSIENT_FAILURE,
             grpc.ChannelConnectivity.SHUTDOWN)

    def watch(state: grpc.ChannelConnectivity) -> None:
        if state in final:
            settled.set()

    channel.subscribe(watch, try_to_connect=True)
    try:
        return settled.wait(timeout_s)
    finally:
        channel.unsubscribe(watch)


def profile_once(address: Address, request: profiler_service_pb2.ProfileRequest, timeout_s: float,
                 connect_timeout_s: float) -> Attempt:
    with grpc.insecure_channel(address.grpc_target, options=CHANNEL_OPTIONS) as channel:
        if not _wait_connectable(channel, connect_timeout_s):
            return Attempt("CONNECT_TIMEOUT", f"no answer within {connect_timeout_s:g} s")
        call = channel.unary_unary(
            PROFILE_METHOD,
            request_serializer=profiler_service_pb2.ProfileRequest.SerializeToString,
            response_deserializer=profiler_service_pb2.ProfileResponse.FromString,
        )
        try:
            response = call(request, timeout=timeout_s, wait_for_ready=False)
        except grpc.RpcError as e:
            code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
            details = e.details() if hasattr(e, "details") else str(e)
            return Attempt(code.name, details or code.name)
    if response.empty_trace:
        return Attempt("EMPTY_TRACE", "the server collected no events")
    return Attempt("OK", "")
