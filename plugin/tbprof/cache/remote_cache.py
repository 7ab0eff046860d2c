"""A converted-profile cache on an fsspec URL (``--cache-dir s3://bucket/tbprof-cache``), shared by
a team and by Dask workers on other machines.

It is a tier over a local ``DiskCache`` (the *mirror*, under the user cache dir): stores are
read from the mirror (memory-mapped, as any local entry); a mirror miss downloads the entry,
validates it and moves it into the mirror; a save writes the mirror first, then uploads.

Object stores have no rename, so an entry is committed by its manifest:

1. every file of the entry goes under a fresh prefix ``stores/<key>.parts-<random>/``;
2. then ``stores/<key>.json`` (one PUT: atomic on S3 and GCS) names that prefix and every
   file's size and SHA-256.

A reader trusts only a manifest, downloads the files it names and checks each size and hash,
so a crashed or concurrent writer never yields a half entry (parts without a manifest are
ignored; two writers of one key both write complete entries and the last manifest wins).
Only non-executable files travel: ``.npy`` (loaded with ``allow_pickle=False``) and ``.json``;
an entry holding anything else (a pickle) is neither uploaded nor downloaded, since any writer
of a shared bucket could plant one.

Hashes only prove that the files are the ones the manifest names; anyone who can write to the
bucket can write a manifest too (the key is computable from a listing). With a team secret in
``$TBPROF_CACHE_KEY`` every manifest carries an HMAC-SHA256 of its text under that secret: a
reader uses only a manifest whose HMAC verifies (a forged or unsigned one is a miss: the file is
converted locally), and a writer replaces a manifest that does not verify with its own. Without
the secret, a shared cache trusts every writer of the bucket (docs/remote.md says so).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import shutil
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from tbprof.cache.disk_cache import DiskCache, locked_temp_folder
from tbprof.fs import describe_error, filesystem

log = logging.getLogger("tbprof")

MANIFEST_VERSION = 1
_SAFE_SUFFIXES = (".npy", ".json")
MAX_MANIFEST_BYTES = 1 << 20  # a manifest lists a few hundred files; anything larger is not ours
ABSENT_TTL_S = 30.0
MAX_KNOWN_KEYS = 16384  # ~100 bytes each: about 2 MB at most


KEY_ENV = "TBPROF_CACHE_KEY"
_HMAC_CONTEXT = b"tbprof cache manifest v1\n"


def cache_secret() -> bytes | None:
    """The team secret of ``$TBPROF_CACHE_KEY`` (None: unset, manifests are not authenticated)."""
    raw = os.environ.get(KEY_ENV, "")
    return raw.encode("utf-8") if raw else None


def _manifest_text(manifest: dict[str, Any]) -> bytes:
    body = {k: v for k, v in manifest.items() if k != "hmac"}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def sign_manifest(manifest: dict[str, Any], secret: bytes) -> dict[str, Any]:
    mac = hmac.new(secret, _HMAC_CONTEXT + _manifest_text(manifest), hashlib.sha256).hexdigest()
    return {**manifest, "hmac": mac}


def manifest_verifies(manifest: dict[str, Any], secret: bytes | None) -> bool:
    """True without a secret (nothing to check); else the manifest's HMAC matches its text."""
    if secret is None:
        return True
    got = manifest.get("hmac")
    if not isinstance(got, str):
        return False
    want = sign_manifest(manifest, secret)["hmac"]
    return hmac.compare_digest(got.encode(), want.encode())


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class RemoteCache:
    """``has`` / ``load`` / ``save`` as ``DiskCache``, over a URL and a local mirror."""

    def __init__(self, url: str, mirror: DiskCache) -> None:
        self.url = url.rstrip("/")
        self.mirror = mirror
        self.root = mirror.root  # where the server's memory-mapped columns live
        self.fs, self._base = filesystem(self.url)
        self._known: OrderedDict[str, tuple[bool, float]] = OrderedDict()  # key -> (present, when)
        self._lock = threading.Lock()

    def _manifest_key(self, key: str) -> str:
        return f"{self._base}/stores/{key}.json"

    # --- reading --------------------------------------------------------------------------
    def has(self, key: str) -> bool:
        """In the mirror, or committed remotely. Remote answers are remembered (a present entry
        for good, an absent one for ``ABSENT_TTL_S``), so listing runs asks once per host, not
        once per host per request."""
        if self.mirror.has(key):
            return True
        now = time.monotonic()
        with self._lock:
            known = self._known.get(key)
            if known is not None and (known[0] or now - known[1] < ABSENT_TTL_S):
                self._known.move_to_end(key)
                return known[0]
        try:
            present = bool(self.fs.exists(self._manifest_key(key)))
        except Exception:
            present = False
        with self._lock:
            self._known[key] = (present, now)
            while len(self._known) > MAX_KNOWN_KEYS:
                self._known.popitem(last=False)
        return present

    def load(self, key: str) -> Any:
        store = self.mirror.load(key)
        if store is not None:
            return store
        if not self._download(key):
            return None
        return self.mirror.load(key)

    def _read_manifest(self, key: str) -> dict[str, Any] | None:
        try:
            raw = self.fs.cat_file(self._manifest_key(key), start=0, end=MAX_MANIFEST_BYTES + 1)
        except FileNotFoundError:
            return None
        except Exception as e:
            log.warning("tbprof: cache %s unreadable (%s); converting locally", self.url, describe_error(e))
            return None
        if len(raw) > MAX_MANIFEST_BYTES:
            return None
        try:
            manifest = json.loads(raw)
        except ValueError:
            return None
        ok = (isinstance(manifest, dict) and manifest.get("version") == MANIFEST_VERSION
              and manifest.get("key") == key and isinstance(manifest.get("parts"), str)
              and isinstance(manifest.get("files"), dict))
        if ok and not manifest_verifies(manifest, cache_secret()):
            log.warning("tbprof: cache entry %s of %s is not signed with $%s's key; converting locally",
                        key, self.url, KEY_ENV)
            return None
        return manifest if ok else None

    def _download(self, key: str) -> bool:
        """Fetches and validates the entry into the mirror; False (a miss) on anything amiss."""
        manifest = self._read_manifest(key)
        if manifest is None:
            return False
        parts: str = manifest["parts"]
        if "/" in parts or not parts.startswith(f"{key}.parts-"):
            return False
        files: dict[str, Any] = manifest["files"]
        stores = self.mirror.root / "stores"
        try:
            stores.mkdir(parents=True, exist_ok=True)
            writing = locked_temp_folder(stores, f".{key}.dl-")  # an orphan only once we are gone
            tmp = writing.__enter__()
        except OSError:
            return False
        try:
            for name, spec in files.items():
                # Names are plain file names of safe kinds; sizes and hashes must match.
                if (not isinstance(name, str) or "/" in name or name.startswith(".")
                        or not name.endswith(_SAFE_SUFFIXES) or not isinstance(spec, dict)):
                    return False
                target = tmp / name
                self.fs.get_file(f"{self._base}/stores/{parts}/{name}", str(target))
                if target.stat().st_size != spec.get("size") or _sha256(target) != spec.get("sha256"):
                    log.warning("tbprof: cache entry %s/%s failed validation; converting locally", parts, name)
                    return False
            entry = stores / key
            if entry.exists():
                return True  # another thread or process got it first
            os.replace(tmp, entry)
        except Exception as e:
            log.warning("tbprof: cache entry %s not downloaded (%s)", key, describe_error(e))
            return False
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
            writing.__exit__(None, None, None)
        self.mirror.committed(key)  # the mirror is bounded like any local cache
        return True

    # --- writing --------------------------------------------------------------------------
    def save(self, key: str, store: Any) -> None:
        self.mirror.save(key, store)
        self.upload(key)

    def upload(self, key: str) -> bool:
        """Uploads the mirror's entry ``key`` and commits it with its manifest; True when the
        remote cache holds it afterwards."""
        entry = self.mirror.root / "stores" / key
        if not entry.is_dir():
            return False
        names = sorted(p.name for p in entry.iterdir())
        if not names or not all(n.endswith(_SAFE_SUFFIXES) for n in names):
            # An entry format with executable parts (pickle) stays on this machine.
            return False
        try:
            # An entry already there is kept unless it does not verify (unsigned or forged):
            # then this writer's verified entry replaces it.
            if self.fs.exists(self._manifest_key(key)) and self._read_manifest(key) is not None:
                return True
            parts = f"{key}.parts-{secrets.token_hex(8)}"
            files: dict[str, dict[str, Any]] = {}
            for name in names:
                local = entry / name
                self.fs.put_file(str(local), f"{self._base}/stores/{parts}/{name}")
                files[name] = {"size": local.stat().st_size, "sha256": _sha256(local)}
            manifest: dict[str, Any] = {"version": MANIFEST_VERSION, "key": key, "parts": parts, "files": files}
            secret = cache_secret()
            if secret is not None:
                manifest = sign_manifest(manifest, secret)
            # The commit: one object written last. Readers never see the parts before it.
            self.fs.pipe_file(self._manifest_key(key), json.dumps(manifest, sort_keys=True).encode())
        except Exception as e:  # an unwritable shared cache only costs speed
            log.warning("tbprof: could not write %s to the cache %s (%s)", key, self.url, describe_error(e))
            return False
        with self._lock:
            self._known[key] = (True, time.monotonic())
        return True


def open_disk_cache(cache_dir: str | Path, mirror_root: Path) -> DiskCache | RemoteCache:
    """The disk cache of ``--cache-dir``: a local folder, or a URL over a local mirror."""
    from tbprof.fs import is_url

    if isinstance(cache_dir, str) and is_url(cache_dir):
        digest = hashlib.sha256(cache_dir.encode()).hexdigest()[:16]
        return RemoteCache(cache_dir, DiskCache(mirror_root / "remote" / digest))
    return DiskCache(Path(cache_dir[len("file://"):] if isinstance(cache_dir, str) and
                          cache_dir.startswith("file://") else cache_dir))
