"""Shared fixtures: the real profiles of ../shared/profiles, unpacked once per session."""

from __future__ import annotations

import os
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_PROFILES = Path(os.environ.get("TBPROF_SHARED_PROFILES", REPO.parent / "shared" / "profiles"))
SMALL_ARCHIVES = ("keras_cnn", "custom_loop", "jax_mlp", "jax_2hosts")


def _unpack(name: str, dest: Path) -> Path:
    archive = SHARED_PROFILES / f"{name}.tar.gz"
    if not archive.is_file():
        pytest.skip(f"{archive} is missing")
    target = dest / name
    if not target.exists():
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
    return target


@pytest.fixture(scope="session")
def profiles_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A logdir holding the small real profiles (keras_cnn, custom_loop, jax_mlp, jax_2hosts)."""
    root = tmp_path_factory.mktemp("profiles")
    for name in SMALL_ARCHIVES:
        _unpack(name, root)
    return root


@pytest.fixture(scope="session")
def jax_large_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """jax_large (60.7 MB xplane, 2.06 M events), unpacked once."""
    return _unpack("jax_large", tmp_path_factory.mktemp("large"))


def xplane_of(root: Path, name: str, host: str = "vm") -> Path:
    """The xplane file of a profile: e.g. xplane_of(profiles_root, "jax_mlp")."""
    found = sorted((root / name).rglob(f"{host}.xplane.pb"))
    assert found, f"no {host}.xplane.pb under {root / name}"
    return found[0]


@pytest.fixture(scope="session")
def shared_profiles() -> Path:
    """The read-only ../shared/profiles folder (tf1_timeline/, torch_cnn/ are plain folders)."""
    return SHARED_PROFILES


@pytest.fixture()
def cache_dir(tmp_path: Path) -> Path:
    """A fresh converted-profile cache for one test (the numba code cache stays shared)."""
    d = tmp_path / "cache"
    d.mkdir()
    return d


@pytest.fixture()
def logdir_copy(tmp_path: Path, profiles_root: Path) -> Iterator[Path]:
    """A private copy of the small profiles that a test may add broken files to."""
    d = tmp_path / "logdir"
    shutil.copytree(profiles_root, d)
    yield d
