"""op_profile: where op time goes, as trees by category, by name scope and by XLA program.

Leaves are ops (host: framework ops; device: HLO ops, or TF GPU ops); an inner node sums the
ops below it. ``by_category`` groups by op type (host) or XLA category (device: "loop fusion",
"custom-call", ...); ``by_name_scope`` splits op names at "/" (``sequential/conv2d/Conv2D``
-> ``sequential`` -> ``conv2d`` -> op; device ops sit under the framework op they came from);
``by_program`` (XLA only) groups by HLO module then category, as XProf's op profile does.
With several hosts each op sums its measures over the hosts (XProf's all-hosts op profile).
tfprof-style options prune and order the trees. Formulas: docs/formulas.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from tbprof.analyses.ops import headline
from tbprof.analyses.ops.op_metrics import IDLE, OpMetricsDb, hosts_op_metrics
from tbprof.analyses.results.ops import OpNode, OpProfileResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Option, Tool, parse_bool, parse_float, parse_nonneg_int
from tbprof.domain import tf_op
from tbprof.domain.hlo_map import HloProgram, hlo_programs
from tbprof.domain.regex import RegexError, compile_user_regex
from tbprof.domain.roofline import PerfEnv, perf_env
from tbprof.store.tables import ProfileStore

ORDER_BY = {"self_time": "self_time_us", "total_time": "total_time_us", "occurrences": "occurrences",
            "flops": "flops", "bytes": "bytes_accessed", "time_wasted": "time_wasted_fraction"}
NO_FRAMEWORK_OP = "(no framework op)"
_MEASURES = ("self_time_us", "total_time_us", "occurrences", "flops", "bytes_accessed")


def parse_regex(text: str) -> Any:
    try:
        return compile_user_regex(text)
    except RegexError as e:
        raise ValueError(str(e)) from None


def parse_order_by(text: str) -> str:
    if text not in ORDER_BY:
        raise ValueError(f"expected one of {sorted(ORDER_BY)}")
    return text


def parse_percent(text: str) -> float:
    value = float(text)
    if not 0.0 < value <= 100.0:
        raise ValueError("must be in (0, 100]")
    return value


def parse_side(text: str) -> str:
    if text not in ("auto", "host", "device"):
        raise ValueError("expected auto, host or device")
    return text


# Tree levels a response may have: each level nests two JSON containers, and Python's JSON
# encoder (and a browser's renderer) recurse per container; deeper scopes are cut there.
MAX_DEPTH = 200


def _node(name: str, kind: str) -> dict[str, Any]:
    return {"name": name, "kind": kind, "self_time_us": 0.0, "total_time_us": 0.0, "occurrences": 0,
            "flops": 0.0, "bytes_accessed": 0.0, "children": {}}


def _add(node: dict[str, Any], m: Mapping[str, float]) -> None:
    for k in _MEASURES:
        node[k] += m[k]


def _insert(root: dict[str, Any], path: list[tuple[str, str]], leaf: dict[str, Any]) -> None:
    node = root
    _add(node, leaf)
    for name, kind in path:
        child = node["children"].get(name)
        if child is None:
            child = node["children"][name] = _node(name, kind)
        _add(child, leaf)
        node = child
    # The same HLO op name can exist in several programs: leaves are keyed by both.
    key = f"{leaf['name']}\x00{leaf.get('program', '')}"
    node["children"][key] = leaf if key not in node["children"] else _merge_leaf(node["children"][key], leaf)


def _merge_leaf(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    _add(a, b)
    return a


def _rates(root: dict[str, Any], env: PerfEnv, root_total_us: float) -> None:
    """Every node's rates (_node_rates), walked with a stack: a name scope can be thousands
    of levels deep in a hostile file, beyond Python's recursion limit."""
    stack = [root]
    while stack:
        node = stack.pop()
        _node_rates(node, env, root_total_us)
        stack.extend(node["children"].values())


def _node_rates(node: dict[str, Any], env: PerfEnv, root_total_us: float) -> None:
    """FLOP rate and HBM bandwidth of a node, as fractions of the device's peaks, and the time
    they waste (XProf's op profile): ``time_wasted_fraction`` = (node time / root time) x
    (1 - max(FLOP utilisation, HBM bandwidth utilisation)). None where a peak is unknown or
    the node has no time (XProf shows "-")."""
    tot = node["total_time_us"]
    node["flop_rate_gflops_per_sec"] = node["flops"] / tot / 1e3 if tot > 0 else 0.0
    node["memory_bw_gbytes_per_sec"] = node["bytes_accessed"] / tot / 1e3 if tot > 0 else 0.0
    flops_tot = tot
    if env.tpu and node["kind"] == "root":
        # XProf 2.24.2 on TPU: the root's FLOP utilisation is over its busy time (idle left out),
        # its bandwidth over the whole time (tpu_inference: 5.62e-6, not 4.87e-6).
        flops_tot = tot - sum(c["total_time_us"] for c in node["children"].values() if c["kind"] == "idle")
    # Utilisations are capped at 1, as XProf's (an async copy-start moves its bytes in ~5 ns).
    flops_util = (min(1.0, node["flops"] / flops_tot / 1e3 / (env.peak_tflops * 1e3))
                  if env.peak_tflops > 0 and flops_tot > 0 and node["kind"] != "idle" else None)
    hbm_util = (min(1.0, node["memory_bw_gbytes_per_sec"] / env.peak_hbm_gbps)
                if env.peak_hbm_gbps > 0 and tot > 0 and node["kind"] != "idle" else None)
    node["flops_utilization"] = flops_util
    node["hbm_bw_utilization"] = hbm_util
    node["time_wasted_fraction"] = (tot / root_total_us * (1.0 - max(flops_util, hbm_util))
                                    if flops_util is not None and hbm_util is not None and root_total_us > 0
                                    else None)


def _sort_key(key: str) -> Any:
    # Descending by ``key``; nodes without a value (None: no utilisation) last, then by name.
    return lambda c: (c[key] is None, -(c[key] or 0.0), c["name"])


def _finish(node: dict[str, Any], key: str, root_self_us: float, depth: int, max_depth: int,
            top_fraction: float = 1.0) -> dict[str, Any]:
    """Children dicts -> lists ordered by ``key`` (descending), cut below ``max_depth``; with
    ``top_fraction`` < 1 only the leading children that make up that share of the node's time
    (XProf's "top 90%": children are kept until their summed time reaches it)."""
    kids = sorted(node["children"].values(), key=_sort_key(key))
    node["num_children"] = len(kids)
    node["fraction"] = node["self_time_us"] / root_self_us if root_self_us > 0 else 0.0
    if top_fraction < 1.0 and depth > 0:
        target_us, summed_us, cut = node["total_time_us"] * top_fraction, 0.0, len(kids)
        for i, kid in enumerate(kids):
            if summed_us >= target_us:
                cut = i
                break
            summed_us += kid["total_time_us"]
        kids = kids[:cut]
    node["children"] = ([_finish(c, key, root_self_us, depth + 1, max_depth, top_fraction) for c in kids]
                        if depth < max_depth else [])
    return node


def _as_node(node: dict[str, Any]) -> OpNode:
    """A tree built as dicts (children keyed by name while ops are inserted) once ``_finish`` has
    made every node's children an ordered list: the shape of ``OpNode``."""
    return cast(OpNode, node)


def _leaf(db: OpMetricsDb, i: int, side: str, program: str, hlo_program: HloProgram | None = None) -> dict[str, Any]:
    leaf = _node(str(db.name[i]), "op")
    leaf.update(self_time_us=db.self_time_ps[i] / 1e6, total_time_us=db.time_ps[i] / 1e6,
                occurrences=int(db.occurrences[i]), flops=float(db.flops[i]),
                bytes_accessed=float(db.program_hbm[i]), category=str(db.type[i]))
    if side == "device":
        leaf.update(framework_op=tf_op.parse_tf_op(db.provenance[i]).name if db.provenance[i] else "",
                    program=program)
        if hlo_program is not None:
            # What the details pane shows: the HLO op's opcode and the source line it came from.
            op = hlo_program.op(str(db.name[i]))
            if op is not None:
                leaf.update(opcode=op.opcode, source=op.source)
    return leaf


def _idle(db: OpMetricsDb) -> dict[str, Any]:
    leaf = _node(IDLE, "idle")
    idle_us = db.idle_time_ps / 1e6
    leaf.update(self_time_us=idle_us, total_time_us=idle_us, category=IDLE)
    return leaf


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> OpProfileResult:
    """The trees and op table of one host, or of several with each op summed over the hosts."""
    side = options.get("side", "auto")
    device = hosts_op_metrics(stores, "device")
    if side == "auto":
        side = "device" if device.n_ops > 0 else "host"
    db = device if side == "device" else hosts_op_metrics(stores, "host")
    programs: dict[int, HloProgram] = {}
    for store in stores:  # a program id is a fingerprint of the module: the same on every host
        for pid, module in hlo_programs(store).items():
            programs.setdefault(pid, module)
    show: Any = options.get("show_name_regex")  # compiled by parse_regex (RE2)
    hide: Any = options.get("hide_name_regex")
    min_self_us = float(options.get("min_self_time_us", 0.0))
    # Select ops (per distinct op: op counts are in the thousands, events in the millions).
    keep = db.self_time_ps / 1e6 >= min_self_us
    if show is not None or hide is not None:
        names = [f"{n}\n{tf_op.parse_tf_op(p).name if p else ''}"
                 for n, p in zip(db.name.tolist(), db.provenance.tolist(), strict=False)]
        if show is not None:
            keep &= np.fromiter((any(show.search(x) for x in nm.split("\n")) for nm in names), bool, len(names))
        if hide is not None:
            keep &= ~np.fromiter((any(hide.search(x) for x in nm.split("\n") if x) for nm in names), bool,
                                 len(names))
    picked = np.flatnonzero(keep)
    by_category = _node("by_category", "root")
    by_scope = _node("by_name_scope", "root")
    has_programs = side == "device" and bool((db.program_id[picked] != 0).any() or programs)
    by_program = _node("by_program", "root") if has_programs else None
    flat: dict[str, list[Any]] = {c.name: [] for c in OP_COLUMNS}
    for i in picked.tolist():
        pid = int(db.program_id[i])
        program = programs[pid].display_name if pid in programs else (f"program({pid})" if pid else "")
        category = str(db.type[i])
        if side == "device":
            fw = tf_op.parse_tf_op(db.provenance[i]).name if db.provenance[i] else ""
            scope_path = [(s, "scope") for s in tf_op.name_scopes(fw)] if fw else []
            scope_path.append((fw or NO_FRAMEWORK_OP, "framework_op"))
        else:
            fw = str(db.name[i])
            scope_path = [(s, "scope") for s in tf_op.name_scopes(fw)]
        op_program = programs.get(pid)
        _insert(by_category, [(category, "category")], _leaf(db, i, side, program, op_program))
        _insert(by_scope, scope_path, _leaf(db, i, side, program, op_program))
        if by_program is not None:
            _insert(by_program, [(program, "program"), (category, "category")],
                    _leaf(db, i, side, program, op_program))
        flat["operation"].append(str(db.name[i]))
        flat["category"].append(category)
        flat["program"].append(program)
        flat["framework_op"].append(fw if side == "device" else "")
        flat["name_scope"].append("/".join(s for s, k in scope_path if k == "scope"))
        flat["occurrences"].append(int(db.occurrences[i]))
        flat["total_time_us"].append(db.time_ps[i] / 1e6)
        flat["self_time_us"].append(db.self_time_ps[i] / 1e6)
        flat["flops"].append(float(db.flops[i]))
        flat["bytes_accessed"].append(float(db.program_hbm[i]))
    trees = [t for t in (by_category, by_scope, by_program) if t is not None]
    if options.get("include_idle", True) and db.total_time_ps > 0:
        for t in trees:
            _insert(t, [], _idle(db))
    key = ORDER_BY[options.get("order_by", "self_time")]
    max_depth = int(options.get("max_depth", 100))
    env = perf_env(stores) if side == "device" else PerfEnv()
    top_fraction = float(options.get("top_percent", 100.0)) / 100.0
    for t in trees:
        _rates(t, env, t["total_time_us"])
        _finish(t, key, t["self_time_us"], 0, max_depth, top_fraction)
    table = Table.from_columns(OP_COLUMNS, flat, default_sort="self_time_us")
    return {
        "schema_version": SCHEMA_VERSION, "tool": "op_profile",
        "host": stores[0].host if len(stores) == 1 else None, "hosts": [s.host for s in stores],
        "order_by": options.get("order_by", "self_time"),
        "side": side,
        "peaks": {"flop_rate_gflops_per_sec": env.peak_tflops * 1e3, "hbm_bw_gbytes_per_sec": env.peak_hbm_gbps},
        "op_count": int(db.n_ops),
        "shown_op_count": int(picked.shape[0]),
        "total_time_us": db.total_time_ps / 1e6,
        "idle_time_us": db.idle_time_ps / 1e6,
        "metrics": [headline.idle_metric(stores, side)] if db.total_time_ps > 0 else [],
        "by_category": _as_node(by_category),
        "by_name_scope": _as_node(by_scope),
        "by_program": _as_node(by_program) if by_program is not None else None,
        "tables": {"ops": table},
    }


OP_COLUMNS = [
    Column("operation", "Operation", "str", "", "framework op (host) or HLO op (device)"),
    Column("category", "Category", "str", "", "op type (host) or XLA category (device)"),
    Column("program", "Program", "str", "", "HLO module(program id) of a device op"),
    Column("framework_op", "Framework op", "str", "", "the TensorFlow/JAX op a device op came from"),
    Column("name_scope", "Name scope", "str"),
    Column("occurrences", "Occurrences", "int"),
    Column("total_time_us", "Total time", "float", "us"),
    Column("self_time_us", "Self time", "float", "us"),
    Column("flops", "FLOPs", "float"),
    Column("bytes_accessed", "Bytes accessed", "float", "bytes"),
]


TOOLS = (
    Tool(
        name="op_profile", title="Op profile", compute=compute, multi_host=True, few_planes=True,
        options=(
            Option("side", parse_side, "auto", "host, device, or auto (device when it has ops)",
                   choices=("auto", "host", "device")),
            Option("max_depth", parse_nonneg_int, 100, "tree levels below the root to return", min_value=0,
                   max_value=MAX_DEPTH,
                   advanced=True),
            Option("min_self_time_us", parse_float, 0.0, "hide ops with less self time (us)", min_value=0,
                   max_value=3.2e13,
                   advanced=True),
            Option("order_by", parse_order_by, "self_time",
                   "order children by self_time, total_time, occurrences, flops, bytes or time_wasted",
                   choices=tuple(ORDER_BY)),
            Option("show_name_regex", parse_regex, None, "keep only ops whose name matches"),
            Option("hide_name_regex", parse_regex, None, "drop ops whose name matches"),
            Option("include_idle", parse_bool, True, "add the IDLE time as a node"),
            Option("top_percent", parse_percent, 100.0,
                   "keep, under each node, the leading children that make up this % of its time (XProf: 90)",
                   min_value=1, max_value=100),
    ),
        description="Op time as trees by category, name scope and XLA program, with tfprof-style options.",
        result=OpProfileResult, needs=frozenset({"framework_ops", "xplane"}),
        requires="device or host op events with their categories (XLA or TensorFlow ops).",
        how_to=("Profile a few steps of the compiled model after warm-up.",),
    ),
)
