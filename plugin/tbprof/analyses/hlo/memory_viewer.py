"""memory_viewer: an HLO module's buffer assignment, as XProf's "Memory Viewer".

XLA records, in the HloProto each profile carries per program, how it packed the module's
logical buffers into allocations and the order the heap simulator allocated and freed the
temporaries. For memory space 0 (device HBM) this replays that:

- allocations that live for the whole program run (entry parameters, outputs that may be live
  out, constants; XProf's "indefinite lifetimes") form the base of the heap;
- the heap simulator trace (the whole-module one) then adds a buffer at ALLOC and removes it
  at FREE; SHARE_WITH makes a buffer share its canonical buffer's memory (nothing is added
  while the canonical buffer is live, and the memory is freed with the last sharer); a buffer
  that shares a canonical buffer already freed takes new memory;
- ``heap_sizes_bytes[0]`` is the base and ``heap_sizes_bytes[i + 1]`` the heap after event i;
  the peak is the first maximum and ``peak_heap_position`` its event index;
- the buffers live at the peak: one per indefinite allocation (its largest logical buffer,
  the first of equal ones), in allocation order, then the live temporaries (a shared group as
  its canonical buffer) in allocation order; buffers under 16 KiB are merged into one
  "small (<16384 bytes)" row at the end.

Thread-local and tuple allocations are "non-reusable" and not on the heap. Other memory spaces
(``memory_space=N``: a buffer allocation's color, e.g. S(1) and S(5) in TPU layouts) are replayed
the same way from their own heap simulator trace; as in XProf, their indefinite allocations
count in the peak but are not drawn as buffers (XLA leaves them out of those spaces).

Beside the buffers in program order (allocation order), the page shows them by size and by
padding (size - unpadded size, as XProf's page sorts them) and XProf's allocation timeline:
each heap-simulated allocation as a container block and each buffer that took memory as a
block at its offset, over its [start, limit) span. Formulas and the comparison with XProf:
docs/formulas.md "Memory viewer".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tbprof.analyses.hlo.hlo_stats import programs_of
from tbprof.analyses.results.hlo import (
    BufferBlock,
    HeapBuffer,
    MemorySpaceEntry,
    MemoryViewerResult,
    ModuleMemory,
    ModuleMemoryEntry,
)
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Option, Tool
from tbprof.domain.hlo_cost import shape_bytes
from tbprof.domain.hlo_map import HloProgram, hlo_programs, program_id_text
from tbprof.domain.hlo_text import shape_text
from tbprof.errors import NotFound
from tbprof.store.tables import ProfileStore

SMALL_BUFFER_BYTES = 16 * 1024  # XProf merges live buffers smaller than this into one row
_ALLOC, _FREE, _SHARE_WITH = 0, 1, 2
NO_MODULES_MESSAGE = "No HLO module with a buffer assignment: the profile carries no XLA programs."


# XLA's Layout constants: kDefaultMemorySpace = 0, kGenericFastMemorySpace = 1 (VMEM on TPU),
# kHostMemorySpace = 5; other spaces are target-specific and keep their number.
MEMORY_SPACE_NAMES = {0: "HBM (device memory)", 1: "On-chip (fast memory, S(1))", 5: "Host memory (S(5))"}


def memory_space_name(color: int) -> str:
    return MEMORY_SPACE_NAMES.get(color, f"Memory space {color}")


def parse_memory_space(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError("expected a memory space number (0 = HBM)") from None
    if not 0 <= value < 1 << 20:
        raise ValueError("expected a memory space number (0 = HBM)")
    return value


def parse_module(text: str) -> str:
    if not text or len(text) > 1000:
        raise ValueError("expected a module name such as jit_train_step(13929), or a program id")
    return text


@dataclass
class _Buffer:
    id: int
    size_bytes: int
    instruction: Any  # HloInstructionProto or None
    shape_index: tuple[int, ...]


def _subshape(shape: Any, index: tuple[int, ...]) -> Any:
    for i in index:
        if i >= len(shape.tuple_shapes):
            return None
        shape = shape.tuple_shapes[i]
    return shape


class _Module:
    """Index of one program's instructions and logical buffers."""

    def __init__(self, program: HloProgram) -> None:
        self.program = program
        self.by_id: dict[int, Any] = {}
        if program.module is not None:
            for comp in program.module.computations:
                for ins in comp.instructions:
                    self.by_id[ins.id] = ins
        ba = program.buffer_assignment
        self.buffers: dict[int, _Buffer] = {}
        for b in ba.logical_buffers:
            ins = self.by_id.get(b.defined_at.instruction_id)
            self.buffers[b.id] = _Buffer(b.id, int(b.size), ins, tuple(b.defined_at.shape_index))

    def describe(self, buffer_id: int, size_bytes: int, group: str) -> HeapBuffer:
        b = self.buffers.get(buffer_id)
        ins = b.instruction if b is not None else None
        index = b.shape_index if b is not None else ()
        op_name = ins.name.decode("utf-8", "replace") if ins is not None else f"buffer {buffer_id}"
        name = op_name + ("{" + ",".join(str(i) for i in index) + "}" if index else "")
        sub = _subshape(ins.shape, index) if ins is not None else None
        shape = shape_text(sub) if sub is not None else ""
        tf_op = ins.metadata.op_name.decode("utf-8", "replace") if ins is not None else ""
        unpadded = shape_bytes(sub) if sub is not None else 0
        return {
            "logical_buffer_id": buffer_id, "size_bytes": size_bytes,
            "unpadded_size_bytes": unpadded or size_bytes,
            "instruction_name": name, "shape": shape, "tf_op_name": tf_op, "group": group,
            "opcode": ins.opcode.decode("utf-8", "replace") if ins is not None else "",
            "label": f"{op_name}: {shape} # {tf_op}",
        }


def _attributes(alloc: Any) -> list[str]:
    out = []
    if alloc.is_entry_computation_parameter:
        out.append("entry computation parameter")
    if alloc.maybe_live_out:
        out.append("may-be live out")
    if alloc.is_constant:
        out.append("constant")
    if alloc.is_thread_local:
        out.append("thread-local")
    if not alloc.is_thread_local and not alloc.is_tuple:
        out.append("reusable")
    return out


def _group(alloc: Any) -> str:
    if alloc.is_entry_computation_parameter:
        return "Parameter"
    if alloc.maybe_live_out:
        return "Output"
    if alloc.is_constant:
        return "Constant"
    return "Temporary"


def _trace(ba: Any, color: int) -> Any:
    """The heap simulator trace of memory space ``color`` (the color of its first event's
    buffer; a trace's ``buffer_allocation_index`` does not always name the allocation its
    buffers went to): the whole-module one if any, else the one with the most events."""
    colors = {b.id: b.color for b in ba.logical_buffers}
    best = None
    for t in ba.heap_simulator_traces:
        if not t.events or colors.get(t.events[0].buffer_id, -1) != color:
            continue
        if t.whole_module_simulation:
            return t
        if best is None or len(t.events) > len(best.events):
            best = t
    return best


def module_memory(program: HloProgram, color: int = 0) -> ModuleMemory:
    """The memory viewer of one program (see the module docstring)."""
    ba = program.buffer_assignment
    mod = _Module(program)
    trace = _trace(ba, color)
    indefinite: list[Any] = []
    non_reusable = params = live_out = total = 0
    for a in ba.buffer_allocations:
        if a.color != color:
            continue
        if a.is_thread_local or a.is_tuple:
            non_reusable += a.size
        if not a.is_thread_local:
            total += a.size
        if a.is_entry_computation_parameter:
            params += a.size
        if a.maybe_live_out:
            live_out += a.size
        if not a.is_thread_local and (
                a.is_entry_computation_parameter or a.maybe_live_out or a.is_constant):
            indefinite.append(a)
    base = sum(int(a.size) for a in indefinite)
    # Replay the heap simulator: groups of buffers sharing memory, reference counted.
    heap = base
    unpadded_heap = base
    heap_sizes = [heap]
    unpadded_sizes = [unpadded_heap]
    group_of: dict[int, int] = {}  # buffer -> canonical buffer of its live group
    members: dict[int, int] = {}  # canonical -> live members
    group_size: dict[int, tuple[int, int]] = {}  # canonical -> (size, unpadded size)
    start: dict[int, int] = {}
    limit: dict[int, int] = {}
    live_order: list[int] = []  # canonical buffers in allocation order
    events = list(trace.events) if trace is not None else []
    peak, peak_pos, peak_live = heap, 0, list[int]()
    for i, ev in enumerate(events):
        bid = ev.buffer_id
        buf = mod.buffers.get(bid)
        size = buf.size_bytes if buf is not None else 0
        info = mod.describe(bid, size, "Temporary") if buf is not None else None
        unpadded = info["unpadded_size_bytes"] if info is not None else size
        if ev.kind == _ALLOC or (ev.kind == _SHARE_WITH and ev.share_with_canonical_id not in members):
            group_of[bid] = bid
            members[bid] = 1
            group_size[bid] = (size, unpadded)
            heap += size
            unpadded_heap += unpadded
            live_order.append(bid)
            start[bid] = i
        elif ev.kind == _SHARE_WITH:
            canon = ev.share_with_canonical_id
            group_of[bid] = canon
            members[canon] += 1
        elif ev.kind == _FREE:
            canon = group_of.pop(bid, None)
            if canon is not None:
                members[canon] -= 1
                if members[canon] == 0:
                    limit[canon] = i
                    del members[canon]
                    gsize, gunpadded = group_size.pop(canon)
                    heap -= gsize
                    unpadded_heap -= gunpadded
                    live_order.remove(canon)
        heap_sizes.append(heap)
        unpadded_sizes.append(unpadded_heap)
        if heap > peak:
            peak, peak_pos, peak_live = heap, i, list(live_order)
    if not events:
        heap_sizes, unpadded_sizes = [], []
    # Buffers live at the peak: each indefinite allocation's largest buffer (HBM only, as
    # XProf: other spaces' indefinite allocations take no memory there), then temporaries.
    live: list[HeapBuffer] = []
    small_bytes = 0
    for a in (indefinite if color == 0 else []):
        rep = None
        for x in a.assigned:
            if rep is None or x.size > rep.size:
                rep = x
        if a.size < SMALL_BUFFER_BYTES or rep is None:
            small_bytes += int(a.size)
            continue
        live.append(mod.describe(rep.logical_buffer_id, int(a.size), _group(a)))
    for canon in peak_live:
        size = group_size_at(mod, canon)
        if size < SMALL_BUFFER_BYTES:
            small_bytes += size
            continue
        live.append(mod.describe(canon, size, "Temporary"))
    if small_bytes:
        live.append({"logical_buffer_id": -1, "size_bytes": small_bytes, "unpadded_size_bytes": small_bytes,
                     "instruction_name": "", "shape": "", "tf_op_name": "", "group": "", "opcode": "",
                     "label": f"small (<{SMALL_BUFFER_BYTES} bytes)"})
    unpadded_peak = unpadded_sizes[peak_pos + 1] if events else base
    spans = {b: (start[b], limit.get(b, len(events))) for b in start}
    return {
        "module": program.display_name, "module_name": program.module_name,
        "program_id": program_id_text(program.program_id),
        "memory_space": color,
        "peak_heap_bytes": int(peak), "peak_unpadded_heap_bytes": int(unpadded_peak),
        "peak_heap_position": int(peak_pos),
        "entry_computation_parameters_bytes": int(params), "maybe_live_out_bytes": int(live_out),
        "non_reusable_bytes": int(non_reusable), "indefinite_bytes": int(base),
        "total_buffer_allocation_bytes": int(total),
        "heap_sizes_bytes": [int(x) for x in heap_sizes],
        "unpadded_heap_sizes_bytes": [int(x) for x in unpadded_sizes],
        "max_heap": live,
        "indefinite_lifetimes": [
            {"allocation_index": int(a.index), "size_bytes": int(a.size), "attributes": _attributes(a),
             "logical_buffer_ids": [int(x.logical_buffer_id) for x in a.assigned]}
            for a in sorted(indefinite, key=lambda a: (-a.size, a.index))],
        # [start, limit) event positions of each buffer that took memory (a shared group's
        # canonical buffer, until its last sharer is freed).
        "logical_buffer_spans": {str(b): list(spans[b]) for b in sorted(spans)},
        "by_size_order": by_size_order(live),
        "by_padding_order": by_padding_order(live),
        "buffer_blocks": buffer_blocks(ba, mod, color, spans),
    }


def by_size_order(live: Sequence[HeapBuffer]) -> list[int]:
    """Indices into the buffers live at the peak, largest first (XProf's "by size")."""
    return sorted(range(len(live)), key=lambda i: -live[i]["size_bytes"])


def by_padding_order(live: Sequence[HeapBuffer]) -> list[int]:
    """Indices into the buffers live at the peak, most padding first (XProf's "by padding
    size": size - unpadded size, 0 where either is unknown, ties in size order)."""
    def padding(b: HeapBuffer) -> int:
        size, unpadded = b["size_bytes"], b["unpadded_size_bytes"]
        return size - unpadded if size and unpadded and b["logical_buffer_id"] >= 0 else 0
    return sorted(by_size_order(live), key=lambda i: -padding(live[i]))


def _is_indefinite(alloc: Any) -> bool:
    return bool(alloc.is_entry_computation_parameter or alloc.maybe_live_out or alloc.is_constant)


def buffer_blocks(ba: Any, mod: _Module, color: int, spans: Mapping[int, tuple[int, int]]) -> list[BufferBlock]:
    """XProf's allocation timeline: every allocation of the space that the heap simulator
    traced (indefinite ones excluded), stacked one above the other, as a container block over
    every step, and each buffer that took memory in it as a block at the allocation's offset
    plus its own, over its span."""
    traced_events: dict[int, int] = {}  # logical buffer -> events of the trace it appears in
    for t in ba.heap_simulator_traces:
        for ev in t.events:
            traced_events[ev.buffer_id] = max(traced_events.get(ev.buffer_id, 0), len(t.events))
    allocs = [a for a in ba.buffer_allocations
              if a.color == color and not _is_indefinite(a)
              and any(x.logical_buffer_id in traced_events for x in a.assigned)]
    steps = max((traced_events[x.logical_buffer_id] for a in allocs for x in a.assigned
                 if x.logical_buffer_id in traced_events), default=0)
    out: list[BufferBlock] = []
    if not allocs or not steps:
        return out
    base = 0
    for a in allocs:
        category = "Thread-local" if a.is_thread_local else "Temporary"
        out.append({"logical_buffer_id": -1, "name": category, "offset_bytes": base, "size_bytes": int(a.size),
                    "start_step": 0, "end_step": steps})
        for x in a.assigned:
            span = spans.get(x.logical_buffer_id)
            if span is None:
                continue
            info = mod.describe(x.logical_buffer_id, int(x.size), category)
            out.append({"logical_buffer_id": int(x.logical_buffer_id), "name": info["instruction_name"],
                        "offset_bytes": base + int(x.offset), "size_bytes": int(x.size),
                        "start_step": span[0], "end_step": span[1]})
        base += int(a.size)
    return out


def group_size_at(mod: _Module, canon: int) -> int:
    buf = mod.buffers.get(canon)
    return buf.size_bytes if buf is not None else 0


BUFFER_COLUMNS = [
    Column("logical_buffer_id", "Buffer id", "int", "", "-1: the merged small buffers"),
    Column("size_bytes", "Size", "int", "bytes"),
    Column("unpadded_size_bytes", "Unpadded size", "int", "bytes"),
    Column("instruction_name", "HLO op", "str", "", "the op that defines the buffer ({i}: tuple element)"),
    Column("shape", "Shape", "str"),
    Column("tf_op_name", "Framework op", "str"),
    Column("group", "Allocation type", "str", "", "Parameter, Output, Constant or Temporary"),
    Column("opcode", "Opcode", "str"),
]


def _programs_with_buffers(stores: Sequence[ProfileStore]) -> list[HloProgram]:
    return [p for p in programs_of(stores).values() if p.buffer_assignment is not None]


def _find(programs: list[HloProgram], module: str | None) -> HloProgram | None:
    if module is None:
        return None
    for p in programs:
        if module in (p.display_name, str(p.program_id)):
            return p
    return None


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> MemoryViewerResult:
    programs = _programs_with_buffers(stores)
    summaries = sorted(((p, module_memory(p)) for p in programs),
                       key=lambda pm: (-pm[1]["peak_heap_bytes"], pm[0].display_name))
    host = stores[0].host if len(stores) == 1 else None
    hosts = [s.host for s in stores]
    modules: list[ModuleMemoryEntry] = [{"module": p.display_name, "program_id": str(p.program_id),
                                         "peak_heap_bytes": m["peak_heap_bytes"]} for p, m in summaries]
    if not summaries:
        return {"schema_version": SCHEMA_VERSION, "tool": "memory_viewer", "host": host, "hosts": hosts,
                "modules": modules, "message": NO_MODULES_MESSAGE, "module": None,
                "tables": {"buffers": Table.from_columns(BUFFER_COLUMNS, {c.name: [] for c in BUFFER_COLUMNS})}}
    wanted = options.get("module")
    chosen = _find(programs, wanted) if wanted else summaries[0][0]
    if chosen is None:
        raise NotFound(f"no HLO module {wanted!r}; modules: " + ", ".join(p.display_name for p, _ in summaries))
    space = int(options.get("memory_space") or 0)
    ba = chosen.buffer_assignment
    colors = sorted({int(a.color) for a in ba.buffer_allocations} | {0})
    mem = next(m for p, m in summaries if p is chosen) if space == 0 else module_memory(chosen, space)
    spaces: list[MemorySpaceEntry] = [
        {"memory_space": c, "name": memory_space_name(c),
         "peak_heap_bytes": mem["peak_heap_bytes"] if c == space else module_memory(chosen, c)["peak_heap_bytes"]}
        for c in colors]
    live: Sequence[Mapping[str, object]] = mem["max_heap"]
    return {"schema_version": SCHEMA_VERSION, "tool": "memory_viewer", "host": host, "hosts": hosts,
            "modules": modules, "memory_spaces": spaces, **mem,
            "tables": {"buffers": Table.from_columns(BUFFER_COLUMNS, {c.name: [b[c.name] for b in live]
                                                                      for c in BUFFER_COLUMNS},
                                                     default_sort="size_bytes")}}


def has_buffer_assignment(store: ProfileStore) -> bool:
    return any(p.buffer_assignment is not None for p in hlo_programs(store).values())


TOOLS = (
    Tool(
        name="memory_viewer", title="Memory viewer", compute=compute, available=has_buffer_assignment,
        few_planes=True,
        options=(Option("module", parse_module, None,
                        "HLO module, e.g. jit_train_step(13929), or its program id (default: the largest peak)"),
                 Option("memory_space", parse_memory_space, 0,
                        "memory space (buffer color): 0 = HBM; the module's spaces are listed in memory_spaces",
                        min_value=0)),
        description="An HLO module's buffer assignment: peak heap, buffers live at the peak, heap over time.",
        result=MemoryViewerResult, needs=frozenset({"hlo"}),
        requires="the HLO protos of XLA programs with their buffer assignment (written on the /host:metadata plane).",
        how_to=(
            "Profile JAX, or TensorFlow with XLA; each compiled program's buffer assignment comes with the profile.",
        ),
    ),
)

