"""A converted-profile cache on S3 (moto's server): entries are committed by a manifest written
last, validated on read (size and SHA-256 of every file), and only non-executable files travel."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import xplane_of
from tests.remote.conftest import S3

pytestmark = pytest.mark.slow


def _entry(root: Path, key: str) -> Path:
    """A hand-made entry of the safe kinds (an ``.npy`` column and JSON metadata)."""
    entry = root / "stores" / key
    entry.mkdir(parents=True)
    np.save(entry / "p0_start_ps.npy", np.arange(1000, dtype=np.int64) * 7)
    (entry / "meta.json").write_text(json.dumps({"planes": 1}))
    return entry


def _caches(s3: S3, tmp_path: Path, bucket: str) -> tuple[object, object]:
    from tbprof.cache.disk_cache import DiskCache
    from tbprof.cache.remote_cache import RemoteCache

    s3.fs.mkdir(bucket)  # type: ignore[attr-defined]
    url = f"s3://{bucket}/tbprof-cache"
    return (RemoteCache(url, DiskCache(tmp_path / "mirror_a")), RemoteCache(url, DiskCache(tmp_path / "mirror_b")))


def test_commit_download_and_validation(s3: S3, tmp_path: Path) -> None:
    from tbprof.cache.remote_cache import RemoteCache

    writer, reader = _caches(s3, tmp_path, "cache-commit")
    assert isinstance(writer, RemoteCache) and isinstance(reader, RemoteCache)
    source = _entry(writer.mirror.root, "k1")
    assert not reader.has("k1")
    assert writer.upload("k1")
    # Parts go under a fresh prefix, then the manifest: a reader sees the committed entry only.
    listed = sorted(p.rsplit("/", 1)[-1] for p in s3.fs.find("cache-commit/tbprof-cache"))  # type: ignore[attr-defined]
    assert listed == ["k1.json", "meta.json", "p0_start_ps.npy"]
    reader._known.clear()
    assert reader.has("k1")
    assert reader._download("k1")
    got = reader.mirror.root / "stores" / "k1"
    assert np.array_equal(np.load(got / "p0_start_ps.npy"), np.load(source / "p0_start_ps.npy"))
    assert (got / "meta.json").read_text() == (source / "meta.json").read_text()

    # A part changed after the commit (a bad upload, a tampering writer): the entry is a miss.
    manifest = json.loads(s3.fs.cat_file("cache-commit/tbprof-cache/stores/k1.json"))  # type: ignore[attr-defined]
    s3.fs.pipe_file(f"cache-commit/tbprof-cache/stores/{manifest['parts']}/meta.json",  # type: ignore[attr-defined]
                    b'{"planes": 2}')
    fresh = RemoteCache(writer.url, type(writer.mirror)(tmp_path / "mirror_c"))
    assert not fresh._download("k1")
    assert not (tmp_path / "mirror_c" / "stores" / "k1").exists()


def test_uncommitted_parts_and_hostile_manifests_are_misses(s3: S3, tmp_path: Path) -> None:
    writer, reader = _caches(s3, tmp_path, "cache-hostile")
    fs = s3.fs
    base = "cache-hostile/tbprof-cache/stores"
    # A writer that died after its parts, before its manifest: nothing to read.
    fs.pipe_file(f"{base}/k2.parts-0001/meta.json", b"{}")  # type: ignore[attr-defined]
    assert not reader._download("k2")  # type: ignore[attr-defined]
    # Manifests pointing outside the entry, or at a pickle, are refused before any download.
    for parts, name in (("../k2.parts-0001", "meta.json"), ("k2.parts-0001", "meta.pkl"),
                        ("k2.parts-0001", "../../x.npy")):
        manifest = {"version": 1, "key": "k2", "parts": parts, "files": {name: {"size": 2, "sha256": "0"}}}
        fs.pipe_file(f"{base}/k2.json", json.dumps(manifest).encode())  # type: ignore[attr-defined]
        assert not reader._download("k2")  # type: ignore[attr-defined]
    fs.pipe_file(f"{base}/k2.json", b"not json")  # type: ignore[attr-defined]
    assert not reader._download("k2")  # type: ignore[attr-defined]
    # An entry holding a pickle never leaves the machine.
    entry = _entry(writer.mirror.root, "k3")  # type: ignore[attr-defined]
    (entry / "meta.pkl").write_bytes(b"\x80\x04.")
    assert not writer.upload("k3")  # type: ignore[attr-defined]
    assert not fs.exists(f"{base}/k3.json")  # type: ignore[attr-defined]


def test_profile_cache_on_a_url(s3: S3, profiles_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real store through ``ProfileCache(cache_dir="s3://...")``: shared when the store format
    is made of safe files only, kept local when it holds a pickle."""
    from tbprof.cache.profile_cache import ProfileCache
    from tbprof.readers.xplane import read_xspace

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg_a"))  # the local mirror
    s3.fs.mkdir("cache-store")  # type: ignore[attr-defined]
    url = "s3://cache-store/shared"
    path = xplane_of(profiles_root, "jax_mlp")
    first = ProfileCache(cache_dir=url)
    store = first.get(path, read_xspace)
    first.flush()
    entries = list((tmp_path / "xdg_a").rglob("stores/*"))
    assert len(entries) == 1
    safe = all(p.suffix in (".npy", ".json") for p in entries[0].iterdir())
    uploaded = bool(s3.fs.find("cache-store/shared/stores"))  # type: ignore[attr-defined]
    assert uploaded == safe
    if safe:
        # Another machine (a fresh mirror) opens it without converting.
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg_b"))
        second = ProfileCache(cache_dir=url)

        def must_not_convert(_: object) -> object:
            raise AssertionError("converted again instead of reading the shared cache")

        again = second.get(path, must_not_convert)
        assert np.array_equal(again.planes[0].start_ps, store.planes[0].start_ps)
