"""Kineto (PyTorch profiler) traces written event by event from the fields libkineto documents
and writes (``ChromeTraceLogger``: ``ph``/``cat``/``name``/``pid``/``tid``/``ts``/``dur`` in µs,
``args.correlation``/``stream``/``device``/``External id``; ``process_name`` and
``process_labels`` metadata; the top-level ``deviceProperties`` and ``distributedInfo``), for
the dialects no real trace in the repository has. Each test derives its expected numbers from
the events it lists here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store.tables import ProfileStore

Event = dict[str, Any]
HOST_PID = 100
HOST_TID = 100


def x(cat: str, name: str, ts_us: float, dur_us: float, pid: int = HOST_PID, tid: int = HOST_TID,
      **args: Any) -> Event:
    """A complete (``ph: X``) event."""
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts_us, "dur": dur_us, "args": args}


def kernel(name: str, ts_us: float, dur_us: float, correlation: int, stream: int = 7, device: int = 0,
           cat: str = "kernel") -> Event:
    """Device work on GPU ``device``'s process (Kineto's pid of a GPU is its index), its stream as tid."""
    return x(cat, name, ts_us, dur_us, pid=device, tid=stream, device=device, context=1, stream=stream,
             correlation=correlation)


def launch(name: str, ts_us: float, dur_us: float, correlation: int, cat: str = "cuda_runtime") -> Event:
    return x(cat, name, ts_us, dur_us, correlation=correlation)


def process(pid: int, name: str, labels: str) -> list[Event]:
    return [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}},
            {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": labels}}]


def trace(events: list[Event], device_properties: list[dict[str, Any]] | None = None, rank: int = 0,
          gpus: int = 1) -> dict[str, Any]:
    meta = process(HOST_PID, "python3", "CPU")
    for d in range(gpus):
        meta += process(d, "python3", f"GPU {d}")
    doc: dict[str, Any] = {"schemaVersion": 1, "distributedInfo": {"rank": rank, "world_size": 1},
                           "traceEvents": events + meta}
    if device_properties is not None:
        doc["deviceProperties"] = device_properties
    return doc


def write(tmp_path: Path, doc: dict[str, Any], name: str = "fixture.pt.trace.json") -> ProfileStore:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return read_chrome_trace(path)
