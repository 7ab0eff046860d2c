"""The committed tfprof goldens are what TensorFlow's profiler produces today (slow: imports TF)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLE_PROFILES
from tests.tfprof_data import GOLDEN

pytestmark = pytest.mark.slow


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="TensorFlow is not installed")
def test_goldens_regenerate_identically(tmp_path: Path) -> None:
    env = dict(os.environ, TBPROF_SAMPLE_PROFILES=str(SAMPLE_PROFILES))
    subprocess.run([sys.executable, str(REPO / "tests" / "golden" / "make_tfprof_goldens.py"), "--out",
                    str(tmp_path)], check=True, env=env, capture_output=True, timeout=600)
    for name in ("tfprof_views.json", "tfprof_advice.json", "tfprof_timeline_graph.json",
                 "tfprof_timeline_scope.json", "tfprof_timeline_code.json", "tfprof_pprof_code.json"):
        fresh = json.loads((tmp_path / name).read_text())
        committed = json.loads((GOLDEN / name).read_text())
        assert fresh == committed, name
