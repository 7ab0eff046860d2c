"""One capture: every address traced concurrently into one new session of the logdir.

Each profiler server writes ``<logdir>/plugins/profile/<session>/<host>.xplane.pb`` on its
own filesystem. Only when the server shares this machine's storage does that file land in
our logdir; otherwise the data sits on the remote machine (the confusion behind XProf issue
#905), and we say so instead of reporting success.
"""

from __future__ import annotations

import errno
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tbprof.analyses.tool import SCHEMA_VERSION
from tbprof.capture import client
from tbprof.capture.addresses import Address, host_names
from tbprof.capture.client import CaptureOptions
from tbprof.errors import TbprofError
from tbprof.fs import Location, UrlPath
from tbprof.service.logdir import Run

log = logging.getLogger("tbprof")

MAX_DURATION_MS = 10 * 60 * 1000
MAX_DELAY_MS = 10 * 60 * 1000
MAX_RETRIES = 10
LEVEL_RANGES = {"host_tracer_level": (0, 3), "device_tracer_level": (0, 1), "python_tracer_level": (0, 1)}
CONNECT_TIMEOUT_S = 10.0
# Network filesystems may show a file written by another client a little late.
FILE_APPEAR_S = 3.0
PROFILE_DIR = ("plugins", "profile")
XPLANE_SUFFIX = ".xplane.pb"


class CaptureRefused(TbprofError):
    """A capture refused before any connection is made, by its ``kind`` (``bad_option``,
    ``busy``, ``logdir_read_only``, ...; the HTTP edge's error table gives each its status)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _int_field(body: Mapping[str, Any], name: str, default: int, lo: int, hi: int) -> int:
    value = body.get(name, default)
    if value is None:
        return default
    # JSON numbers only; true/false are ints to Python but not numbers to the user.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise CaptureRefused("bad_option", f"{name} must be a whole number, not {value!r}")
    value = int(value)
    if not lo <= value <= hi:
        raise CaptureRefused("bad_option", f"{name}={value} is out of range [{lo}, {hi}]")
    return value


def options_from(body: Mapping[str, Any]) -> CaptureOptions:
    """Validated options from a JSON body or CLI namespace dict (missing keys take defaults)."""
    d = CaptureOptions()
    duration = body.get("duration_ms", d.duration_ms)
    if isinstance(duration, (int, float)) and not isinstance(duration, bool) and duration <= 0:
        raise CaptureRefused("bad_option", f"duration_ms must be positive, not {duration}")
    levels = {name: _int_field(body, name, getattr(d, name), lo, hi) for name, (lo, hi) in LEVEL_RANGES.items()}
    return CaptureOptions(
        duration_ms=_int_field(body, "duration_ms", d.duration_ms, 1, MAX_DURATION_MS),
        **levels,
        delay_ms=_int_field(body, "delay_ms", d.delay_ms, 0, MAX_DELAY_MS),
        retries=_int_field(body, "retries", d.retries, 0, MAX_RETRIES),
    )


@dataclass
class HostResult:
    address: str
    host: str  # the file stem the server was asked to use
    ok: bool
    kind: str  # "ok", "could_not_connect" (every failure to reach a profiler), "empty_trace", "remote_disk",
    #            "remote_write"
    message: str
    path: str  # where the server writes (on its own machine)
    attempts: int  # made, or for a failure the most that were allowed (failures all read alike)


@dataclass
class CaptureReport:
    session: str
    logdir: str
    session_dir: str
    options: CaptureOptions
    results: list[HostResult] = field(default_factory=list)
    run: str | None = None  # set by the caller once the run index has the new session

    @property
    def ok(self) -> bool:
        return bool(self.results) and all(r.ok for r in self.results)

    @property
    def any_ok(self) -> bool:
        return any(r.ok for r in self.results)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "session": self.session, "run": self.run, "logdir": self.logdir,
                "session_dir": self.session_dir, "options": asdict(self.options),
                "results": [asdict(r) for r in self.results]}


# --- one capture per server at a time (per process) ------------------------------------------
_busy: set[str] = set()
_sessions_issued: set[str] = set()
_lock = threading.Lock()


@contextmanager
def claim(addresses: list[Address]) -> Iterator[None]:
    """Marks every address busy for the capture, or refuses (409) naming the busy ones: two
    sessions on one server fail there anyway ("another profiling session active")."""
    keys = [a.key for a in addresses]
    with _lock:
        taken = [k for k in keys if k in _busy]
        if taken:
            raise CaptureRefused("busy", f"a capture of {', '.join(taken)} is already running; "
                                              "wait for it to finish")
        _busy.update(keys)
    try:
        yield
    finally:
        with _lock:
            _busy.difference_update(keys)


def busy_addresses() -> list[str]:
    """Addresses being captured right now in this process."""
    with _lock:
        return sorted(_busy)


# --- the logdir side ----------------------------------------------------------------------------
def check_writable(logdir: Location) -> Location:
    """The repository root ``<logdir>/plugins/profile``, after proving we can write there.

    Nothing is left behind: a probe directory is made in the deepest existing folder and
    removed, and the server creates the session folder itself (as its own user). A URL logdir
    is written by the profiler server with ITS credentials, which we cannot probe from here:
    whether it could write is told after the capture (``capture_one``).
    """
    if isinstance(logdir, UrlPath):
        return logdir / "/".join(PROFILE_DIR)
    if not logdir.is_dir():
        raise CaptureRefused("no_logdir", f"cannot capture: the logdir {logdir} is not a directory here")
    root = logdir.joinpath(*PROFILE_DIR)
    existing = root
    while not existing.is_dir():
        if existing.exists():
            raise CaptureRefused("logdir_read_only", f"cannot capture into {logdir}: {existing} is a file, "
                                                           "not a folder")
        existing = existing.parent
    try:
        probe = tempfile.mkdtemp(prefix=".tbprof-write-probe-", dir=existing)
        os.rmdir(probe)
    except OSError as e:
        why = "it is on a read-only filesystem" if e.errno == errno.EROFS else (e.strerror or str(e))
        raise CaptureRefused("logdir_read_only",
                             f"cannot capture into {logdir}: {existing} is not writable ({why}). A capture "
                             "writes a new session under <logdir>/plugins/profile/; serve a writable "
                             "logdir to capture.") from None
    return root


def new_session_id(root: Location, now: Callable[[], float] = time.time) -> str:
    """A timestamp like TensorFlow's (``2026_11_26_00_33_56``, local time), made unique."""
    base = time.strftime("%Y_%m_%d_%H_%M_%S", time.localtime(now()))
    with _lock:
        session, n = base, 2
        while session in _sessions_issued or (root / session).exists():
            session, n = f"{base}_{n}", n + 1
        _sessions_issued.add(session)
    return session


def _wait_for_file(path: Location, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while True:
        if path.probe_file() if isinstance(path, UrlPath) else path.is_file():
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.1)


RETRY_CODES = {"UNAVAILABLE", "EMPTY_TRACE"}


def _backoff_s(attempt: int) -> float:
    return min(0.5 * 2 ** attempt, 4.0)


def failure_floor_s(retries: int, connect_timeout_s: float) -> float:
    """The time before any failed address is answered: as long as a silent
    (filtered) host takes to give up, plus the backoffs of a refused one's retries. A closed
    port, a filtered one and another service then answer alike, after the same time."""
    return connect_timeout_s + sum(_backoff_s(i) for i in range(retries))


def repository_root_for(address: Address, root: Location) -> str:
    """The ``repository_root`` sent to a server: where it writes the profile.

    A server on this machine (a loopback address) or any server writing to a URL logdir
    needs the full root. Any other server gets ``plugins/profile``, relative to its own working
    directory: our absolute logdir path says nothing it needs and names this machine's
    folders to whatever listens there.
    """
    if isinstance(root, UrlPath) or address.loopback:
        return str(root)
    return "/".join(PROFILE_DIR)


def capture_one(address: Address, host: str, options: CaptureOptions, root: Location, session: str, logdir: Location,
                connect_timeout_s: float | None = None) -> HostResult:
    """Traces one server with retries on UNAVAILABLE (not listening yet, restarting) and on
    an empty trace (the program was between steps), as TensorFlow's own client does."""
    if connect_timeout_s is None:
        connect_timeout_s = CONNECT_TIMEOUT_S  # read now: tests shorten it
    sent_root = repository_root_for(address, root)
    path: Location = root / session / f"{host}{XPLANE_SUFFIX}"
    started = time.monotonic()
    attempts = 0
    attempt = client.Attempt("UNAVAILABLE", "not attempted")
    for i in range(1 + options.retries):
        request = client.build_request(options, sent_root, session, host)
        attempt = client.profile_once(address, request, client.deadline_s(options), connect_timeout_s)
        attempts += 1
        if attempt.code not in RETRY_CODES or i == options.retries:
            break
        time.sleep(_backoff_s(i))

    def result(ok: bool, kind: str, message: str) -> HostResult:
        return HostResult(address.text, host, ok, kind, message, str(path), attempts)

    tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
    if attempt.code == "OK":
        if _wait_for_file(path, FILE_APPEAR_S):
            return result(True, "ok", f"captured {options.duration_ms} ms into {path}")
        if sent_root != str(root):
            return result(False, "remote_disk", (
                f"the profiler server at {address.text} captured the profile, on ITS OWN machine: it is not "
                f"a loopback address, so tbprof does not send it this logdir's path, and the server wrote "
                f"{sent_root}/{session}/{host}{XPLANE_SUFFIX} below its working directory. Copy that file "
                f"into {path.parent} here, or capture into a URL logdir (gs://, s3://) both machines reach."))
        if isinstance(path, UrlPath):
            return result(False, "remote_write", (
                f"the profiler server at {address.text} captured the profile, but {path} does not exist: the "
                f"server could not write to that URL. The server writes the file itself, with its own "
                f"credentials and filesystem support (TensorFlow's tf.io.gfile for {path.listing.protocol}://): "
                "give it write access to the bucket, or serve a logdir both can reach."))
        return result(False, "remote_disk", (
            f"the profiler server at {address.text} captured the profile, but it is not in this logdir: the "
            f"server wrote it to {path} on ITS OWN machine, and {path.parent} here has no such file. The "
            "server probably runs on another machine that does not share this logdir's storage. Copy the "
            f"file from that machine into {path.parent} here, or serve a logdir both machines share."))
    if attempt.code == "EMPTY_TRACE":
        _remove_empty(path)
        return result(False, "empty_trace", (
            f"the profiler server at {address.text} answered but collected no events in {options.duration_ms} ms "
            f"({tries}): was the program running steps? Try a longer duration or higher tracer levels."))
    # Every other failure answers alike: one kind, one message, the most attempts
    # allowed, and no sooner than failure_floor_s. Refused, silent (filtered), another service
    # (UNIMPLEMENTED, UNAUTHENTICATED...) or a server's own error: telling them apart, or timing
    # them, would make capture a port scanner for whoever can reach this page. gRPC's code and
    # details go to the debug log.
    log.debug("tbprof capture %s: %s %s", address.text, attempt.code, attempt.message)
    time.sleep(max(0.0, started + failure_floor_s(options.retries, connect_timeout_s) - time.monotonic()))
    attempts = 1 + options.retries
    hint = (f" If it did answer: it writes {path} itself, so it needs write access to "
            f"{path.listing.protocol}:// URLs and credentials for that bucket.") if isinstance(path, UrlPath) else ""
    return result(False, "could_not_connect", (
        f"could not capture from a profiler server at {address.text} (up to {attempts} attempt"
        f"{'s' if attempts > 1 else ''}): nothing "
        "there answered as a profiler server. Is the program running, and did it start the server "
        "(tf.profiler.experimental.server.start(port) or jax.profiler.start_server(port)) on that port?" + hint))


def _remove_empty(path: Location) -> None:
    """An event-less file would show up as a run with nothing in it; the server made it for us."""
    if isinstance(path, UrlPath):
        return  # not ours to delete in a bucket; an empty host file is shown as unreadable
    try:
        path.unlink(missing_ok=True)
        path.parent.rmdir()
    except OSError:
        pass


def capture(logdir: Location, addresses: list[Address], options: CaptureOptions,
            connect_timeout_s: float | None = None) -> CaptureReport:
    """Traces every address at once into one new session; never raises for a failing server
    (that is a per-address result), only ``CaptureRefused`` before any connection is made."""
    if not addresses:
        raise CaptureRefused("bad_address", "no address given")
    logdir = logdir.resolve()
    root = check_writable(logdir)
    with claim(addresses):
        session = new_session_id(root)
        report = CaptureReport(session=session, logdir=str(logdir), session_dir=str(root / session),
                               options=options)
        hosts = host_names(addresses)
        with ThreadPoolExecutor(max_workers=len(addresses), thread_name_prefix="tbprof-capture") as pool:
            futures = [pool.submit(capture_one, a, h, options, root, session, logdir, connect_timeout_s)
                       for a, h in zip(addresses, hosts, strict=False)]
            report.results = [f.result() for f in futures]
    return report


def summary_message(report: CaptureReport) -> str:
    """One line for the whole capture (the per-address messages carry the details)."""
    good = sum(r.ok for r in report.results)
    total = len(report.results)
    if good == total:
        return f"captured {total} host{'s' if total > 1 else ''} into run {report.run or report.session}"
    if good:
        return f"captured {good} of {total} hosts into run {report.run or report.session}; the others failed"
    if total == 1:
        return report.results[0].message
    return f"no host was captured ({total} failed)"


def report_json(report: CaptureReport) -> dict[str, Any]:
    """The answer of ``POST capture`` and ``tbprof capture --json`` (docs/api.md)."""
    return {"schema_version": SCHEMA_VERSION, **report.to_json(), "message": summary_message(report)}


def run_for_session(runs: dict[str, Run], session_dir: str) -> str | None:
    """The name the run index gives the new session (``<session>`` at the logdir's root)."""
    for run in runs.values():
        if run.kind == "xspace" and str(run.path.resolve()) in (session_dir, str(Path(session_dir).resolve())):
            return run.name
    return None
