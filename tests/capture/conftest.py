"""Fixtures of the capture tests: one real TensorFlow profiler server for the whole session."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.capture.profiler_servers import ProfilerServer, profiler_server


@pytest.fixture(scope="session")
def tf_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProfilerServer]:
    """A TensorFlow training loop serving the profiler (tf.profiler.experimental.server.start)."""
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow is not installed (pip install .[capture-test])")
    log = tmp_path_factory.mktemp("tf_server") / "server.log"
    with profiler_server("tf_training_server.py", log) as server:
        yield server


@pytest.fixture()
def logdir(tmp_path: Path) -> Path:
    d = tmp_path / "logdir"
    d.mkdir()
    return d
