"""``Profiles.load_in_background`` of one host: the reader is imported on the caller's thread
before the load starts (a load thread importing it would share the GIL with the caller's own
imports, and the scan would start later), and never for a host already converted (whose store
needs neither the reader nor protobuf)."""

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
from tbprof.service.background import BackgroundLoads
from tbprof.service.profiles import Profiles

start = BackgroundLoads.start
seen = []

def recording(self, key, load):
    seen.append("tbprof.readers.xplane" in sys.modules)  # before the load's thread runs
    return start(self, key, load)

BackgroundLoads.start = recording
profiles = Profiles(sys.argv[1], cache_dir=sys.argv[2])
run = next(iter(profiles.index.runs().values()))
profiles.load_in_background(run, list(run.hosts)).join()
profiles.stores_tolerant(run, list(run.hosts))
profiles.cache.flush()
print(seen[0], "tbprof.readers.xplane" in sys.modules, "google.protobuf" in sys.modules)
"""


def _load(logdir: Path, cache: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(PLUGIN)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(logdir), str(cache)], capture_output=True, text=True,
                          env=env, timeout=120, check=True)
    return proc.stdout.strip()


def test_the_reader_loads_before_the_thread_and_not_for_a_converted_host(tmp_path: Path) -> None:
    logdir = tmp_path / "jax_mlp"
    shutil.copytree(SAMPLE_PROFILES / "jax_mlp", logdir)
    cache = tmp_path / "cache"
    assert _load(logdir, cache) == "True True True"  # converted: the reader was there before the thread
    assert _load(logdir, cache) == "False False False"  # from the disk cache: no reader, no protobuf
