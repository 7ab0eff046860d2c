"""Shared fixtures: the small real profiles of ``demo_logs/``, copied into a temporary logdir.

Every profile a test reads is in the repository (``demo_logs/`` doubles as the tests' data,
about 12 MB, see its README), so the suite passes in a clean clone with nothing beside it.
The 60 MB ``jax_large`` benchmark file stays outside: only ``bench/`` reads it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE_PROFILES = REPO / "demo_logs"
XSPACE_PROFILES = ("keras_cnn", "custom_loop", "jax_mlp", "jax_2hosts")


@pytest.fixture(scope="session")
def profiles_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A logdir holding the small real XSpace profiles (keras_cnn, custom_loop, jax_mlp, jax_2hosts)."""
    root = tmp_path_factory.mktemp("profiles")
    for name in XSPACE_PROFILES:
        source = SAMPLE_PROFILES / name
        assert source.is_dir(), f"{source} is missing from the repository"
        shutil.copytree(source, root / name)
        _session_mtimes(root / name)
    return root


def _session_mtimes(profile: Path) -> None:
    """Files of ``plugins/profile/<YYYY_MM_DD_HH_MM_SS>/`` get their session's time as mtime, as the
    profiler wrote them: a clean clone gives every file its checkout time, and runs ordered by
    mtime (newest first, the default run) would then tie."""
    for session in profile.rglob("plugins/profile/*"):
        stamp = datetime.strptime(session.name, "%Y_%m_%d_%H_%M_%S").replace(tzinfo=UTC).timestamp()
        for f in session.iterdir():
            os.utime(f, (stamp, stamp))


def xplane_of(root: Path, name: str, host: str = "vm") -> Path:
    """The xplane file of a profile: e.g. xplane_of(profiles_root, "jax_mlp")."""
    found = sorted((root / name).rglob(f"{host}.xplane.pb"))
    assert found, f"no {host}.xplane.pb under {root / name}"
    return found[0]


@pytest.fixture(scope="session")
def sample_profiles() -> Path:
    """The read-only ``demo_logs/`` folder (tf1_timeline/, torch_cnn/, torch_ddp/ are plain folders)."""
    return SAMPLE_PROFILES


@pytest.fixture()
def cache_dir(tmp_path: Path) -> Path:
    """A fresh converted-profile cache for one test."""
    d = tmp_path / "cache"
    d.mkdir()
    return d


@pytest.fixture()
def logdir_copy(tmp_path: Path, profiles_root: Path) -> Iterator[Path]:
    """A private copy of the small profiles that a test may add broken files to."""
    d = tmp_path / "logdir"
    shutil.copytree(profiles_root, d)
    yield d


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under CI=true a skip is a failure: CI installs every test dependency, so a skipped test
    means something is missing or stopped registering, and a green run must not hide it."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true (every dependency is installed there): {reason}"
