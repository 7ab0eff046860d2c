"""``POST capture``: trace running profiler servers into a new run of the logdir.

Body (JSON): ``{"addresses": "host:port[,host:port]", "duration_ms": 1000, "host_tracer_level": 2,
"device_tracer_level": 1, "python_tracer_level": 0, "delay_ms": 0, "retries": 3}``.
Answers 200 when every address was captured; 502 when none was (the body still lists
every address); 200 with ``ok: false`` when some were. Refusals before connecting:
400 bad input, 413 body over 64 KiB, 415 not JSON, 403 capture disabled or logdir not writable,
409 a capture of that address is running.
"""

from __future__ import annotations

from werkzeug.wrappers import Request, Response

from tbprof.capture.addresses import AddressError, parse_addresses
from tbprof.capture.session import CaptureRefused, capture, options_from, report_json, run_for_session
from tbprof.http import params, responses
from tbprof.http.context import AppContext

MAX_BODY_BYTES = 64 * 1024
FIELDS = ("addresses", "duration_ms", "host_tracer_level", "device_tracer_level", "python_tracer_level", "delay_ms",
          "retries")
DISABLED_MESSAGE = ("Capture Profile is turned off on this server (tbprof serve --no-capture, TensorBoard "
                    "--tbprof_no_capture or TBPROF_NO_CAPTURE=1; or the server listens on a non-loopback "
                    "address without tbprof serve --enable-capture / TensorBoard --tbprof_enable_capture), "
                    "so it opens no connections to profiler servers.")


def capture_route(ctx: AppContext, request: Request) -> Response:
    if not ctx.capture_enabled:
        raise CaptureRefused("capture_disabled", DISABLED_MESSAGE)
    body = params.json_body(request, MAX_BODY_BYTES, FIELDS, "the capture request")
    try:
        addresses = parse_addresses(body.get("addresses", ""))
    except AddressError as e:
        raise CaptureRefused("bad_address", str(e)) from None
    report = capture(ctx.profiles.logdir, addresses, options_from(body))
    if report.any_ok:
        report.run = run_for_session(ctx.profiles.index.runs(fresh=True), report.session_dir)
    out = report_json(report)
    if report.any_ok:
        return responses.json_response(request, out)
    return responses.error_response(request, "capture_failed", out["message"], **out)
