"""A small framed binary form of named numeric arrays: what a pod's worker sends the server for
a batch of hosts (analyses/partials.py ``encode_batch``), with no JSON and no pickle to parse.

Layout (little-endian): the prefix ``MAGIC``, u32 version, u32 section count, u32 length of the
names, u32 CRC-32 of those four fields and everything after the prefix, 4 zero bytes; then one directory entry per
section (u32 name offset, u32 name length, u8 dtype code, 7 zero bytes, u64 offset from the data
start, u64 item count); the names (ASCII, concatenated); zero bytes up to a multiple of 8; the
data, each array 8-aligned. Decoding checks every length, offset and code against the blob
before it makes a view, so a truncated or damaged frame raises ``FrameError`` naming what is
wrong, never reads past the end and never builds an object the frame did not describe.

Texts travel as string columns (``put_strings``: UTF-8 bytes and int64 offsets) and lists of
arrays as ragged columns (``put_ragged``: the values end to end and int64 offsets).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

MAGIC = b"TBPF"
FRAME_VERSION = 1
_PREFIX = struct.Struct("<4sIIII4x")
_COVERED = struct.Struct("<4sIII")  # the prefix's fields the checksum covers, with what follows it
_ENTRY = struct.Struct("<IIB7xQQ")
_ALIGN = 8
# The dtypes a frame may hold, by code (a code outside this table is refused).
_DTYPES: tuple[np.dtype, ...] = (np.dtype("<u1"), np.dtype("<i8"), np.dtype("<f8"), np.dtype("?"),
                                 np.dtype("<i4"), np.dtype("<u8"))
_CODE = {d: i for i, d in enumerate(_DTYPES)}
MAX_SECTIONS = 1 << 12
MAX_NAME_BYTES = 128


class FrameError(ValueError):
    """A frame that is not one of this version, or whose bytes contradict their own directory."""


class FrameWriter:
    """Collects named arrays and writes them as one frame (``bytes()``)."""

    def __init__(self) -> None:
        self._arrays: dict[str, np.ndarray] = {}

    def put(self, name: str, values: np.ndarray | Sequence[int | float | bool], dtype: str | None = None) -> None:
        a = np.asarray(values, dtype=dtype)
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        if a.dtype not in _CODE:
            raise TypeError(f"a frame cannot hold {a.dtype} ({name})")
        if name in self._arrays or not name.isascii() or not 0 < len(name) <= MAX_NAME_BYTES:
            raise ValueError(f"bad or repeated section name {name!r}")
        self._arrays[name] = np.ascontiguousarray(a.reshape(-1))

    def put_strings(self, name: str, texts: Sequence[str]) -> None:
        """Texts as ``name.b`` (UTF-8, end to end) and ``name.o`` (len(texts) + 1 offsets)."""
        data = [t.encode("utf-8", "surrogatepass") for t in texts]
        offsets = np.zeros(len(data) + 1, dtype=np.int64)
        np.cumsum([len(d) for d in data], out=offsets[1:])
        self.put(f"{name}.o", offsets)
        self.put(f"{name}.b", np.frombuffer(b"".join(data), dtype=np.uint8))

    def put_string_lists(self, name: str, lists: Sequence[Sequence[str]]) -> None:
        """Lists of texts as one string column ``name`` and ``name.n``: the texts of each list."""
        self.put_strings(name, [t for texts in lists for t in texts])
        self.put(f"{name}.n", [len(texts) for texts in lists], "<i8")

    def put_ragged(self, name: str, parts: Sequence[np.ndarray], dtype: str) -> None:
        """Arrays of one dtype as ``name`` (end to end, flattened) and ``name.o`` (offsets)."""
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([np.size(p) for p in parts], out=offsets[1:])
        self.put(f"{name}.o", offsets)
        flat = [np.asarray(p, dtype=dtype).reshape(-1) for p in parts]
        self.put(name, np.concatenate(flat) if flat else np.zeros(0, dtype=dtype))

    def __bytes__(self) -> bytes:
        names = b"".join(n.encode("ascii") for n in self._arrays)
        entries, chunks, name_at, offset = [], [], 0, 0
        for n, a in self._arrays.items():
            raw = a.tobytes()
            entries.append(_ENTRY.pack(name_at, len(n), _CODE[a.dtype], offset, a.shape[0]))
            pad = -len(raw) % _ALIGN
            chunks.append(raw + b"\0" * pad)
            name_at += len(n)
            offset += len(raw) + pad
        head = b"".join(entries) + names
        body = [head, b"\0" * (-(_PREFIX.size + len(head)) % _ALIGN), *chunks]
        crc = zlib.crc32(_COVERED.pack(MAGIC, FRAME_VERSION, len(entries), len(names)))
        for c in body:
            crc = zlib.crc32(c, crc)
        return b"".join([_PREFIX.pack(MAGIC, FRAME_VERSION, len(entries), len(names), crc), *body])


class Frame:
    """A decoded frame: its arrays by name, read-only views of the frame's bytes (a caller that
    keeps or hands out an array copies it: a view would keep the whole frame alive)."""

    def __init__(self, blob: bytes | bytearray | memoryview) -> None:
        view = memoryview(blob).cast("B")
        if len(view) < _PREFIX.size:
            raise FrameError(f"truncated frame: {len(view)} bytes, the prefix alone is {_PREFIX.size}")
        magic, version, n, names_len, crc = _PREFIX.unpack_from(view)
        if magic != MAGIC or any(view[_PREFIX.size - 4:_PREFIX.size]):  # the checksum covers what follows
            raise FrameError("not a tbprof frame (magic)")
        if version != FRAME_VERSION:
            raise FrameError(f"frame version {version}, expected {FRAME_VERSION}")
        if n > MAX_SECTIONS or names_len > n * MAX_NAME_BYTES:
            raise FrameError(f"frame directory too large ({n} sections, {names_len} name bytes)")
        head_end = _PREFIX.size + n * _ENTRY.size + names_len
        data_start = head_end + (-head_end % _ALIGN)
        if data_start > len(view):
            raise FrameError(f"truncated frame: its directory needs {data_start} bytes, it has {len(view)}")
        if zlib.crc32(view[_PREFIX.size:], zlib.crc32(_COVERED.pack(magic, version, n, names_len))) != crc:
            raise FrameError("damaged frame (checksum)")
        names = bytes(view[_PREFIX.size + n * _ENTRY.size:head_end])
        data = view[data_start:].toreadonly()
        self.arrays: dict[str, np.ndarray] = {}
        for i in range(n):
            name_at, name_len, code, offset, count = _ENTRY.unpack_from(view, _PREFIX.size + i * _ENTRY.size)
            if name_len == 0 or name_len > MAX_NAME_BYTES or name_at + name_len > names_len:
                raise FrameError(f"section {i}: name out of bounds")
            try:
                name = names[name_at:name_at + name_len].decode("ascii")
            except UnicodeDecodeError:
                raise FrameError(f"section {i}: name is not ASCII") from None
            if code >= len(_DTYPES):
                raise FrameError(f"section {name!r}: unknown dtype code {code}")
            dtype = _DTYPES[code]
            if offset % _ALIGN or offset + count * dtype.itemsize > len(data):
                raise FrameError(f"section {name!r}: {count} items at {offset} lie outside the frame's "
                                 f"{len(data)} data bytes")
            if name in self.arrays:
                raise FrameError(f"section {name!r} repeated")
            self.arrays[name] = np.frombuffer(data, dtype=dtype, count=count, offset=offset)

    def get(self, name: str, dtype: str, count: int | None = None) -> np.ndarray:
        """Section ``name``, which must be of ``dtype`` (and ``count`` items long when given)."""
        a = self.arrays.get(name)
        if a is None:
            raise FrameError(f"frame lacks section {name!r}")
        if a.dtype != np.dtype(dtype):
            raise FrameError(f"section {name!r} is {a.dtype}, expected {np.dtype(dtype)}")
        if count is not None and a.shape[0] != count:
            raise FrameError(f"section {name!r} has {a.shape[0]} items, expected {count}")
        return a

    def offsets(self, name: str, count: int, total: int) -> list[int]:
        """``name.o``: count + 1 offsets from 0 to ``total``, never decreasing."""
        o = self.get(f"{name}.o", "<i8", count + 1)
        if o[0] != 0 or o[-1] != total or (count and bool(np.any(o[1:] < o[:-1]))):
            raise FrameError(f"section {name!r}: offsets do not cover its {total} items in order")
        return o.tolist()

    def strings(self, name: str, count: int) -> list[str]:
        """The ``count`` texts of a string column."""
        data = self.get(f"{name}.b", "<u1")
        bounds = self.offsets(name, count, data.shape[0])
        raw = data.tobytes()
        if raw.isascii():  # one decode, and byte offsets are character offsets
            text = raw.decode("ascii")
            return [text[a:b] for a, b in pairwise(bounds)]
        try:
            return [raw[a:b].decode("utf-8", "surrogatepass") for a, b in pairwise(bounds)]
        except UnicodeDecodeError:
            raise FrameError(f"section {name!r}: a text is not UTF-8") from None

    def string_lists(self, name: str, count: int) -> list[list[str]]:
        """``count`` lists of texts (``put_string_lists``)."""
        sizes = self.get(f"{name}.n", "<i8", count).tolist()
        if any(n < 0 for n in sizes):
            raise FrameError(f"section {name!r}: a negative list length")
        texts = self.strings(name, sum(sizes))  # Python ints: no overflow
        out, at = [], 0
        for n in sizes:
            out.append(texts[at:at + n])
            at += n
        return out

    def ragged(self, name: str, count: int, dtype: str) -> tuple[np.ndarray, list[int]]:
        """A ragged column: its values end to end and the count + 1 offsets of its parts."""
        values = self.get(name, dtype)
        return values, self.offsets(name, count, values.shape[0])
