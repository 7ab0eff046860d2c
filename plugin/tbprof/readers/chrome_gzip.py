"""Gzip-compressed Chrome traces decompressed as a stream, every member of the stream, with
bounded output per step and a bound on the whole (a gzip bomb is refused before its columns
fill memory or, streaming, the disk)."""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from tbprof.cache.memory_guard import decompressed_limit_bytes
from tbprof.errors import MemoryRefusal, ProfileReadError
from tbprof.readers.chrome_columns import Spill
from tbprof.readers.files import GZIP_MAGIC

# zlib gets this much input per step (see gunzip_windows); real files have a member or a few.
GZIP_INPUT_BYTES = 64 << 10
MAX_GZIP_MEMBERS = 4096


def gunzip_windows(raw: Iterator[bytes], source: str, out_bytes: int, spill: Spill | None = None) -> Iterator[bytes]:
    """Decompresses every gzip member of the stream, at most ``out_bytes`` per step. A gzip bomb
    is refused before its columns fill memory (or, streaming, the disk: ``spill.json_limit_bytes``).

    zlib copies the input it did not use into ``unused_data`` at a member's end: it is handed at
    most ``GZIP_INPUT_BYTES`` at a time, and at most ``MAX_GZIP_MEMBERS`` members are read, so a
    stream of many tiny members costs time linear in its length, not members x window."""
    limit = decompressed_limit_bytes() if spill is None else spill.json_limit_bytes
    total = 0
    members = 0
    d = zlib.decompressobj(wbits=31)  # 31: gzip header and trailer
    fed = False  # the current member has had input
    full = False  # the last step filled its bound: zlib may hold more output
    data = b""  # the input being read, from ``pos``
    pos = 0
    try:
        for chunk in raw:
            data = data[pos:] + chunk if pos < len(data) else chunk  # at most a byte is left over
            pos = 0
            while pos < len(data) or full:
                if d.eof:  # a member ended: another may follow (after padding)
                    pos = _skip_zeros(data, pos)
                    rest = data[pos:pos + 2]
                    if len(rest) < 2 and GZIP_MAGIC.startswith(rest):
                        break  # wait for more input
                    if not rest.startswith(GZIP_MAGIC):
                        return  # trailing garbage after the last member: ignored, as gzip(1) does
                    members += 1
                    if members >= MAX_GZIP_MEMBERS:
                        raise ProfileReadError(source, f"the gzip stream has more than {MAX_GZIP_MEMBERS:,} members")
                    d, fed = zlib.decompressobj(wbits=31), False
                with memoryview(data) as view:
                    piece = view[pos:pos + GZIP_INPUT_BYTES]
                    out = d.decompress(piece, out_bytes)
                    pos += len(piece) - len(d.unused_data if d.eof else d.unconsumed_tail)
                    piece.release()
                fed = True
                full = len(out) == out_bytes and not d.eof
                total += len(out)
                if limit is not None and total > limit:
                    if spill is not None:
                        raise MemoryRefusal(source, spill.too_much_json(limit))
                    raise MemoryRefusal(source, (
                        f"the gzip content expands beyond {limit / 1e6:.0f} MB, more than this machine can "
                        "convert now; open it on a machine with more memory, or set $TBPROF_CONVERT_MEMORY_BYTES"))
                if out:
                    yield out
        while full:
            out = d.decompress(b"", out_bytes)
            full = len(out) == out_bytes and not d.eof
            if out:
                yield out
        if fed and not d.eof:
            raise ProfileReadError(source, "the gzip stream is damaged or truncated: it ends early")
    except zlib.error as e:
        raise ProfileReadError(source, f"the gzip stream is damaged or truncated: {e}") from e


def _skip_zeros(data: bytes, pos: int) -> int:
    """The first offset from ``pos`` that is not a zero byte (gzip's padding between members),
    looked at a block at a time (no copy of the rest of ``data``)."""
    while pos < len(data):
        block = data[pos:pos + 4096]
        left = len(block.lstrip(b"\x00"))
        pos += len(block) - left
        if left:
            break
    return pos

