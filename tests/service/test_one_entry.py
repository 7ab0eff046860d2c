"""Adding a tool is one module and one line; adding a run kind is one entry with its traits.

The throwaway tool (tests/throwaway/busiest_lines.py) is added to the tool list the way a
contributor adds one, and is then listed by the ``tools`` route, described by ``settings``,
typed in the generated TypeScript and served by ``data``; tests/e2e/test_generic_page.py sees
the generic page draw it. A throwaway run kind declares traits and is offered exactly the tools
whose needs are among them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from werkzeug.test import Client

from tbprof.http.app import create_app
from tbprof.readers.kinds import KINDS, Run, RunKind
from tbprof.readers.xplane import read_xspace
from tbprof.service import tools as registry
from tbprof.service.profiles import Profiles
from tbprof.store.traits import Trait
from tests.conftest import xplane_of
from tests.helpers import conforms, load_script
from tests.throwaway import busiest_lines


def _clear_registry() -> None:
    """The tool list is read once per process (functools.cache): read it again."""
    for value in vars(registry).values():
        if hasattr(value, "cache_clear"):
            value.cache_clear()


@pytest.fixture()
def with_throwaway_tool(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(registry, "TOOL_MODULES", (*registry.TOOL_MODULES, busiest_lines.MODULE))
    _clear_registry()
    yield
    monkeypatch.undo()
    _clear_registry()


def test_a_tool_added_in_one_module_and_one_line_is_listed_typed_and_served(
        with_throwaway_tool: None, profiles_root: Path, tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    shutil.copytree(profiles_root / "jax_mlp", logdir / "jax_mlp")
    client = Client(create_app(logdir, cache_dir=tmp_path / "cache"))
    (run,) = client.get("/runs").get_json()["runs"]
    assert "busiest_lines" in run["tools"]  # offered for its kind before conversion: it needs events
    listed = {t["name"]: t for t in client.get("/tools", query_string={"run": run["run"]}).get_json()["tools"]}
    assert listed["busiest_lines"]["title"] == "Busiest lines" and listed["busiest_lines"]["multi_host"]
    described = {t["name"]: t for t in client.get("/settings").get_json()["tools"]}["busiest_lines"]
    assert described["requires"] == "timed events on some line." and described["needs"] == ["events"]
    assert described["how_to"] == ["Any profile with events."]

    r = client.get("/data", query_string={"run": run["run"], "host": "vm", "tool": "busiest_lines"})
    assert r.status_code == 200
    answer = r.get_json()
    assert conforms(answer, busiest_lines.BusiestLinesResult) == []
    # The numbers are the file's: every event counted, each plane's longest line.
    store = read_xspace(xplane_of(logdir, "jax_mlp"))
    assert answer["event_count"] == sum(p.n_events for p in store.planes)
    table = answer["tables"]["busiest_lines"]
    got = {row[1]: (row[2], row[3]) for row in table["rows"]}
    for plane in store.planes:
        counts = [plane.line_offsets[i + 1] - plane.line_offsets[i] for i in range(plane.n_lines)]
        if counts:
            assert got[plane.name][1] == max(counts)
            assert counts[plane.line_names.index(got[plane.name][0])] == max(counts)

    ts = load_script("gen_ts_schemas").render()
    assert "export interface BusiestLinesResult extends" in ts or "export interface BusiestLinesResult {" in ts
    assert "  busiest_lines: BusiestLinesResult;" in ts
    assert "  event_count: number;" in ts[ts.index("export interface BusiestLinesResult"):]


def test_a_tool_is_offered_for_every_kind_that_has_its_needs(with_throwaway_tool: None) -> None:
    tool = registry.get("busiest_lines")
    assert tool is not None
    # It needs events: every kind but tfprof (a ProfileProto has no timeline) has them.
    assert [k for k, kind in KINDS.items() if tool.offered_for(kind.traits)] == [k for k in KINDS if k != "tfprof"]


# A new format's kind: a timeline with device streams and nothing else of what tools need
# (no framework ops, steps, allocators or producer vocabulary).
THROWAWAY_TRAITS: frozenset[Trait] = frozenset({"events", "devices"})
# The tools whose needs are among those traits, from each tool's descriptor: the trace viewer and
# the profile summary (events), and the device tools that need devices alone. host_boundness
# (steps too), gpu_utilization, collectives, stragglers and critical_path (Kineto too) are not.
MET = ["kernel_stats", "trace_viewer", "gpu_breakdown", "gpu_counters", "kernel_sequences", "collective_overlap",
       "device_time_attribution", "profile_summary"]


def test_a_run_kind_added_with_its_traits_is_offered_exactly_the_tools_whose_needs_it_meets(
        monkeypatch: pytest.MonkeyPatch, sample_profiles: Path, tmp_path: Path) -> None:
    chrome = KINDS["chrome_trace"]
    monkeypatch.setitem(KINDS, "throwaway", RunKind(chrome.store_format, chrome.reader_name, THROWAWAY_TRAITS))
    _clear_registry()
    trace = next((sample_profiles / "torch_cnn").glob("*.pt.trace.json"))
    run = Run(name="throwaway", path=trace.parent, kind="throwaway", hosts={"vm": trace})
    profiles = Profiles(tmp_path, cache_dir=tmp_path / "cache")
    assert profiles.candidate_tools(run) == MET
    # Once read (by the kind's reader), those of them with data in the file: a PyTorch CNN's GPU
    # trace has kernels, so every one of them but none beyond.
    exact = profiles.tools(run)
    assert set(exact) <= set(MET) and {"trace_viewer", "profile_summary", "gpu_breakdown"} <= set(exact)
    # The trace viewer combines hosts only where the run shares Kineto's clock: this kind does not say so.
    assert not profiles.tool("trace_viewer").multi_host_for(run.traits)
    assert profiles.tool("trace_viewer").multi_host_for(KINDS["pytorch"].traits)


def test_the_architecture_doc_lists_every_trait_with_its_kinds() -> None:
    import re

    from tbprof.store.traits import ALL_TRAITS
    from tests.conftest import REPO

    text = (REPO / "docs" / "architecture.md").read_text()
    rows = dict(re.findall(r"(?m)^\| `(\w+)` \| [^|]+ \| ([^|]+) \|$", text))
    assert set(rows) == set(ALL_TRAITS)
    for trait, kinds in rows.items():
        assert {k.strip() for k in kinds.split(",")} == {k for k, kind in KINDS.items() if trait in kind.traits}, trait
