"""A host's reader is imported to convert its file, and never for a host already converted: its
store comes from the disk cache, which needs neither the reader nor protobuf."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import SAMPLE_PROFILES

PLUGIN = Path(__file__).resolve().parents[2] / "plugin"

CHILD = r"""
import sys
from tbprof.service.profiles import Profiles

profiles = Profiles(sys.argv[1], cache_dir=sys.argv[2])
run = next(iter(profiles.index.runs().values()))
profiles.load_in_background(run, list(run.hosts)).join()  # as ``tbprof summary`` starts it
profiles.stores_tolerant(run, list(run.hosts))
profiles.cache.flush()
print("tbprof.readers.xplane" in sys.modules, "google.protobuf" in sys.modules)
"""


def _load(logdir: Path, cache: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(PLUGIN)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(logdir), str(cache)], capture_output=True, text=True,
                          env=env, timeout=120, check=True)
    return proc.stdout.strip()


def test_no_reader_for_a_converted_host(tmp_path: Path) -> None:
    logdir = tmp_path / "jax_mlp"
    shutil.copytree(SAMPLE_PROFILES / "jax_mlp", logdir)
    cache = tmp_path / "cache"
    assert _load(logdir, cache) == "True True"  # converted here
    assert _load(logdir, cache) == "False False"  # from the disk cache: no reader, no protobuf


STARTED = r"""
import sys
import threading
from tbprof.service.profiles import Profiles


class WhoImports:  # notes which thread imports protobuf's messages (it imports nothing itself)
    def find_spec(self, name, path=None, target=None):
        if name == "tbprof.protos.xplane_pb2":
            seen.append(threading.current_thread().name)
        return None


profiles = Profiles(sys.argv[1], cache_dir=sys.argv[2])
run = next(iter(profiles.index.runs().values()))
seen = []
start = profiles.loads.start


def recording_start(key, work):
    # Before the load's thread exists: the reader, and protobuf's messages (not the reader's import)
    seen.append(["tbprof.readers.xplane" in sys.modules, "tbprof.protos.xplane_pb2" in sys.modules])
    return start(key, work)


profiles.loads.start = recording_start
sys.meta_path.insert(0, WhoImports())
here = sys.argv[3] == "here"  # as ``tbprof summary`` starts it; else as ``tbprof sql`` does
profiles.load_in_background(run, list(run.hosts), few_planes=not here, parser_here=here).join()
print(seen)
"""


def _started(tmp_path: Path, parser: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(PLUGIN)}
    proc = subprocess.run([sys.executable, "-c", STARTED, str(SAMPLE_PROFILES / "jax_mlp"), str(tmp_path / "cache"),
                           parser], capture_output=True, text=True, env=env, timeout=120, check=True)
    return proc.stdout.strip()


def test_reader_imported_before_the_load_starts(tmp_path: Path) -> None:
    """An unconverted host's reader is imported on the caller's thread before the background load
    starts, so that the load's thread begins with the file's read and scan (outside the GIL), not
    with imports that take turns with the caller's. Protobuf's messages are not needed until the
    scan is done: the caller that asks imports them once the thread runs (``parser_here``), else
    the conversion does after its scan."""
    assert _started(tmp_path / "here", "here") == "[[True, False], 'MainThread']"
    assert _started(tmp_path / "there", "there") == "[[True, False], 'tbprof-load']"
