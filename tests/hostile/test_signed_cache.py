"""A shared cache that anyone with bucket write access could forge (issue #34, medium).

Rewriting an entry's manifest and files (with valid SHA-256s) made another user's server show
the attacker's numbers. With ``$TBPROF_CACHE_KEY`` set, manifests carry an HMAC under that key:
a forged or unsigned manifest is a miss (converted locally), a verified entry replaces it, and a
signed entry is used as before. The bucket is fsspec's in-memory filesystem; entries are made
here (an ``.npy`` column and JSON metadata, the entry's kinds of file).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from tbprof.cache.disk_cache import DiskCache
from tbprof.cache.remote_cache import KEY_ENV, RemoteCache

KEY = "k1"


def _entry(root: Path, values: np.ndarray) -> None:
    entry = root / "stores" / KEY
    entry.mkdir(parents=True)
    np.save(entry / "p0_start_ps.npy", values)
    (entry / "meta.json").write_text(json.dumps({"planes": 1}))


def _caches(tmp_path: Path, bucket: str) -> tuple[RemoteCache, RemoteCache, RemoteCache]:
    url = f"memory://{bucket}/cache"
    return tuple(RemoteCache(url, DiskCache(tmp_path / name)) for name in ("owner", "attacker", "victim"))  # type: ignore[return-value]


def _forge(attacker: RemoteCache, values: np.ndarray) -> None:
    """What a writer of the bucket without the key can do: new files, their true hashes, a manifest."""
    _entry(attacker.mirror.root, values)
    fs = MemoryFileSystem()
    base = attacker._base
    files = {}
    for name in ("meta.json", "p0_start_ps.npy"):
        data = (attacker.mirror.root / "stores" / KEY / name).read_bytes()
        fs.pipe_file(f"{base}/stores/{KEY}.parts-forged/{name}", data)
        files[name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    manifest = {"version": 1, "key": KEY, "parts": f"{KEY}.parts-forged", "files": files}
    fs.pipe_file(f"{base}/stores/{KEY}.json", json.dumps(manifest).encode())


def _downloaded(cache: RemoteCache) -> np.ndarray | None:
    if not cache._download(KEY):
        return None
    values: np.ndarray = np.load(cache.mirror.root / "stores" / KEY / "p0_start_ps.npy")
    return values


def test_forged_entry_is_not_used_and_a_signed_one_replaces_it(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "team secret")
    owner, attacker, victim = _caches(tmp_path, "forged")
    true_values = np.arange(10, dtype=np.int64)
    _forge(attacker, true_values * 1000)
    assert _downloaded(victim) is None  # unsigned: a miss, converted locally instead
    # The owner's verified entry replaces the forged manifest; the victim then reads the owner's.
    _entry(owner.mirror.root, true_values)
    assert owner.upload(KEY)
    got = _downloaded(victim)
    assert got is not None and got.tolist() == true_values.tolist()


def test_entry_signed_with_another_key_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    owner, _, victim = _caches(tmp_path, "other-key")
    monkeypatch.setenv(KEY_ENV, "another team")
    _entry(owner.mirror.root, np.arange(5, dtype=np.int64))
    assert owner.upload(KEY)
    monkeypatch.setenv(KEY_ENV, "team secret")
    assert _downloaded(victim) is None


def test_a_signed_manifest_edited_after_signing_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "team secret")
    owner, _, victim = _caches(tmp_path, "edited")
    _entry(owner.mirror.root, np.arange(5, dtype=np.int64))
    assert owner.upload(KEY)
    fs = MemoryFileSystem()
    path = f"{owner._base}/stores/{KEY}.json"
    manifest = json.loads(fs.cat_file(path))
    assert isinstance(manifest.get("hmac"), str)
    manifest["parts"] = f"{KEY}.parts-elsewhere"
    fs.pipe_file(path, json.dumps(manifest).encode())
    assert _downloaded(victim) is None


def test_without_a_key_entries_are_shared_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    owner, _, victim = _caches(tmp_path, "unsigned")
    _entry(owner.mirror.root, np.arange(3, dtype=np.int64))
    assert owner.upload(KEY)
    got = _downloaded(victim)
    assert got is not None and got.tolist() == [0, 1, 2]
