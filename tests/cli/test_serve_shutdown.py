"""Stopping ``tbprof serve`` (#35): SIGINT (Ctrl-C) or SIGTERM (a service manager, ``kill``) ends
the server and every process it started: the pool's workers, the fork server that starts them
and multiprocessing's resource tracker. A review found 8 such processes left running.

The signal goes to the server's process alone (``kill PID``, as a service manager sends it),
not to its process group: the group would also reach the children and hide what the server
itself leaves behind.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests import servers

pytestmark = pytest.mark.slow

WORKERS = 2


def _children_of() -> dict[int, list[int]]:
    """Every process's children, from /proc (ppid is the 4th field of /proc/PID/stat, after the
    command name in parentheses, which may itself hold spaces)."""
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out.setdefault(int(fields[1]), []).append(int(entry))
    return out


def _descendants(pid: int) -> set[int]:
    children = _children_of()
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    """Running and not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_stopping_serve_leaves_no_child_process(sample_profiles: Path, tmp_path: Path, sig: int) -> None:
    log = tmp_path / "serve.log"
    with servers.tbprof_serve(sample_profiles, tmp_path / "cache", log, ("--workers", str(WORKERS)),
                              extra_env={"TBPROF_WORKERS": str(WORKERS)}) as s:
        # The pool starts with the server: a fork server (or a forked pool) and its workers.
        deadline = time.monotonic() + 60
        while len(_descendants(s.process.pid)) < WORKERS + 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        started = _descendants(s.process.pid)
        assert len(started) >= WORKERS + 1, s.log()
        # A conversion through the pool, so the workers have done work when the signal comes.
        status, _ = s.get_json("runs")
        assert status == 200
        started |= _descendants(s.process.pid)
        os.kill(s.process.pid, sig)
        s.process.wait(timeout=30)
        deadline = time.monotonic() + 15
        while any(_alive(p) for p in started) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = sorted(p for p in started if _alive(p))
        assert left == [], f"still running after {signal.Signals(sig).name}: {left}\n{s.log()}"
        # Stopped on purpose: no traceback in the log.
        assert "Traceback" not in s.log(), s.log()
