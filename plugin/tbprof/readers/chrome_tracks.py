"""A Chrome trace's tracks: a line per (pid, tid) or per (pid, counter), numbered as they first
appear, named by ``process_name`` / ``thread_name`` metadata and ordered by
``process_sort_index`` / ``thread_sort_index`` (by pid and tid where a trace gives no order); a
plane per pid. What the plane builder needs of them: which lines form each plane, in display
order, and each plane's head (id, name, lines' ids and names, plane stats)."""

from __future__ import annotations

import math
import zlib
from collections import defaultdict
from collections.abc import Hashable
from typing import Any

import numpy as np

from tbprof.readers.chrome_tokens import hashable
from tbprof.readers.plane_builder import PlaneHead
from tbprof.store.markers import COUNTER_LINES_STAT

LineKey = tuple[Hashable, Hashable, str]  # (pid, tid | counter name, "thread" | "counter")


class Tracks:
    """Lines by key, and the names and sort indices the trace's metadata events give."""

    def __init__(self) -> None:
        self.line_keys: dict[LineKey, int] = {}  # key -> global line id
        self.process_names: dict[Hashable, str] = {}
        self.process_labels: dict[Hashable, str] = {}
        self.process_sort: dict[Hashable, float] = {}
        self.thread_names: dict[tuple[Hashable, Hashable], str] = {}
        self.thread_sort: dict[tuple[Hashable, Hashable], float] = {}
        self.counter_lines: set[int] = set()

    def line(self, pid: Any, tid: Any, kind: str = "thread") -> int:
        key = (hashable(pid), hashable(tid), kind)
        found = self.line_keys.get(key)
        if found is None:
            found = self.line_keys[key] = len(self.line_keys)
        return found

    def planes(self) -> tuple[list[Hashable], list[list[int]]]:
        """The pids in display order and, per pid, its global lines in display order."""
        keys = list(self.line_keys)  # index == global line id
        pids = sorted({k[0] for k in keys}, key=self._process_order)
        plane_lines: list[list[int]] = []
        for pid in pids:
            mine = [g for g, k in enumerate(keys) if k[0] == pid]
            mine.sort(key=lambda g: self._line_order(keys[g]))
            plane_lines.append(mine)
        return pids, plane_lines

    def heads(self, pids: list[Hashable], plane_lines: list[list[int]]) -> list[PlaneHead]:
        """Each plane's head: process names with labels ("python3 (GPU 0)"), made unique with the
        pid when needed; its lines' ids and names; the pid, labels and counter lines as stats."""
        keys = list(self.line_keys)
        names = []
        for pid in pids:
            name = self.process_names.get(pid) or (str(pid) if isinstance(pid, str) and pid else f"Process {pid}")
            label = self.process_labels.get(pid)
            names.append(f"{name} ({label})" if label else name)
        seen: dict[str, int] = defaultdict(int)
        for n in names:
            seen[n] += 1
        heads = []
        for pid, name, mine in zip(pids, names, plane_lines, strict=True):
            line_keys = [keys[g] for g in mine]
            counter_local = [i for i, g in enumerate(mine) if g in self.counter_lines]
            line_names = [self._line_name(k) for k in line_keys]
            plane_stats: dict[str, Any] = {"pid": pid if isinstance(pid, (int, str)) else str(pid)}
            if pid in self.process_labels:
                plane_stats["process_labels"] = self.process_labels[pid]
            if counter_local:
                plane_stats[COUNTER_LINES_STAT] = counter_local
            heads.append(PlaneHead(
                id=int_id(pid), name=f"{name} (pid {pid})" if seen[name] > 1 else name,
                line_ids=np.array([int_id(k[1]) for k in line_keys], dtype=np.int64), line_names=line_names,
                line_display_names=list(line_names), line_timestamp_ns=np.zeros(len(mine), dtype=np.int64),
                plane_stats=plane_stats))
        return heads

    def _process_order(self, pid: Hashable) -> tuple[float, int, str]:
        sort = self.process_sort.get(pid)
        if sort is None:
            sort = float(pid) if isinstance(pid, int) else math.inf
        return (sort, 0 if isinstance(pid, int) else 1, str(pid))

    def _line_order(self, key: LineKey) -> tuple[int, float, int, str]:
        pid, tid, kind = key
        if kind == "counter":
            return (0, 0.0, 0, str(tid))
        sort = self.thread_sort.get((pid, tid))
        if sort is None:
            sort = float(tid) if isinstance(tid, int) else math.inf
        return (1, sort, 0 if isinstance(tid, int) else 1, str(tid))

    def _line_name(self, key: LineKey) -> str:
        pid, tid, kind = key
        if kind == "counter":
            return str(tid)
        name = self.thread_names.get((pid, tid))
        if name:
            return name
        return str(tid) if isinstance(tid, str) and tid else f"Thread {tid}"


def int_id(value: Hashable) -> int:
    """A pid or tid as an int64 id (a string or an out-of-range number: its CRC-32)."""
    if isinstance(value, int) and -(1 << 63) <= value < (1 << 63):
        return value
    return zlib.crc32(str(value).encode())
