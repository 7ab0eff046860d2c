"""What a JSON profile file is, from its first bytes: a PyTorch (Kineto) trace, another Chrome
trace, or neither. Producers name files every way (``rank-0.json.gz``, ``trace.json`` from
``export_chrome_trace``, HTA's outputs, ``x.trace.json.gz``), so the name only says which files
are worth a look; the content decides.

Only the head is read (``HEAD_BYTES`` of the file, decompressed up to ``HEAD_TEXT_BYTES`` for a
gzip member), once per (file, size, mtime): a listing refresh re-reads nothing it has seen.
The tests are plain substring searches: linear in the head, no pattern engine.
"""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict

from tbprof.errors import ProfileReadError, StorageError
from tbprof.fs import Location, UrlPath
from tbprof.readers.files import GZIP_MAGIC, head_bytes
from tbprof.store.kineto_names import MARKER_CATEGORIES

KINETO = "pytorch"
CHROME_TRACE = "chrome_trace"

HEAD_BYTES = 64 << 10
HEAD_TEXT_BYTES = 256 << 10
_MEMO_ENTRIES = 4096  # (path, size, mtime) -> kind: a few hundred bytes each

# Top-level keys only Kineto writes beside ``traceEvents``.
_KINETO_KEYS = (b'"schemaVersion"', b'"deviceProperties"', b'"distributedInfo"', b'"baseTimeNanoseconds"',
                b'"trace_id"', b'"cupti_version"', b'"roctracer_version"')
_CAT_KEY = b'"cat"'


def _text_head(raw: bytes) -> bytes:
    if raw[:2] != GZIP_MAGIC:
        return raw
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, HEAD_TEXT_BYTES)
    except zlib.error:
        return b""


def _categories(text: bytes, limit: int = 64) -> set[str]:
    """The values of the first ``limit`` ``"cat": "..."`` pairs of the head."""
    out: set[str] = set()
    at = text.find(_CAT_KEY)
    while at >= 0 and len(out) < limit:
        i = at + len(_CAT_KEY)
        while i < len(text) and text[i] in b" \t\r\n":
            i += 1
        if i < len(text) and text[i : i + 1] == b":":
            i += 1
            while i < len(text) and text[i] in b" \t\r\n":
                i += 1
            if i < len(text) and text[i : i + 1] == b'"':
                end = text.find(b'"', i + 1, i + 80)
                if end > 0:
                    out.add(text[i + 1 : end].decode("utf-8", "replace"))
        at = text.find(_CAT_KEY, i)
    return out


def kind_of_head(raw: bytes) -> str | None:
    """``KINETO``, ``CHROME_TRACE`` or None for the first bytes of a file (gzip or plain)."""
    text = _text_head(raw)
    body = text.lstrip()
    if body[:1] not in (b"{", b"["):
        return None
    is_object = body[:1] == b"{"
    has_events = b'"traceEvents"' in text
    if is_object and any(key in text for key in _KINETO_KEYS) and (has_events or b'"displayTimeUnit"' in text):
        return KINETO
    if not has_events and (is_object or b'"ph"' not in text):
        return None
    if any(c.lower() in MARKER_CATEGORIES for c in _categories(text)):
        return KINETO
    return CHROME_TRACE


class _Memo:
    """Bounded (path, size, mtime) -> kind memo shared by every listing of the process."""

    def __init__(self) -> None:
        self._items: OrderedDict[tuple[str, int, float], str | None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, int, float]) -> tuple[bool, str | None]:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return True, self._items[key]
            return False, None

    def put(self, key: tuple[str, int, float], kind: str | None) -> None:
        with self._lock:
            self._items[key] = kind
            while len(self._items) > _MEMO_ENTRIES:
                self._items.popitem(last=False)


_MEMO = _Memo()


def sniff(path: Location) -> str | None:
    """The kind of the JSON profile at ``path`` (None: not a trace, or unreadable)."""
    try:
        st = path.stat()
        key = (str(path), int(getattr(st, "st_size", 0) or 0), float(st.st_mtime))
    except (OSError, ProfileReadError, ValueError):
        return None
    hit, kind = _MEMO.get(key)
    if hit:
        return kind
    try:
        if isinstance(path, UrlPath):
            raw = path.read_range(0, min(HEAD_BYTES, key[1]))
        else:
            raw = head_bytes(path, HEAD_BYTES)
    except (OSError, ProfileReadError, StorageError):
        return None
    kind = kind_of_head(raw)
    _MEMO.put(key, kind)
    return kind
