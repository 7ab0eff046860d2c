"""``tbprof summary`` is the ``profile_summary`` tool's headline: on every demo run the summary's
fields (less the run's name, hosts and unreadable hosts it adds) are the tool's ``headline``, and a
pod summarised from its per-host partials says what the tool says from the stores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.encode import to_json_bytes
from tbprof.service.executor import InProcess
from tbprof.service.profiles import Profiles
from tbprof.service.summary import summary

REPO = Path(__file__).resolve().parents[2]
DEMOS = sorted(p.name for p in (REPO / "demo_logs").iterdir() if p.is_dir())
ADDED = ("run", "hosts", "host_errors")


def _plain(value: Any) -> Any:
    return json.loads(to_json_bytes(value))


def _tool_headline(profiles: Profiles, run_name: str) -> dict[str, Any]:
    run = profiles.index.get(run_name)
    assert run is not None
    return _plain(profiles.compute(run, list(run.hosts), profiles.tool("profile_summary"), {})["headline"])


@pytest.mark.parametrize("demo", DEMOS)
def test_summary_is_the_tools_headline(demo: str, tmp_path: Path) -> None:
    profiles = Profiles(REPO / "demo_logs" / demo, cache_dir=tmp_path)
    runs = profiles.index.runs()
    assert runs
    for name, run in runs.items():
        got = _plain(summary(profiles, run))
        assert got["run"] == name and got["hosts"] == sorted(run.hosts)
        if "tfprof_nodes" in got:  # a tfprof run: a graph without events, which the tool does not read
            assert got["event_count"] == 0 and got["tfprof_nodes"] > 0
            continue
        assert {k: v for k, v in got.items() if k not in ADDED} == _tool_headline(profiles, name)


def test_a_pods_summary_from_partials_is_the_headline_from_stores(profiles_root: Path, tmp_path: Path) -> None:
    pod = Profiles(profiles_root / "jax_2hosts", cache_dir=tmp_path / "pod", executor=InProcess(2))
    run = next(iter(pod.index.runs().values()))
    views = pod.views(run, list(run.hosts))
    assert views.partials and len(views.hosts) == 2
    from_partials = _plain(summary(pod, run))

    class StoresOnly(Profiles):
        def host_partials(self, run: Any, hosts: Any, parts: Any = None) -> None:
            return None

    stores = StoresOnly(profiles_root / "jax_2hosts", cache_dir=tmp_path / "stores")
    assert not stores.views(run, list(run.hosts)).partials
    assert {k: v for k, v in from_partials.items() if k not in ADDED} == _tool_headline(stores, run.name)
    assert from_partials["host_count"] == 2 and from_partials["step_count"] > 0
