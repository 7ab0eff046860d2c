"""Profile locations: a local ``Path``, or a ``UrlPath`` on any fsspec filesystem (``s3://``,
``gs://``, ``az://``, ``hdfs://``, ...).

Local paths stay plain ``pathlib.Path`` objects (``file://`` URLs become one), so the local case
keeps its speed and its code. A ``UrlPath`` answers the few questions discovery, the cache key
and the readers ask of a path (``name``, ``parent``, ``/``, ``relative_to``, ``stat``,
``exists``) from a *listing* shared by every path below one root: one recursive listing per
refresh fills it, so naming and stating a pod's thousand files costs no request at all (GCS
allows about 1000 list requests a minute; a stat per file would be a request per file).

Credentials and endpoints come from each backend's own environment and config (``AWS_*``
including ``AWS_ENDPOINT_URL``, ``GOOGLE_APPLICATION_CREDENTIALS``, ``STORAGE_EMULATOR_HOST``,
fsspec's config files): fsspec hands them to s3fs / gcsfs unchanged.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, Union

from tbprof.errors import ProfileReadError, StorageError

# A URL scheme as RFC 3986 spells it; a Windows drive ("C:\\") has no "//" after the colon.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")


def is_url(text: str) -> bool:
    """True for ``scheme://...`` other than ``file://`` (which is a local path)."""
    return bool(_SCHEME.match(text)) and not text.startswith("file://")


@dataclass(frozen=True)
class FileInfo:
    size_bytes: int
    mtime_ns: int  # from the listing's modification time, else derived from the ETag/generation


@dataclass(frozen=True)
class RemoteStat:
    """The ``os.stat_result`` fields tbprof reads."""

    st_size: int
    st_mtime_ns: int

    @property
    def st_mtime(self) -> float:
        return self.st_mtime_ns / 1e9


def _mtime_ns(info: dict[str, Any]) -> int:
    """Modification time from whatever the backend lists (s3fs ``LastModified``, gcsfs
    ``updated``, local ``mtime``); a backend with none gets a stable number from its version
    tag, so a rewritten object still gets a new cache key."""
    for key in ("mtime", "LastModified", "updated", "last_modified", "modified", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, datetime):
            return int(value.timestamp() * 1e9)
        if isinstance(value, (int, float)):
            return int(value * 1e9)
        if isinstance(value, str):
            try:
                return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1e9)
            except ValueError:
                continue
    tag = str(info.get("ETag") or info.get("etag") or info.get("generation") or info.get("md5Hash") or "")
    return int.from_bytes(hashlib.sha256(tag.encode()).digest()[:7], "big")


class Listing:
    """One filesystem root's files (``key -> FileInfo``), filled by one recursive listing.

    ``key`` is the backend path without the protocol (``bucket/logs/run/host.xplane.pb``).
    """

    def __init__(self, fs: Any, protocol: str) -> None:
        self.fs = fs
        self.protocol = protocol
        self.files: dict[str, FileInfo] = {}
        self._lock = threading.Lock()

    def url(self, key: str) -> str:
        return f"{self.protocol}://{key}"

    def refresh(self, root_key: str) -> dict[str, FileInfo]:
        """Lists every file below ``root_key`` in one recursive listing and keeps the result."""
        try:
            self.fs.invalidate_cache(root_key)  # ours is the one listing cache; fsspec's would hide new files
            found = self.fs.find(root_key, detail=True, withdirs=False)
        except FileNotFoundError:
            found = {}
        except Exception as e:  # backends raise their own types for auth, missing buckets, ...
            raise StorageError(self.url(root_key), f"cannot list the location: {describe_error(e)}") from e
        files = {k.rstrip("/"): FileInfo(int(v.get("size") or 0), _mtime_ns(v))
                 for k, v in found.items() if v.get("type", "file") != "directory"}
        if not files:
            self._check_bucket(root_key)
        with self._lock:
            # Keep other roots' entries (a CLI may name a file and its folder); replace this root's.
            prefix = root_key.rstrip("/") + "/"
            self.files = {k: v for k, v in self.files.items() if not (k == root_key or k.startswith(prefix))}
            self.files.update(files)
        return files

    def _check_bucket(self, root_key: str) -> None:
        """An empty listing: say so when the bucket itself is missing (backends list a missing
        bucket as nothing), instead of "no profiles found"."""
        bucket = root_key.split("/", 1)[0]
        try:
            exists = bool(self.fs.exists(bucket))
        except Exception as e:
            raise StorageError(self.url(root_key), f"cannot list the location: {describe_error(e)}") from e
        if not exists:
            raise StorageError(self.url(root_key), f"the bucket {bucket!r} does not exist (or these credentials "
                               "cannot see it)")

    def remember(self, key: str, info: FileInfo) -> None:
        """A file's info learnt elsewhere (the server's listing, handed to a worker)."""
        with self._lock:
            self.files[key] = info

    def info(self, key: str) -> FileInfo | None:
        with self._lock:
            hit = self.files.get(key)
        if hit is not None:
            return hit
        try:
            raw = self.fs.info(key)
        except FileNotFoundError:
            return None
        except Exception as e:
            raise StorageError(self.url(key), f"cannot read the location: {describe_error(e)}") from e
        if raw.get("type") == "directory":
            return None
        info = FileInfo(int(raw.get("size") or 0), _mtime_ns(raw))
        with self._lock:
            self.files[key] = info
        return info

    def is_dir(self, key: str) -> bool:
        prefix = key.rstrip("/") + "/"
        with self._lock:
            if any(k.startswith(prefix) for k in self.files):
                return True
        try:
            return bool(self.fs.isdir(key))
        except Exception as e:
            raise StorageError(self.url(key), f"cannot read the location: {describe_error(e)}") from e


def describe_error(e: BaseException) -> str:
    """A one-line reason from a backend error (botocore, google-auth, aiohttp, OSError)."""
    text = str(e).strip() or type(e).__name__
    if isinstance(e, PermissionError):
        return f"permission denied ({text}); check the credentials (AWS_*, GOOGLE_APPLICATION_CREDENTIALS)"
    return f"{type(e).__name__}: {text}".splitlines()[0][:500]


Location = Union[Path, "UrlPath"]


class UrlPath:
    """A file or folder on an fsspec filesystem, named like a ``Path`` (see the module doc)."""

    __slots__ = ("_key", "listing")

    def __init__(self, key: str, listing: Listing) -> None:
        self._key = key.rstrip("/") if key not in ("", "/") else key
        self.listing = listing

    # --- naming ---------------------------------------------------------------------------
    @property
    def key(self) -> str:
        return self._key

    @property
    def name(self) -> str:
        return self._key.rsplit("/", 1)[-1]

    @property
    def parent(self) -> UrlPath:
        head = self._key.rsplit("/", 1)[0] if "/" in self._key else self._key
        return UrlPath(head, self.listing)

    def __truediv__(self, other: str) -> UrlPath:
        return UrlPath(f"{self._key}/{other}", self.listing)

    def __str__(self) -> str:
        return self.listing.url(self._key)

    def __repr__(self) -> str:
        return f"UrlPath({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, UrlPath) and other._key == self._key
                and other.listing.protocol == self.listing.protocol)

    def __hash__(self) -> int:
        return hash((self.listing.protocol, self._key))

    def as_posix(self) -> str:
        return str(self)

    def resolve(self) -> UrlPath:
        return self

    def relative_to(self, other: Location) -> PurePosixPath:
        if not isinstance(other, UrlPath):
            raise ValueError(f"{self} is not below {other}")
        if self == other:
            return PurePosixPath(".")
        prefix = other._key + "/"
        if not self._key.startswith(prefix):
            raise ValueError(f"{self} is not below {other}")
        return PurePosixPath(self._key[len(prefix):])

    def is_relative_to(self, other: Location) -> bool:
        if not isinstance(other, UrlPath):
            return False
        return self == other or self._key.startswith(other._key + "/")

    # --- the filesystem -------------------------------------------------------------------
    def stat(self) -> RemoteStat:
        info = self.listing.info(self._key)
        if info is None:
            raise FileNotFoundError(str(self))
        return RemoteStat(info.size_bytes, info.mtime_ns)

    def is_file(self) -> bool:
        return self.listing.info(self._key) is not None

    def is_dir(self) -> bool:
        return self.listing.is_dir(self._key)

    def exists(self) -> bool:
        return self.is_file() or self.is_dir()

    def probe_file(self) -> bool:
        """Whether the object exists now, asking the backend (not the listing, nor fsspec's own
        listing cache): for a file another program writes while we wait for it."""
        try:
            self.listing.fs.invalidate_cache(self._key)
            return bool(self.listing.fs.isfile(self._key))
        except Exception:
            return False

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the object: one ranged GET (a streaming conversion's window)."""
        try:
            data = self.listing.fs.cat_file(self._key, start=start, end=end)
        except FileNotFoundError as e:
            raise ProfileReadError(str(self), "the file does not exist (deleted since it was listed?)") from e
        except Exception as e:
            raise StorageError(str(self), f"cannot read the file: {describe_error(e)}") from e
        return bytes(data) if not isinstance(data, bytes) else data

    def current_size(self) -> int:
        """The object's size now (one request; ``stat`` answers from the listing)."""
        try:
            return int(self.listing.fs.info(self._key)["size"])
        except FileNotFoundError as e:
            raise ProfileReadError(str(self), "the file does not exist (deleted since it was listed?)") from e
        except Exception as e:
            raise StorageError(str(self), f"cannot read the file: {describe_error(e)}") from e

    def read_bytes(self) -> bytes:
        """The whole object in one (streamed) GET into one ``bytes``: no second full copy."""
        try:
            data = self.listing.fs.cat_file(self._key)
        except FileNotFoundError as e:
            raise ProfileReadError(str(self), "the file does not exist (deleted since it was listed?)") from e
        except Exception as e:
            raise StorageError(str(self), f"cannot read the file: {describe_error(e)}") from e
        return bytes(data) if not isinstance(data, bytes) else data


def relative_posix(path: Location, root: Location) -> str:
    """``path`` below ``root`` as a POSIX path (``.`` for the root itself); ValueError if not below."""
    if isinstance(path, UrlPath):
        return path.relative_to(root).as_posix()
    if not isinstance(root, Path):
        raise ValueError(f"{path} is not below {root}")
    return path.relative_to(root).as_posix()


def is_below(path: Location, root: Location) -> bool:
    if isinstance(path, UrlPath):
        return path.is_relative_to(root)
    return isinstance(root, Path) and path.is_relative_to(root)

# Listings by (protocol, filesystem), least recently used first. Keyed by the filesystem object
# itself (fsspec hashes and compares one by its options), never by ``id()``: an id is reused once
# its object is gone, which would hand one bucket's listing to another. Bounded in count: a
# listing evicted here stays alive in the locations that still hold it, and a new location of
# that filesystem starts a fresh one.
MAX_LISTINGS = 16
_LISTINGS: OrderedDict[tuple[str, Any], Listing] = OrderedDict()
_LISTINGS_LOCK = threading.Lock()


def filesystem(url: str) -> tuple[Any, str]:
    """(fsspec filesystem, path without protocol) of a URL; a clear error when the backend's
    package is missing (``pip install "tbprof[remote]"``)."""
    try:
        import fsspec
    except ImportError as e:
        raise ProfileReadError(url, 'reading URLs needs fsspec: pip install "tbprof[remote]"') from e
    try:
        fs, key = fsspec.core.url_to_fs(url)
    except ImportError as e:
        raise ProfileReadError(url, f'no filesystem for this URL is installed ({e}); '
                               'pip install "tbprof[remote]"') from e
    except (ValueError, TypeError) as e:
        raise ProfileReadError(url, f"not a usable URL: {e}") from e
    return fs, key


def location(text: str | Path | UrlPath) -> Location:
    """A ``Path`` for local paths and ``file://`` URLs, a ``UrlPath`` for other URLs."""
    if isinstance(text, (Path, UrlPath)):
        return text
    if text.startswith("file://"):
        return Path(text[len("file://"):])
    if not is_url(text):
        return Path(text)
    fs, key = filesystem(text)
    protocol = text.split("://", 1)[0]
    # One listing per filesystem instance: fsspec caches instances by their options, so two
    # URLs of one bucket share the listing (and its files' sizes and times).
    with _LISTINGS_LOCK:
        listing = _LISTINGS.get((protocol, fs))
        if listing is None:
            listing = _LISTINGS[(protocol, fs)] = Listing(fs, protocol)
            while len(_LISTINGS) > MAX_LISTINGS:
                _LISTINGS.popitem(last=False)
        else:
            _LISTINGS.move_to_end((protocol, fs))
    return UrlPath(key, listing)


def walk_listing(root: UrlPath) -> dict[UrlPath, list[str]]:
    """Folders below ``root`` with their file names, from one recursive listing.

    Hidden folders (a component starting with ``.``) are skipped, as the local walk does.
    """
    files = root.listing.refresh(root.key)
    by_folder: dict[str, list[str]] = {}
    prefix = root.key + "/"
    for key in files:
        if not key.startswith(prefix):
            continue
        rel = key[len(prefix):]
        if any(part.startswith(".") for part in rel.split("/")[:-1]):
            continue
        folder, _, name = key.rpartition("/")
        by_folder.setdefault(folder, []).append(name)
    return {UrlPath(k, root.listing): sorted(v) for k, v in sorted(by_folder.items())}


def shown_name(name: str) -> str:
    """A file or folder name as text: POSIX names are bytes, and one that is not UTF-8 comes
    from ``os.walk`` with surrogate escapes, which no JSON encoder, URL or terminal takes
    (one such file would empty the run list). Each undecodable byte is shown as
    ``\\xNN``; run and host names are looked up in the discovered map, never decoded back."""
    if name.isascii():
        return name
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
