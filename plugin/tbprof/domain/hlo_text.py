"""HLO instructions as text, the way XLA prints them (``%dot.1 = f32[8,4]{1,0} dot(...)``).

XProf's HLO op stats show each op's ``HloInstruction::ToString``; the profile's HloProto
carries the fields, not the text, so this rebuilds the head of it: name, shape (element type,
dimensions, layout), opcode and operands with their shapes. Attributes that only XLA's
printer knows (replica groups, backend configs, ...) are left out.
"""

from __future__ import annotations

from typing import Any

# Joins the shapes of one list of tensors in a text (SQL's tensors columns, which the view splits
# into a VARCHAR[]). A shape's text never holds it (type names, digits, brackets, commas,
# parentheses and spaces only).
TENSOR_SEPARATOR = ";"

# xla_data.proto PrimitiveType number -> XLA's lower-case type name.
_TYPE_NAMES = {
    1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32", 9: "u64",
    10: "f16", 11: "f32", 12: "f64", 13: "tuple", 14: "opaque", 15: "c64", 16: "bf16", 17: "token",
    18: "c128", 19: "f8e5m2", 20: "f8e4m3fn", 21: "s4", 22: "u4", 23: "f8e4m3b11fnuz", 24: "f8e5m2fnuz",
    25: "f8e4m3fnuz", 26: "s2", 27: "u2", 28: "f8e4m3", 29: "f8e3m4", 30: "f4e2m1fn", 31: "f8e8m0fnu",
}
_TUPLE = 13
_COMBINE_DIMENSION = -(1 << 63)  # XLA's Tile::kCombineDimension, printed "*"


def _layout_suffix(layout: Any) -> str:
    """What XLA prints after a layout's ``:`` (``T(8,128)S(5)``): its tiles, element size in bits
    and memory space (each only when set), in XLA's order; "" for a plain layout."""
    tiles = "".join("(" + ",".join("*" if d == _COMBINE_DIMENSION else str(d) for d in t.dimensions) + ")"
                    for t in layout.tiles)
    out = f"T{tiles}" if tiles else ""
    if layout.element_size_in_bits:
        out += f"E({layout.element_size_in_bits})"
    if layout.memory_space:
        out += f"S({layout.memory_space})"
    return out


def shape_text(shape: Any) -> str:
    """``f32[4096,4096]{1,0}``, a TPU layout ``f32[8,128]{1,0:T(8,128)S(5)}``; tuples as
    ``(s32[], f32[8]{0})``."""
    if shape.element_type == _TUPLE:
        return "(" + ", ".join(shape_text(s) for s in shape.tuple_shapes) + ")"
    name = _TYPE_NAMES.get(shape.element_type, f"type{shape.element_type}")
    if name in ("token", "opaque"):
        return "token[]" if name == "token" else "opaque[]"
    dims = ",".join(str(d) for d in shape.dimensions)
    text = f"{name}[{dims}]"
    if shape.HasField("layout"):
        suffix = _layout_suffix(shape.layout)
        # A scalar shows its layout only when there is more to it than the (empty) order: {:S(2)}.
        if len(shape.dimensions) > 0 or suffix:
            order = ",".join(str(d) for d in shape.layout.minor_to_major)
            text += "{" + order + (f":{suffix}" if suffix else "") + "}"
    return text


def human_shape_text(shape: Any) -> str:
    """XLA's ``ShapeUtil::HumanString``: the shape without its layout (``f32[4096,4096]``,
    ``(bf16[8,8], s8[64])``), as XProf's Events DB writes an op's input and output tensors."""
    if shape.element_type == _TUPLE:
        return "(" + ", ".join(human_shape_text(s) for s in shape.tuple_shapes) + ")"
    name = _TYPE_NAMES.get(shape.element_type, f"type{shape.element_type}")
    if name in ("token", "opaque"):
        return f"{name}[]"
    return f"{name}[{','.join(str(d) for d in shape.dimensions)}]"


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def instruction_text(ins: Any, by_id: dict[int, Any]) -> str:
    """``%name = shape opcode(operand shape %operand, ...)`` of one instruction.

    ``by_id`` maps instruction ids of the module to instructions (operands are ids)."""
    operands = []
    for oid in ins.operand_ids:
        op = by_id.get(oid)
        operands.append(f"{shape_text(op.shape)} %{_decode(op.name)}" if op is not None else f"%<{oid}>")
    opcode = _decode(ins.opcode)
    text = f"%{_decode(ins.name)} = {shape_text(ins.shape)} {opcode}({', '.join(operands)})"
    if opcode == "parameter":
        text = f"%{_decode(ins.name)} = {shape_text(ins.shape)} parameter({ins.parameter_number})"
    if ins.custom_call_target:
        text += f', custom_call_target="{_decode(ins.custom_call_target)}"'
    if ins.fusion_kind:
        text += f", kind={_decode(ins.fusion_kind)}"
    return text


def source_frames(module: Any, metadata: Any, max_frames: int = 64) -> list[str]:
    """``file:line`` of an op's source, innermost frame first: from the module's stack frame
    index when the op has a ``stack_frame_id`` (JAX), else its ``source_file``/``source_line``."""
    index = module.stack_frame_index if module is not None else None
    frames: list[str] = []
    frame_id = metadata.stack_frame_id
    while index is not None and 0 < frame_id <= len(index.stack_frames) and len(frames) < max_frames:
        frame = index.stack_frames[frame_id - 1]
        loc_id = frame.file_location_id
        if 0 < loc_id <= len(index.file_locations):
            loc = index.file_locations[loc_id - 1]
            name_id = loc.file_name_id
            file_name = _decode(index.file_names[name_id - 1]) if 0 < name_id <= len(index.file_names) else ""
            frames.append(f"{file_name}:{loc.line}")
        frame_id = frame.parent_frame_id
    if not frames and metadata.source_file:
        frames.append(f"{_decode(metadata.source_file)}:{metadata.source_line}")
    return frames
