"""What a profile file is: the one detector from a file's first bytes to a run kind.

Producers name files every way (``rank-0.json.gz``, ``trace.json`` from ``export_chrome_trace``,
HTA's outputs, ``x.trace.json.gz``, a TF1 timeline saved under any name), so the content decides
wherever it can: ``kind_of_head`` tells an XSpace, a Kineto (PyTorch) trace, a TF1 timeline, a
tfprof timeline and any other Chrome trace apart from the first bytes (gzip or plain; an XSpace
plain, as its readers take it). The name is a hint only where the bytes leave the kind open: a
plain Chrome trace named as a step file (``timeline-3.json``, ``x.pt.trace.json``) keeps the
kind its name gives, and a file whose head is unreadable keeps its name's kind, so that opening
it says what is wrong. Files whose names say a binary protobuf (``*.xplane.pb``, tfprof's
``profile.pb`` / ``profile_<step>``) are taken by name without reading them: protobuf has no
magic bytes to confirm, and a pod's thousands of host files are not read to list them (their
readers report a file that is not what its name says).

``file_kind`` is that detector for one file; folders (readers/kinds.py) and single paths
(service/logdir.runs_for_path) both use it. Only the head is read (``HEAD_BYTES`` of the file,
decompressed up to ``HEAD_TEXT_BYTES`` for a gzip member), once per (file, size, mtime): a
listing refresh re-reads nothing it has seen. The tests are plain substring searches and one
protobuf tag walk: linear in the head, no pattern engine.
"""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict

from tbprof.errors import ProfileReadError, StorageError
from tbprof.fs import Location, UrlPath
from tbprof.readers.files import GZIP_MAGIC, head_bytes
from tbprof.readers.step_files import json_host, name_hint
from tbprof.store.kineto_names import MARKER_CATEGORIES

KINETO = "pytorch"
CHROME_TRACE = "chrome_trace"
XSPACE = "xspace"
TF1_TIMELINE = "tf1_timeline"
TFPROF_TIMELINE = "tfprof_timeline"
XPLANE_SUFFIX = ".xplane.pb"
CHROME_TRACE_SUFFIXES = (".trace.json.gz", ".trace.json")
JSON_ENDINGS = (".json", ".json.gz")

HEAD_BYTES = 64 << 10
HEAD_TEXT_BYTES = 256 << 10
_MEMO_ENTRIES = 4096  # (path, size, mtime) -> kind: a few hundred bytes each

# Top-level keys only Kineto writes beside ``traceEvents``.
_KINETO_KEYS = (b'"schemaVersion"', b'"deviceProperties"', b'"distributedInfo"', b'"baseTimeNanoseconds"',
                b'"trace_id"', b'"cupti_version"', b'"roctracer_version"')
_CAT_KEY = b'"cat"'
# tensorflow.python.client.timeline names its first process "Allocators", then one
# "<device> Compute" (and "<device> Tensors") per device.
_TF1_PROCESSES = (b'"Allocators"',)
_TF1_DEVICE_PROCESS = (b' Compute"', b' Tensors"')
# tfprof's timeline (tfprof_timeline.cc) names its processes after the device's threads.
_TFPROF_PROCESSES = (b'"Op scheduling threads: ', b'"Op execution threads: ')
# XPlane's fields (1 id, 2 name, 3 lines, 4 event metadata, 5 stat metadata, 6 stats) as tags.
_XPLANE_TAGS = (0x08, 0x12, 0x1A, 0x22, 0x2A, 0x32)


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


def _varint(data: bytes, i: int) -> tuple[int, int]:
    """(value, next index) of the protobuf varint at ``i``; (-1, i) when it runs off the data."""
    value = shift = 0
    while i < len(data) and shift < 64:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i += 1
        if byte < 0x80:
            return value, i
        shift += 7
    return -1, i


def _is_xspace(data: bytes) -> bool:
    """Whether ``data`` opens as a serialized XSpace: its first field is a plane (tag 1,
    length-delimited) that opens with an XPlane field, and a plane name, when it comes first
    after the id, is text. A tfprof ``ProfileProto`` opens with the same tag (its node map),
    but the map entry's second field is a node message, whose first byte is tag 1 (0x0A)."""
    if data[:1] != b"\x0a":
        return False
    size, i = _varint(data, 1)
    if size <= 0 or i >= len(data) or data[i] not in _XPLANE_TAGS:
        return False
    if data[i] == 0x08:  # the plane id, then usually its name
        _, i = _varint(data, i + 1)
        if i >= len(data) or data[i] not in _XPLANE_TAGS[1:]:
            return False
    if data[i] != 0x12:
        return True
    length, i = _varint(data, i + 1)
    name = data[i : i + min(max(length, 0), 256)]
    if length < 0 or name[:1] == b"\x0a":
        return False
    try:
        return name.decode("utf-8").isprintable()
    except UnicodeDecodeError:
        return False


def kind_of_head(raw: bytes) -> str | None:
    """The run kind the first bytes of a file (gzip or plain) show: ``XSPACE``, ``KINETO``,
    ``TF1_TIMELINE``, ``TFPROF_TIMELINE``, ``CHROME_TRACE``, or None (none of them)."""
    text = _text_head(raw)
    body = text.lstrip()
    if body[:1] not in (b"{", b"["):
        return XSPACE if _is_xspace(raw) else None  # plain bytes only: the XSpace readers take no gzip
    is_object = body[:1] == b"{"
    has_events = b'"traceEvents"' in text
    if is_object and any(key in text for key in _KINETO_KEYS) and (has_events or b'"displayTimeUnit"' in text):
        return KINETO
    if not has_events and (is_object or b'"ph"' not in text):
        return None
    if any(c.lower() in MARKER_CATEGORIES for c in _categories(text)):
        return KINETO
    if any(p in text for p in _TF1_PROCESSES) and any(p in text for p in _TF1_DEVICE_PROCESS):
        return TF1_TIMELINE
    if any(p in text for p in _TFPROF_PROCESSES):
        return TFPROF_TIMELINE
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


def file_kind(folder: Location, name: str) -> tuple[str, str] | None:
    """(run kind, host) of the file ``name`` in ``folder``, or None when it is no profile: the
    one detector (module docstring). Names of the binary formats decide without a read; every
    other name that may hold a profile (JSON, or a name of the text step formats) is read and
    decided by content."""
    if name.endswith(XPLANE_SUFFIX) and len(name) > len(XPLANE_SUFFIX):
        return XSPACE, name[: -len(XPLANE_SUFFIX)]
    named = name_hint(name)
    if named is not None and named[0] == "tfprof":
        return named
    if not name.endswith(JSON_ENDINGS) and named is None:
        return None
    content = sniff(folder / name)
    if content in (None, CHROME_TRACE) and named is not None:
        return named  # the bytes leave it open: the name says which step format
    if content is None:
        # An unreadable or garbled file with a trace's name stays a run: opening it says what is wrong.
        named_trace = name.endswith(CHROME_TRACE_SUFFIXES) and len(name) > len(".trace.json")
        return (CHROME_TRACE, json_host(name)) if named_trace else None
    if named is not None and named[0] == content:
        return named
    return content, json_host(name) if name.endswith(JSON_ENDINGS) else name
