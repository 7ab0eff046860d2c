"""Framework op names: "name:type" parsing with XProf's rules (TensorFlow, JAX, tf.data).

A host event is a TensorFlow op when its name is ``name:Type`` (``dense/MatMul:MatMul``);
JAX ops carry ``name:`` with a lowercase type derived from the last name segment
(``jit(f)/sub:`` -> type ``sub``); ``Iterator::...`` events are tf.data ops. Everything
else (Python frames, runtime TraceMes) is not an op. Parsing is per distinct string.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from tbprof.store.memo import SmallLru

CATEGORY_UNKNOWN = "unknown"
CATEGORY_TENSORFLOW = "tensorflow"
CATEGORY_JAX = "jax"
CATEGORY_TF_DATA = "tf_data"
CATEGORY_MEMCPY = "memcpy"

_TF_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_./>-]*\Z")
_TF_TYPE = re.compile(r"[A-Z_][a-zA-Z0-9_]*\Z")
_JAX_TYPE = re.compile(r"[a-z_][a-z0-9_]*(\[.*\])?\Z", re.S)
_MEMCPY = (("memcpyhtod", "MemcpyHToD"), ("memcpydtoh", "MemcpyDToH"), ("memcpydtod", "MemcpyDToD"),
           ("memcpyhtoh", "MemcpyHToH"))


@dataclass(frozen=True)
class TfOp:
    category: str
    name: str
    type: str  # "" when unknown

    @property
    def is_op(self) -> bool:
        return self.category != CATEGORY_UNKNOWN


def derive_op_type(full_op_name: str) -> str:
    """``model/layer/MatMul_1`` -> ``MatMul``: last name segment without a numeric suffix."""
    op_name = full_op_name.rsplit("/", 1)[-1]
    head, sep, suffix = op_name.rpartition("_")
    if sep and _is_int(suffix):
        return head
    return op_name


def _is_int(text: str) -> bool:
    t = text[1:] if text[:1] in "+-" else text
    return t.isdigit() and t.isascii()


# What one parsed name holds besides its three strings: the TfOp object and its attribute dict,
# and its slot in the cache's dict (in both generations at most). Rounded up from CPython's
# sizes, so the bound holds (tests/domain/test_tf_op_cache.py checks it with tracemalloc).
PARSE_ENTRY_OVERHEAD_BYTES = 400
# Parsed names kept: tens of thousands of names (what an entry is charged on the sample
# profiles, and the cache against lru_cache: bench/measurements.md#analyses); a profile's
# distinct op names are parsed again by every op tool and the trace viewer.
PARSE_CACHE_BYTES = 32 << 20


def _entry_bytes(fullname: str, op: TfOp) -> int:
    # The name, its op name and type: the op name and type are parts of the name (or a constant
    # no longer than the prefix that chose it), so neither is larger than the name's str object
    # (sys.getsizeof: its exact size, any width). The category is a shared constant.
    return PARSE_ENTRY_OVERHEAD_BYTES + 3 * sys.getsizeof(fullname)


_PARSED: SmallLru[str, TfOp] = SmallLru(PARSE_CACHE_BYTES, _entry_bytes)
_recent_parsed = _PARSED.recent_get


def parse_tf_op(fullname: str) -> TfOp:
    """XProf's ParseTfOpFullname (name, type and category of "name:type"), remembered per name
    (bounded in bytes: ``PARSE_CACHE_BYTES``)."""
    hit = _recent_parsed(fullname)
    if hit is None:
        hit = _PARSED.get_older(fullname)
    if hit is not None:
        return hit
    parsed = _parse_tf_op(fullname)
    _PARSED.put(fullname, parsed)
    return parsed


def _parse_tf_op(fullname: str) -> TfOp:
    name, sep, op_type = fullname.partition(":")
    if not sep:
        low = fullname.lower()
        for prefix, kind in _MEMCPY:
            if low.startswith(prefix):
                return TfOp(CATEGORY_MEMCPY, fullname, kind)
        return TfOp(CATEGORY_UNKNOWN, fullname, "")
    if name == "Iterator":
        return TfOp(CATEGORY_TF_DATA, fullname, "Dataset")
    if _TF_NAME.match(name) and _TF_TYPE.match(op_type):
        return TfOp(CATEGORY_TENSORFLOW, name, op_type)
    derived = op_type if op_type else derive_op_type(name)
    if _JAX_TYPE.match(derived):
        return TfOp(CATEGORY_JAX, name, derived.split("[", 1)[0])
    if not op_type:
        return TfOp(CATEGORY_TENSORFLOW, name, derived)
    return TfOp(CATEGORY_UNKNOWN, fullname, "")


def split_name(op_name: str) -> list[str]:
    """Splits at "/" outside parentheses: JAX names nest scopes like ``transpose(jvp(a/b))``."""
    if "(" not in op_name:
        return op_name.split("/")
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(op_name):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch == "/" and depth == 0:
            parts.append(op_name[start:i])
            start = i + 1
    parts.append(op_name[start:])
    return parts


def name_scopes(op_name: str) -> list[str]:
    """``a/b/MatMul`` -> ``["a", "b"]`` (the last segment is the op, not a scope)."""
    return split_name(op_name)[:-1]
