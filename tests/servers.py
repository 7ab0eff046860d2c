"""Starting real servers for tests: TensorBoard with the installed plugin, and `tbprof serve`.

Both run as subprocesses on a free loopback port; readiness is polled with a bounded timeout
and the process group is always killed at teardown.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PLUGIN_SRC = REPO / "plugin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    base_url: str  # e.g. http://127.0.0.1:1234
    api: str  # base of the tbprof routes, e.g. http://127.0.0.1:1234/data/plugin/tbprof/
    process: subprocess.Popen[bytes]
    log_path: Path

    def get(self, route: str, timeout_s: float = 120) -> tuple[int, dict[str, str], bytes]:
        try:
            with urllib.request.urlopen(self.api + route, timeout=timeout_s) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def get_json(self, route: str) -> tuple[int, dict]:
        status, _, body = self.get(route)
        return status, json.loads(body)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _env(cache_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    # The checkout's code, whether or not `pip install -e .` points elsewhere.
    env["PYTHONPATH"] = str(PLUGIN_SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env["TBPROF_CACHE_DIR"] = str(cache_dir)
    env.pop("TBPROF_NO_CAPTURE", None)
    # Servers convert in their own process unless a test asks for workers (--workers N): a
    # default pool (one worker per core) per test server would only add processes to the suite.
    env.setdefault("TBPROF_WORKERS", "1")
    return env


# free_port() closes the socket it found free; another process (a parallel test run) can bind
# that port before the server does. The server then exits at once: start again on another port.
BIND_ATTEMPTS = 3
PORT_TAKEN_TEXTS = ("already in use", "[Errno 98]")  # waitress (OSError), TensorBoard


class PortTaken(RuntimeError):
    """The server could not bind the port free_port() chose: another process took it first."""


def _stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _wait_ready(server: Server, ready_url: str, timeout_s: float) -> None:
    proc = server.process
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            log = server.log()
            if any(t in log for t in PORT_TAKEN_TEXTS):
                raise PortTaken(log)
            raise RuntimeError(f"server exited with {proc.returncode}:\n{log}")
        try:
            with urllib.request.urlopen(ready_url, timeout=5) as r:
                # Ours only while it runs: a server that lost its port exits, and what answered
                # was the process that took the port.
                if r.status == 200 and proc.poll() is None:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"server not ready after {timeout_s} s:\n{server.log()}")
        time.sleep(0.25)


@contextmanager
def _run(cmd_for: Callable[[int], list[str]], ready_path: str, cache_dir: Path, log_path: Path,
         timeout_s: float = 90, extra_env: dict[str, str] | None = None,
         soft_fd_limit: int | None = None) -> Iterator[Server]:
    """Starts ``cmd_for(port)`` on a free loopback port (another one when that port is taken
    meanwhile) and yields it once ``ready_path`` answers 200."""
    env = _env(cache_dir)
    env.update(extra_env or {})

    def limit_fds() -> None:  # in the child only: the test process keeps its own limit
        if soft_fd_limit is not None:
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft_fd_limit, hard), hard))

    for attempt in range(BIND_ATTEMPTS):
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(cmd_for(port), stdout=log, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True,
                                    preexec_fn=limit_fds if soft_fd_limit is not None else None)
        server = Server(base, base + "/data/plugin/tbprof/", proc, log_path)
        try:
            _wait_ready(server, base + ready_path, timeout_s)
        except PortTaken:
            _stop(proc)
            if attempt + 1 == BIND_ATTEMPTS:
                raise
            continue
        except BaseException:
            _stop(proc)
            raise
        break
    try:
        yield server
    finally:
        _stop(proc)


@contextmanager
def tensorboard(logdir: Path | str, cache_dir: Path, log_path: Path, extra_args: tuple[str, ...] = (),
                extra_env: dict[str, str] | None = None, without_tensorflow: bool = False) -> Iterator[Server]:
    """A real TensorBoard process; ``without_tensorflow``: as on a machine where TensorFlow is not
    installed (TensorBoard then reads logdirs through its own file layer: ``s3://`` with boto3,
    other URL schemes with fsspec), which the test venv can only show by hiding TensorFlow."""
    launcher = ["-m", "tensorboard.main"]
    if without_tensorflow:
        launcher = ["-c", "import sys; sys.modules['tensorflow'] = None; sys.argv[0] = 'tensorboard'; "
                          "from tensorboard.main import run_main; run_main()"]

    def cmd(port: int) -> list[str]:
        return [sys.executable, *launcher, "--logdir", str(logdir), "--port", str(port),
                "--host", "127.0.0.1", "--load_fast", "false", *extra_args]

    with _run(cmd, "/data/plugins_listing", cache_dir, log_path, timeout_s=120, extra_env=extra_env) as s:
        yield s


@contextmanager
def tbprof_serve(logdir: Path | str, cache_dir: Path, log_path: Path, extra_args: tuple[str, ...] = (),
                 extra_env: dict[str, str] | None = None, soft_fd_limit: int | None = None,
                 launcher: tuple[str, ...] = ("-m", "tbprof.cli")) -> Iterator[Server]:
    """``soft_fd_limit``: the server process starts under this soft descriptor limit (ulimit -Sn);
    ``launcher``: what python runs (a script that takes the ``tbprof`` command's arguments)."""

    def cmd(port: int) -> list[str]:
        return [sys.executable, *launcher, "serve", "--logdir", str(logdir), "--port", str(port), *extra_args]

    with _run(cmd, "/data/plugin/tbprof/settings", cache_dir, log_path, extra_env=extra_env,
              soft_fd_limit=soft_fd_limit) as s:
        yield s
