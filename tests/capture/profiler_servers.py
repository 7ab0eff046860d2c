"""Real profiler servers for capture tests: TensorFlow (or JAX) programs in subprocesses.

Each runs in its own process group, is polled for readiness with a bounded timeout, and is
always killed at teardown. ``private_mount`` starts the program in a mount namespace where
a tmpfs hides the given folder: the server then writes "our" logdir path on a disk we cannot
see, exactly like a profiler server on another machine without shared storage.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from tests.servers import free_port

HERE = Path(__file__).resolve().parent
READY_TIMEOUT_S = 180.0  # importing TensorFlow takes 5-10 s alone; slower on a busy 2-core box
# A capture window can miss the training ops when the machine is busy (the training process got
# no CPU during those few hundred ms): capture again, each window twice as long, at most this often.
CAPTURE_ATTEMPTS = 4

T = TypeVar("T")


def capture_until(capture: Callable[[int], T], has_training: Callable[[T], bool], attempt_limit: int = CAPTURE_ATTEMPTS
                  ) -> tuple[T, int]:
    """Runs ``capture(attempt)`` (attempt 0, 1, ...) until ``has_training`` accepts its result,
    at most ``attempt_limit`` times; returns the last result and the attempts used. The caller
    asserts on that result, so a window without training still fails, with its details."""
    result = capture(0)
    attempt = 1
    while attempt < attempt_limit and not has_training(result):
        result = capture(attempt)
        attempt += 1
    return result, attempt


@dataclass
class ProfilerServer:
    address: str  # localhost:PORT
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def view_of(self, path: Path) -> Path:
        """``path`` as the server process sees it (differs under ``private_mount``)."""
        return Path(f"/proc/{self.process.pid}/root") / path.relative_to("/")


def mount_namespace_cmd(hidden: Path) -> list[str] | None:
    """A command prefix that runs a program with a private tmpfs over ``hidden``, or None
    when this machine does not allow it (not root, no unshare)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    base = [unshare, "--mount", "--propagation", "private"] if os.geteuid() == 0 else \
        [unshare, "--user", "--map-root-user", "--mount", "--propagation", "private"]
    probe = subprocess.run([*base, "sh", "-c", f"mount -t tmpfs tbprof-remote '{hidden}'"],
                           capture_output=True, timeout=30)
    if probe.returncode != 0:
        return None
    return [*base, "sh", "-c", f"mount -t tmpfs tbprof-remote '{hidden}' && exec \"$@\"", "sh"]


@contextmanager
def profiler_server(script: str, log_path: Path, extra_args: tuple[str, ...] = (),
                    prefix: list[str] | None = None) -> Iterator[ProfilerServer]:
    port = free_port()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
    cmd = [*(prefix or []), sys.executable, str(HERE / script), str(port), *extra_args]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        server = ProfilerServer(f"localhost:{port}", port, proc, log_path)
        try:
            deadline = time.monotonic() + READY_TIMEOUT_S
            while f"READY {port}" not in server.log():
                if proc.poll() is not None:
                    raise RuntimeError(f"profiler server exited with {proc.returncode}:\n{server.log()[-3000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"profiler server not ready after {READY_TIMEOUT_S} s:\n{server.log()[-3000:]}")
                time.sleep(0.2)
            yield server
        finally:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                    proc.wait(timeout=10)
                    break
                except ProcessLookupError:
                    break
                except subprocess.TimeoutExpired:
                    continue
