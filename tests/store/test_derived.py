"""Derived values kept with a store in the disk cache: the event grouping survives a reopen
equal to a fresh computation, and an entry whose kept values are damaged or hostile is
recomputed, never trusted."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tbprof.cache.profile_cache import ProfileCache
from tbprof.domain import event_groups as eg
from tbprof.readers import xplane
from tbprof.service.profiles import persist_derived
from tbprof.store.tables import ProfileStore
from tests.conftest import xplane_of


def _assert_same_groups(a: eg.EventGroups, b: eg.EventGroups, n_planes: int) -> None:
    assert (a.n_groups, a.group_names) == (b.n_groups, b.group_names)
    for name in ("root_plane", "root_row", "root_is_implicit"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for i in range(n_planes):
        assert np.array_equal(a.group_of[i], b.group_of[i]), i


def _reopen(path: Path, cache_dir: Path) -> ProfileStore:
    first = ProfileCache(cache_dir, before_save=persist_derived)
    first.get(path, xplane.read_xspace)
    first.flush()

    def must_not_convert(p: Path) -> ProfileStore:
        raise AssertionError("the entry should have been reopened")

    store = ProfileCache(cache_dir).get(path, must_not_convert)
    assert isinstance(store, ProfileStore)
    return store


# jax_mlp: a GPU run (the host plane kept sparse); keras_cnn: a CPU run (every event grouped).
@pytest.mark.parametrize("name", ["jax_mlp", "keras_cnn"])
def test_kept_grouping_equals_a_fresh_one(profiles_root: Path, tmp_path: Path, name: str) -> None:
    path = xplane_of(profiles_root, name)
    store = _reopen(path, tmp_path / "cache")
    assert eg.PERSISTED_NAME in store.derived
    kept = eg.from_persisted(store)
    assert kept is not None
    fresh = eg.compute_groups(xplane.read_xspace(path))
    assert fresh.n_groups > 0
    _assert_same_groups(kept, fresh, len(store.planes))
    # and it is what the analyses get
    assert eg.event_groups(store) is not None and eg.event_groups(store).n_groups == fresh.n_groups


def test_a_kept_grouping_that_does_not_fit_is_recomputed(profiles_root: Path, tmp_path: Path) -> None:
    path = xplane_of(profiles_root, "jax_mlp")
    store = _reopen(path, tmp_path / "cache")
    value = store.derived[eg.PERSISTED_NAME]
    # A row beyond its plane, a names list of the wrong length, a dense column of the wrong size.
    sparse = next(i for i, k in enumerate(value["json"]["parts"]) if k == "sparse")
    bad_rows = dict(value["arrays"])
    bad_rows[f"p{sparse}_rows"] = np.array([10**9], np.int64)
    bad_rows[f"p{sparse}_groups"] = np.array([0], np.int64)
    for broken in ({"arrays": bad_rows, "json": value["json"]},
                   {"arrays": value["arrays"], "json": {**value["json"], "names": []}},
                   {"arrays": {}, "json": value["json"]},
                   {"arrays": value["arrays"], "json": "not a dict"}):
        store.derived[eg.PERSISTED_NAME] = broken
        assert eg.from_persisted(store) is None
    store.derived.clear()
    assert eg.event_groups(store).n_groups == eg.compute_groups(xplane.read_xspace(path)).n_groups


def test_hostile_derived_index_names_no_file_outside_the_entry(profiles_root: Path, tmp_path: Path) -> None:
    """meta.json's index of kept values names files: names with anything but [a-z0-9_] are
    skipped, so an edited entry cannot make the cache read ``../../elsewhere.npy``."""
    path = xplane_of(profiles_root, "custom_loop")
    cache_dir = tmp_path / "cache"
    _reopen(path, cache_dir)
    entry = next((cache_dir / "stores").iterdir())
    outside = tmp_path / "secret.npy"
    np.save(outside, np.arange(3))
    meta = json.loads((entry / "meta.json").read_text())
    meta["derived"] = {"../x": {"arrays": ["a"], "json": None},
                       "ok": {"arrays": ["../../../secret"], "json": None},
                       "fine": {"arrays": ["a"], "json": {"n": 1}}}
    np.save(entry / "d_fine_a.npy", np.arange(2))
    (entry / "meta.json").write_text(json.dumps(meta))
    store = ProfileCache(cache_dir).get(path, xplane.read_xspace)
    assert isinstance(store, ProfileStore)
    assert set(store.derived) == {"fine"}
    assert store.derived["fine"]["arrays"]["a"].tolist() == [0, 1]
