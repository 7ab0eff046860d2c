"""``POST capture``: trace running profiler servers into a new run of the logdir.

Body (JSON): ``{"addresses": "host:port[,host:port]", "duration_ms": 1000, "host_tracer_level": 2,
"device_tracer_level": 1, "python_tracer_level": 0, "delay_ms": 0, "retries": 3}``.
Answers 200 when every address was captured; 502 when none was (the body still lists
every address); 200 with ``ok: false`` when some were. Refusals before connecting:
400 bad input, 413 body over 64 KiB, 415 not JSON, 403 capture disabled or logdir not writable,
409 a capture of that address is running.
"""

from __future__ import annotations

import json
from typing import Any

from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Request, Response

from tbprof.capture.addresses import AddressError, parse_addresses
from tbprof.capture.session import CaptureRefused, capture, options_from, report_json, run_for_session
from tbprof.http import responses
from tbprof.http.context import AppContext

MAX_BODY_BYTES = 64 * 1024
DISABLED_MESSAGE = ("Capture Profile is turned off on this server (tbprof serve --no-capture, TensorBoard "
                    "--tbprof_no_capture or TBPROF_NO_CAPTURE=1; or the server listens on a non-loopback "
                    "address without tbprof serve --enable-capture / TensorBoard --tbprof_enable_capture), "
                    "so it opens no connections to profiler servers.")


def _body(request: Request) -> dict[str, Any]:
    # A JSON content type cannot be sent cross-site without a CORS preflight (which we never
    # grant), so a web page the user visits cannot make this server open connections.
    if request.mimetype != "application/json":
        raise CaptureRefused(415, "bad_request", "send the capture request as application/json")
    too_large = CaptureRefused(413, "too_large", f"request body larger than {MAX_BODY_BYTES} bytes")
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise too_large
    # Read at most the limit: werkzeug's stream stops a chunked body there (otherwise a large
    # chunked body is read whole first, costing memory beyond its size:
    # bench/measurements.md#conversion-memory).
    request.max_content_length = MAX_BODY_BYTES
    try:
        raw = request.stream.read(MAX_BODY_BYTES)
        more = request.stream.read(1)  # the stream raises (or yields a byte) past the limit
    except RequestEntityTooLarge:
        raise too_large from None
    if more:
        raise too_large
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise CaptureRefused(400, "bad_request", "the request body must be a JSON object") from None
    if not isinstance(body, dict):
        raise CaptureRefused(400, "bad_request", "the request body must be a JSON object")
    unknown = sorted(set(body) - {"addresses", "duration_ms", "host_tracer_level", "device_tracer_level",
                                  "python_tracer_level", "delay_ms", "retries"})
    if unknown:
        raise CaptureRefused(400, "bad_request", f"unknown field(s) {unknown}")
    return body


def capture_route(ctx: AppContext, request: Request) -> Response:
    try:
        if not ctx.capture_enabled:
            raise CaptureRefused(403, "capture_disabled", DISABLED_MESSAGE)
        body = _body(request)
        try:
            addresses = parse_addresses(body.get("addresses", ""))
        except AddressError as e:
            raise CaptureRefused(400, "bad_address", str(e)) from None
        options = options_from(body)
        report = capture(ctx.profiles.logdir, addresses, options)
    except CaptureRefused as e:
        return responses.error_response(request, e.status, str(e), kind=e.kind)
    if report.any_ok:
        report.run = run_for_session(ctx.profiles.runs(fresh=True), report.session_dir)
    out = report_json(report)
    if report.any_ok:
        return responses.json_response(request, out)
    return responses.json_response(request, {**out, "error": out["message"], "status": 502}, status=502)
