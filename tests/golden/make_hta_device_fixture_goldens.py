#!/usr/bin/env python3
"""Write HTA 0.5.0's temporal and idle-time breakdowns of the Kineto fixtures of
``tests/analyses/test_device_planes_only.py`` (a Triton launcher ``cpu_op`` with a ``stream``;
``cuda_sync`` events) to ``tests/golden/hta/device_fixtures.json``.

HOW TO REGENERATE
-----------------
With a Python that has ``holistictraceanalysis==0.5.0`` (``pip install -e ".[test]"`` installs
it), from the repository root::

    python tests/golden/make_hta_device_fixture_goldens.py

Each fixture's events (listed in the test module) are written as a one-rank trace to a
temporary folder, HTA's ``TraceAnalysis`` reads it, and the script keeps exactly what
``get_temporal_breakdown()`` and ``get_idle_time_breakdown(ranks=[0])`` returned, as records.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import warnings
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "plugin"))
sys.path.insert(0, HERE)
from make_hta_goldens import _hta_version, _records  # noqa: E402
from tests import kineto_fixtures as kf  # noqa: E402
from tests.analyses.test_device_planes_only import SYNC_EVENTS, TRITON_EVENTS  # noqa: E402

FIXTURES = {"triton_launcher": TRITON_EVENTS, "cuda_sync": SYNC_EVENTS}
OUT = os.path.join(HERE, "hta", "device_fixtures.json")


def golden(events: list[dict[str, Any]]) -> dict[str, Any]:
    from hta.trace_analysis import TraceAnalysis
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with open(os.path.join(tmp, "rank0.pt.trace.json"), "w") as f:
            json.dump(kf.trace(events), f)
        analysis = TraceAnalysis(trace_dir=tmp)
        idle = analysis.get_idle_time_breakdown(ranks=[0], visualize=False)[0]
        return {"temporal_breakdown": _records(analysis.get_temporal_breakdown(visualize=False)),
                "idle_time_breakdown": _records(idle)}


def main() -> None:
    logging.disable(logging.CRITICAL)
    out = {"hta_version": _hta_version(), **{name: golden(events) for name, events in FIXTURES.items()}}
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
