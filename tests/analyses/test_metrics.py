"""The headline metrics' one table (analyses/metrics.py, #29 §1): every tool that reports a
metric reports the same value for it on the same profile, and no two metrics share a name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tbprof.analyses.gpu import breakdown as gpu_breakdown
from tbprof.analyses.metrics import BY_KEY, METRICS, metric_json, percent
from tbprof.analyses.ops import framework_op_stats, op_profile
from tbprof.analyses.overview import overview, smart_suggestion
from tbprof.readers.xplane import read_xspace
from tests.conftest import xplane_of


def test_names_say_their_denominator_and_are_unique() -> None:
    assert len({(m.label, m.of) for m in METRICS}) == len(METRICS) == len(BY_KEY)
    for m in METRICS:
        assert m.of.startswith("of ") and m.definition.endswith(".")
    with pytest.raises(KeyError):
        metric_json("no_such_metric", 1.0)
    assert percent(1.0, 0.0) is None and metric_json("device_idle_of_step_time", float("nan"))["value_percent"] is None


def test_tools_report_one_value_per_metric(profiles_root: Path) -> None:
    stores = [read_xspace(xplane_of(profiles_root, "jax_mlp"))]
    seen: dict[str, set[float | None]] = {}
    for tool in (overview, framework_op_stats, op_profile, smart_suggestion, gpu_breakdown):
        for m in tool.compute(stores, {})["metrics"]:
            assert m == metric_json(m["key"], m["value_percent"])  # label, denominator, tooltip from the table
            seen.setdefault(m["key"], set()).add(m["value_percent"])
    assert all(len(v) == 1 for v in seen.values()), seen
    assert {"device_idle_of_step_time", "device_idle_of_device_time", "device_idle_of_kernel_timeline",
            "host_idle_of_thread_time", "collectives_of_device_op_time"} <= set(seen)
    # The op-time idle from framework op stats' own device totals (span minus op time).
    dev = framework_op_stats.compute(stores, {})["sides"]["device"]
    (idle,) = seen["device_idle_of_device_time"]
    assert idle == pytest.approx(100 * dev["idle_time_us"] / dev["total_time_us"])
