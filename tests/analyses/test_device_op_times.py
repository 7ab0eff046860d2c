"""The device ops' times without the HLO cost analysis (``op_metrics.DEVICE_OP_TIMES``), what
``tbprof summary`` reads: the device op table's ops, occurrences and times exactly, its FLOPs
and bytes not determined; a pod worker building the headline's parts runs no cost analysis,
and a partial holding the full table serves the times too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tbprof.analyses import partials
from tbprof.analyses.ops import op_metrics
from tbprof.analyses.ops.op_time import op_times
from tbprof.analyses.overview.headline import TOP_OPS, headline
from tbprof.analyses.partial_formats import HEADLINE_PARTS
from tbprof.domain import hlo_cost
from tbprof.readers.xplane import read_xspace
from tbprof.service.profiles import Profiles
from tbprof.store.tables import ProfileStore

DEMO = Path(__file__).resolve().parents[2] / "demo_logs"
# Every demo profile with device ops: XLA on GPU and TPU (HLO programs), TensorFlow GPU kernels,
# PyTorch (Kineto) and a TF1 timeline (no HLO), and a CPU-only one (no device ops).
PROFILES = ("jax_2hosts", "jax_mlp", "tpu_inference", "keras_cnn", "custom_loop", "torch_cnn", "torch_ddp",
            "tf1_timeline")
_SAME = ("name", "type", "provenance", "program_id", "occurrences", "time_ps", "self_time_ps", "is_eager")


def _stores(name: str, cache: Path) -> list[ProfileStore]:
    profiles = Profiles(DEMO / name, cache_dir=cache)
    run = next(iter(profiles.index.runs().values()))
    stores = [profiles.store(run, h) for h in run.hosts]
    assert all(isinstance(s, ProfileStore) for s in stores)
    return [s for s in stores if isinstance(s, ProfileStore)]


def _assert_times_of(times: op_metrics.OpMetricsDb, full: op_metrics.OpMetricsDb) -> None:
    for col in _SAME:
        assert np.array_equal(getattr(times, col), getattr(full, col)), col
    assert times.total_time_ps == full.total_time_ps
    assert np.isnan(times.flops).all() and np.isnan(times.bytes_accessed).all() and np.isnan(times.hbm).all()


@pytest.mark.parametrize("name", PROFILES)
def test_times_are_the_device_tables_times(name: str, tmp_path: Path) -> None:
    stores = _stores(name, tmp_path)
    for store in stores:
        _assert_times_of(op_metrics.device_op_times(store), op_metrics.device_op_metrics(store))
    # Over the hosts and grouped by framework op (the summary's top ops): the same ops, in the
    # same order, with the same self times and occurrences as the table with costs.
    for side in ("device", "host"):
        with_costs, times = op_times(stores, side), op_times(stores, side, costs=False)
        for col in ("name", "type", "occurrences", "self_time_ps", "time_ps", "is_eager"):
            assert np.array_equal(getattr(times, col), getattr(with_costs, col)), (side, col)
        assert times.total_op_time_ps == with_costs.total_op_time_ps
        if side == "device":
            assert np.isnan(times.flops).all()
    head = headline(stores)
    ops = op_times(stores, head["top_ops_side"])
    assert head["top_ops"] == [{"name": str(ops.name[i]), "type": str(ops.type[i]),
                                "self_time_us": float(ops.self_time_ps[i]) / 1e6,
                                "occurrences": int(ops.occurrences[i])} for i in range(min(TOP_OPS, ops.n_ops))]


def test_headline_parts_run_no_hlo_cost_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    """jax_2hosts' hosts have HLO programs with device ops: the headline's parts of their
    partials are built with the cost analysis refused, and the whole partial does run it."""
    calls: list[str] = []
    for fn in ("hlo_op_flops", "hlo_op_bytes"):
        real = getattr(hlo_cost, fn)

        def counted(*args: object, _real: object = real, _fn: str = fn) -> object:
            calls.append(_fn)
            return _real(*args)  # type: ignore[operator]

        monkeypatch.setattr(hlo_cost, fn, counted)  # op_metrics imports them where it runs the analysis
    paths = sorted((DEMO / "jax_2hosts").rglob("*.xplane.pb"))
    assert len(paths) == 2
    for path in paths:
        lean = partials.build_partial(read_xspace(path), None, HEADLINE_PARTS)
        assert set(lean["carried"]) == HEADLINE_PARTS and lean["carried"]["device_op_times"]
    assert calls == []
    full = partials.build_partial(read_xspace(paths[0]), ["overview_page"])
    assert "hlo_op_flops" in calls and "hlo_op_bytes" in calls
    # The full partial sends the table once: its times are implied.
    assert "device_ops" in full["carried"] and "device_op_times" not in full["carried"]


def test_a_partial_with_the_device_table_serves_the_times() -> None:
    path = sorted((DEMO / "jax_2hosts").rglob("*.xplane.pb"))[0]
    store = read_xspace(path)
    blob = partials.encode_partials([partials.build_partial(store, [])])
    part = partials.partial_from_bytes(blob)
    assert part.parts() == partials.ALL_PARTS and part.holds(HEADLINE_PARTS)
    _assert_times_of(op_metrics.device_op_times(part), op_metrics.device_op_metrics(store))
    lean = partials.partial_from_bytes(partials.encode_partials([partials.build_partial(store, None, HEADLINE_PARTS)]))
    assert "device_ops" not in lean.parts()
    with pytest.raises(LookupError):
        op_metrics.device_op_metrics(lean)
    _assert_times_of(op_metrics.device_op_times(lean), op_metrics.device_op_metrics(store))


@pytest.mark.parametrize("name", ["jax_2hosts", "tpu_inference", "keras_cnn"])
def test_a_store_with_its_table_derived_takes_the_times_from_it(name: str) -> None:
    for path in sorted((DEMO / name).rglob("*.xplane.pb")):
        fresh, warmed = read_xspace(path), read_xspace(path)
        full = op_metrics.device_op_metrics(warmed)
        assert warmed.has_derived(op_metrics.DEVICE_OPS) and not fresh.has_derived(op_metrics.DEVICE_OPS)
        computed = op_metrics.device_op_times(fresh)
        assert not fresh.has_derived(op_metrics.DEVICE_OPS)  # computed without the full table
        taken = op_metrics.device_op_times(warmed)
        assert taken.name is full.name  # taken from it, not computed again
        _assert_times_of(computed, full)
        _assert_times_of(taken, full)
