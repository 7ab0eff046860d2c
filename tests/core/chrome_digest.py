"""A *semantic* digest of a Chrome-trace store: equal digests mean the same trace was read.

``chrome_digests.json`` holds the digests that the pure-Python reader (``json.loads`` and a
dict per event, before the compiled scanner ``_core/jsonscan.pyx``) gave for every Chrome
trace of ``demo_logs/`` and for the dialect fixtures below (made with
``python -m tests.core.chrome_digest`` before the switch); ``test_chrome_digests.py`` checks
the current reader against them.

Unlike ``store_digest.py`` (which pins the XSpace reader's bytes), this digest does not depend
on how strings are numbered nor on the order of exact ties (two events of one line with equal
start and duration): per plane its name, id and stats, per line its name and id, per event
(line, start_ps, dur_ps, depth, name text, cat text, its stats sorted as (key text, kind,
decoded value)), then the store's metadata, warnings, origin_ps and span_ps. A ``flow_id`` is a
chain number, so it is replaced by the chain's first member (plane, line, start, dur, name).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tbprof.store import tables
from tbprof.store.markers import FLOW_ID_STAT

DIGESTS = Path(__file__).with_name("chrome_digests.json")
REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "demo_logs"


def demo_files() -> list[Path]:
    """Every Chrome trace of demo_logs/, in a fixed order."""
    return [*sorted((DEMO / "torch_cnn").glob("*.pt.trace.json")),
            *sorted((DEMO / "torch_ddp").glob("*.pt.trace.json")),
            *sorted((DEMO / "tf1_timeline").glob("timeline-*.json")),
            DEMO / "tf1_timeline" / "tfprof_timeline.json_3",
            *sorted((DEMO / "jax_mlp").rglob("*.trace.json.gz")),
            *sorted((DEMO / "jax_2hosts").rglob("*.trace.json.gz"))]


# Dialect fixtures, written from the format's documented fields (the Trace Event Format) and
# from the reader's tests: each one exercises a rule of the reader (B/E matching, counters with
# ids, global instants, object lifetimes, flow binding, every argument kind, odd ids).
FIXTURES: dict[str, Any] = {
    "begin_end": {"traceEvents": [
        {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 0},
        {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "B", "name": "other", "pid": 1, "tid": 2, "ts": 1.5},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 2, "args": {"result": 7}},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 3},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 4},
        {"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 5},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 6},
        {"ph": "B", "name": "b", "pid": 1, "tid": 1, "ts": 6, "args": {"k": "v"}},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 7, "args": {"k": "w", "n": None}},
    ]},
    "unmatched": [
        {"ph": "E", "pid": 1, "tid": 1, "ts": 0},
        {"ph": "B", "name": "never ends", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "X", "name": "negative", "pid": 1, "tid": 1, "ts": 2, "dur": -5},
        {"ph": "X", "name": "fine", "pid": 1, "tid": 1, "ts": 3, "dur": 7},
        {"ph": "X", "name": "no ts", "pid": 1, "tid": 1, "dur": 1},
        {"ph": "X", "name": "text ts", "pid": 1, "tid": 1, "ts": "4", "dur": 1},
        {"ph": "X", "name": "null dur", "pid": 1, "tid": 1, "ts": 4, "dur": None},
        {"ph": "b", "name": "async", "pid": 1, "tid": 1, "ts": 3, "id": 1},
        {"ph": 5, "name": "numeric phase", "pid": 1, "tid": 1, "ts": 3},
        {"name": "no phase", "pid": 1, "tid": 1, "ts": 3},
        {},
        7,
        "text",
    ],
    "metadata": {"displayTimeUnit": "ns", "schemaVersion": 1, "traceEvents": [
        {"ph": "M", "pid": 7, "name": "process_name", "args": {"name": "seven"}},
        {"ph": "M", "pid": 7, "name": "process_labels", "args": {"labels": "GPU 3"}},
        {"ph": "M", "pid": 7, "name": "process_sort_index", "args": {"sort_index": -1}},
        {"ph": "M", "pid": 8, "name": "process_name", "args": {"name": "seven"}},
        {"ph": "M", "pid": 7, "tid": 2, "name": "thread_name", "args": {"name": "second"}},
        {"ph": "M", "pid": 7, "tid": 2, "name": "thread_sort_index", "args": {"sort_index": 0}},
        {"ph": "X", "name": "k", "cat": "kernel", "pid": 7, "tid": 1, "ts": 10.125, "dur": 2},
        {"ph": "X", "name": "k", "cat": "kernel", "pid": 7, "tid": 2, "ts": 10.125, "dur": 2},
        {"ph": "X", "name": "k", "pid": 8, "tid": "t", "ts": 11, "dur": 0},
        {"ph": "X", "name": "s", "pid": "p", "tid": 3.5, "ts": 11, "dur": 1},
    ]},
    "counters_instants": {"traceEvents": [
        {"ph": "C", "name": "mem", "pid": 1, "ts": 0, "args": {"used": 10, "free": 2.5}},
        {"ph": "C", "name": "mem", "pid": 1, "ts": 1, "args": {"used": 12, "free": 0.5}},
        {"ph": "C", "name": "mem", "id": 4, "pid": 1, "ts": 1, "args": {"used": 1}},
        {"ph": "i", "name": "mark", "pid": 1, "tid": 1, "ts": 0.5, "s": "t"},
        {"ph": "I", "name": "global", "pid": 1, "tid": 1, "ts": 0.7, "s": "g", "cat": "c"},
        {"ph": "R", "name": "mark2", "pid": 1, "tid": 1, "ts": 0.9},
    ]},
    "objects": [
        {"ph": "N", "name": "T", "pid": 1, "id": "0x1", "ts": 0},
        {"ph": "O", "name": "T", "pid": 1, "id": "0x1", "ts": 1, "args": {"snapshot": {"shape": [2, 3]}}},
        {"ph": "O", "name": "T", "pid": 1, "id": "0x1", "ts": 2, "args": {"snapshot": {"shape": [4]}}},
        {"ph": "D", "name": "T", "pid": 1, "id": "0x1", "ts": 3},
        {"ph": "O", "name": "U", "pid": 1, "id": 2, "ts": 4, "args": {"v": 1}},
        {"ph": "N", "name": "U", "pid": 1, "id": 2, "ts": 4},
        {"ph": "N", "name": "U", "pid": 1, "id": 2, "ts": 5},
        {"ph": "X", "name": "x", "pid": 1, "tid": 1, "ts": 0, "dur": 9},
    ],
    "flows": {"traceEvents": [
        {"ph": "X", "name": "launch", "pid": 1, "tid": 1, "ts": 0, "dur": 4},
        {"ph": "X", "name": "inner", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
        {"ph": "X", "name": "kernel", "pid": 2, "tid": 7, "ts": 5, "dur": 3},
        {"ph": "X", "name": "later", "pid": 2, "tid": 7, "ts": 9, "dur": 3},
        {"ph": "s", "id": 1, "cat": "ac2g", "pid": 1, "tid": 1, "ts": 1.5},
        {"ph": "f", "id": 1, "cat": "ac2g", "pid": 2, "tid": 7, "ts": 5, "bp": "e"},
        {"ph": "s", "id": "x", "cat": "f2", "pid": 1, "tid": 1, "ts": 0.5},
        {"ph": "t", "id": "x", "cat": "f2", "pid": 1, "tid": 1, "ts": 2},
        {"ph": "f", "id": "x", "cat": "f2", "pid": 2, "tid": 7, "ts": 8.5},
        {"ph": "s", "bind_id": 9, "pid": 1, "tid": 1, "ts": 3},
        {"ph": "f", "bind_id": 9, "pid": 2, "tid": 7, "ts": 20},
        {"ph": "s", "id": 1, "cat": "ac2g", "pid": 3, "tid": 1, "ts": 1},
    ]},
    "args": {"traceEvents": [
        {"ph": "X", "name": "op", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {
            "int": 3, "neg": -4, "big": 18446744073709551615, "huge": 123456789012345678901234567890,
            "min": -9223372036854775808, "float": 2.5, "exp": 1e300, "bool": True, "false": False, "null": None,
            "text": "a\u00e9\u4e2d\U0001f600\"\\\n", "Input Dims": [[1, 2], [], [3]],
            "Input type": ["float", "", "c10::Half"], "grid": [1, 2, 3], "obj": {"b": 1, "a": [1.5, None, True]},
            "dup": 1, "empty": [], "unicode list": ["\u00e9", "\t"]}},
        {"ph": "X", "name": 5, "cat": ["x", 1], "pid": 1, "tid": 1, "ts": 2, "dur": 1, "args": []},
        {"ph": "X", "name": None, "pid": 1, "tid": 1, "ts": 3, "dur": 0.0005, "args": "text"},
        {"ph": "X", "pid": 1, "tid": 1, "ts": 1e-3, "dur": 1e1, "args": {}},
    ]},
    "unterminated": '[{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1},\n',
    "duplicate_keys": '{"traceEvents": [{"ph": "X", "name": "a", "name": "b", "pid": 1, "tid": 1, "ts": 5, '
                      '"ts": 1, "dur": 1, "args": {"k": 1, "j": 2, "k": "last"}}]}',
    "escapes": '[{"ph": "X", "name": "\\u0061\\ud83d\\ude00\\/", "cat": "\\u00e9", "pid": 1, "tid": 1, '
               '"ts": 0, "dur": 1, "args": {"\\u006b": "\\b\\f\\r\\t"}}]',
    "empty_trace": {"traceEvents": [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "p"}}]},
    "kineto_like": {"deviceProperties": [{"id": 0, "name": "GPU", "numSms": 80, "computeMajor": 7,
                                          "computeMinor": 0, "totalGlobalMem": 1024}],
                    "distributedInfo": {"rank": 0}, "traceEvents": [
        {"ph": "M", "pid": 0, "name": "process_labels", "args": {"labels": "GPU 0"}},
        {"ph": "M", "pid": 5, "name": "process_labels", "args": {"labels": "CPU"}},
        {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": 5, "tid": 5, "ts": 1, "dur": 10,
         "args": {"External id": 3}},
        {"ph": "X", "name": "gemm", "cat": "kernel", "pid": 0, "tid": 7, "ts": 4, "dur": 2,
         "args": {"External id": 3, "correlation": 11, "grid": [1, 1, 1]}},
    ]},
}


def fixture_bytes(name: str) -> bytes:
    obj = FIXTURES[name]
    return obj.encode() if isinstance(obj, str) else json.dumps(obj).encode()


def _decoded(store: tables.ProfileStore, kind: int, value: int) -> Any:
    if kind == tables.KIND_STR:
        return store.strings[value]
    if kind == tables.KIND_DOUBLE:
        return float(np.int64(value).view(np.float64))
    return value


def semantic_digest(store: tables.ProfileStore) -> dict[str, Any]:
    """Part name -> short sha256 of its canonical text (see the module docstring)."""
    strings = store.strings
    flow_stat = strings.id(FLOW_ID_STAT)
    planes: list[tuple[tables.Plane, list[tuple[Any, ...]], list[list[tuple[Any, ...]]]]] = []
    chain_first: dict[int, tuple[Any, ...]] = {}
    for p in store.planes:
        cat_stat = strings.id("cat")
        meta_cat: dict[int, str] = {}
        ms = p.meta_stats
        for i in range(len(ms)):
            if int(ms.stat_id[i]) == cat_stat:
                meta_cat[int(ms.owner[i])] = strings[int(ms.value[i])]
        base: list[tuple[Any, ...]] = []
        stats: list[list[tuple[Any, ...]]] = [[] for _ in range(p.n_events)]
        for i in range(len(p.stats)):
            row, sid, kind, value = (int(p.stats.owner[i]), int(p.stats.stat_id[i]), int(p.stats.kind[i]),
                                     int(p.stats.value[i]))
            stats[row].append((sid, kind, value))
        for row in range(p.n_events):
            ident = (p.index, int(p.line_idx[row]), int(p.start_ps[row]), int(p.dur_ps[row]),
                     strings[int(p.name_id[row])])
            base.append((*ident[1:], int(p.depth[row]), meta_cat.get(int(p.meta_idx[row]), "")))
            for sid, _kind, value in stats[row]:
                if sid == flow_stat >= 0:
                    chain_first[value] = min(chain_first.get(value, ident), ident)
        planes.append((p, base, stats))
    out: dict[str, Any] = {"origin_ps": store.origin_ps, "span_ps": store.span_ps, "warnings": list(store.warnings),
                           "metadata": _h(json.dumps(store.metadata, sort_keys=True)), "n_planes": len(store.planes)}
    for p, base, stats in planes:
        events = []
        for row in range(p.n_events):
            st = sorted((strings[sid], kind, repr(chain_first[value]) if sid == flow_stat >= 0
                         else repr(_decoded(store, kind, value))) for sid, kind, value in stats[row])
            events.append(repr((*base[row], st)))
        events.sort()
        head = repr((p.name, p.id, sorted((k, repr(v)) for k, v in p.plane_stats.items()),
                     list(p.line_names), list(p.line_display_names), [int(x) for x in p.line_ids]))
        out[f"plane {p.index}"] = {"name": p.name, "n_events": p.n_events, "head": _h(head),
                                   "events": _h("\n".join(events))}
    return out


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def compute_all() -> dict[str, Any]:
    from tbprof.errors import ProfileReadError
    from tbprof.readers.chrome_trace import chrome_trace_from_bytes, read_chrome_trace

    result: dict[str, Any] = {}
    for path in demo_files():
        result[str(path.relative_to(DEMO))] = semantic_digest(read_chrome_trace(path))
    for name in FIXTURES:
        try:
            result[f"fixture:{name}"] = semantic_digest(chrome_trace_from_bytes(fixture_bytes(name), "f.json", "f"))
        except ProfileReadError as e:
            result[f"fixture:{name}"] = {"error": e.reason}
    return result


def main(argv: list[str]) -> int:
    """python -m tests.core.chrome_digest [--check]: writes chrome_digests.json, or with --check
    compares the current reader's stores with it (exit 1 on a difference)."""
    result = json.loads(json.dumps(compute_all()))
    if "--check" in argv:
        want = json.loads(DIGESTS.read_text())
        bad = [k for k in sorted(set(want) | set(result)) if want.get(k) != result.get(k)]
        for k in bad:
            print(f"{k}: DIFFER\n  want {want.get(k)}\n  got  {result.get(k)}")
        print(f"{len(result)} stores, {len(bad)} differ")
        return 1 if bad else 0
    DIGESTS.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
