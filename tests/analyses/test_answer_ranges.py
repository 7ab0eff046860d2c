"""No answer of any tool holds a negative time, a percent outside 0-100 or a fraction outside 0-1.

The walker runs every tool each run lists (its default options and the option VARIANTS of
test_result_types.py), on every host (all at once for a multi-host tool, each alone otherwise),
on every profile of demo_logs/, every fixture of tests/data/ and a serving host's XSpace (the
only source of inference_profile), plus ``compare`` of each run with the next one of its
folder (all hosts a side), and checks every number of
the answer -- every key of every object and every cell of every table -- by what its name (or,
in a table, its column's unit) says it is:

* a **time** (a name ending in ``_ps``, ``_ns``, ``_us``, ``_ms``, ``_s``, ``_sec`` or
  ``_seconds``, or a column in ``ps``/``ns``/``us``/``ms``/``s``) is at least 0;
* a **percent** (a name ending in ``_percent``, ``_pct`` or ``percent``, a ``_percent_of_…``
  name, or a column in ``%``) lies in [0, 100];
* a **fraction** (a name ending in ``_fraction`` or ``_ratio``, or named ``fraction``/``ratio``)
  lies in [0, 1].

A name that is a difference between two things (``delta``, ``diff``, ``change``, ``shift``:
compare's answers, signed on purpose) is neither, nor is anything inside an object so named
(compare's ``step_time.change``: the shift and its confidence interval, in ms and percent). null and NaN are "not
determined" and pass. Stores are converted once into one cache for the whole module.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.analyses.table import Table
from tbprof.service.api import Profile
from tbprof.service.comparisons import SideSpec, compare_pair
from tbprof.service.profiles import Profiles
from tbprof.service.selection import ALL_HOSTS
from tests.analyses.test_result_types import VARIANTS
from tests.conftest import REPO, SAMPLE_PROFILES
from tests.helpers import write_serving_xspace

TIME_SUFFIXES = ("_ps", "_ns", "_us", "_ms", "_s", "_sec", "_seconds")
TIME_UNITS = frozenset(("ps", "ns", "us", "µs", "ms", "s"))
PERCENT_SUFFIXES = ("_percent", "_pct", "percent")
FRACTION_SUFFIXES = ("_fraction", "_ratio")
SIGNED_WORDS = ("delta", "diff", "change", "shift")

# Findings whose cause lies in another engineer's area (issue #33's other sections), expected
# to fail until their branch is merged: (run, tool, field) -> why. The lead removes each entry
# once the branch that fixes it is in; a listed finding that no longer occurs fails the test.
KNOWN: dict[tuple[str, str, str], str] = {}


def _kind(name: str, unit: str = "") -> str | None:
    """"time", "percent", "fraction" or None, from a field's name (and its column's unit)."""
    low = name.lower()
    if any(w in low for w in SIGNED_WORDS):
        return None
    if unit == "%" or low.endswith(PERCENT_SUFFIXES) or "_percent_of_" in low:
        return "percent"
    if low.endswith(FRACTION_SUFFIXES) or low in ("fraction", "ratio"):
        return "fraction"
    if unit in TIME_UNITS or low.endswith(TIME_SUFFIXES):
        return "time"
    return None


def _bad(kind: str, value: float) -> bool:
    if kind == "time":
        return value < 0
    if kind == "percent":
        return not 0 <= value <= 100 + 1e-9
    return not 0 <= value <= 1 + 1e-12


def _numbers(value: Any) -> Iterator[float]:
    """The numbers of a value (a number, or a list / array of them)."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float, np.integer, np.floating)):
        yield float(value)
    elif isinstance(value, np.ndarray) and value.dtype.kind in "iuf":
        yield from (float(v) for v in value.ravel().tolist())
    elif isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
                yield float(v)


def findings(result: Any, path: str = "") -> Iterator[tuple[str, str, float]]:
    """(field path, field name, value) of every number out of its name's range."""
    if isinstance(result, Table):
        for col in result.columns:
            kind = _kind(col.name, col.unit)
            if kind is None:
                continue
            for v in _numbers(np.asarray(result.data[col.name]) if col.kind != "str" else []):
                if not math.isnan(v) and _bad(kind, v):
                    yield f"{path}[{col.name}]", col.name, v
        return
    if isinstance(result, dict):
        for key, value in result.items():
            sub = f"{path}.{key}" if path else str(key)
            if any(w in str(key).lower() for w in SIGNED_WORDS):
                continue
            kind = _kind(str(key))
            if kind is not None:
                for v in _numbers(value):
                    if not math.isnan(v) and _bad(kind, v):
                        yield sub, str(key), v
            if isinstance(value, (dict, list, tuple, Table)):
                yield from findings(value, sub)
    elif isinstance(result, (list, tuple)):
        for i, value in enumerate(result):
            if isinstance(value, (dict, list, tuple, Table)):
                yield from findings(value, f"{path}[{i}]")


def _answers(roots: list[Path], cache_dir: Path) -> Iterator[tuple[str, str, Any]]:
    for root in roots:
        profiles = Profiles(root, cache_dir=cache_dir)
        for run in profiles.index.runs().values():
            profile = Profile(profiles, run)
            for name in profile.tools():
                tool = profiles.tool(name)
                host_sets = [None] if tool.multi_host_for(run.traits) or len(run.hosts) == 1 else sorted(run.hosts)
                for host in host_sets:
                    for options in [{}, *VARIANTS.get(name, [])]:
                        yield f"{root.name}/{run.name}", name, profile.tool(name, host=host, **options)
        names = sorted(profiles.index.runs())
        for base, cand in zip(names, names[1:] + names[:1], strict=True):
            yield (f"{root.name}/{base} vs {cand}", "compare",
                   compare_pair(profiles, SideSpec(base, ALL_HOSTS), SideSpec(cand, ALL_HOSTS)))


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, str], list[tuple[str, float]]]:
    out: dict[tuple[str, str, str], list[tuple[str, float]]] = {}
    tools_run = 0
    serving = tmp_path_factory.mktemp("serving")
    write_serving_xspace(serving / "serve" / "plugins" / "profile" / "s1" / "host0.xplane.pb")
    roots = [SAMPLE_PROFILES, REPO / "tests" / "data", serving]
    for run, tool, result in _answers(roots, tmp_path_factory.mktemp("cache")):
        tools_run += 1
        for where, field, value in findings(result):
            out.setdefault((run, tool, field), []).append((where, value))
    assert tools_run > 100  # every demo profile and fixture answered
    return out


def test_no_answer_holds_a_negative_time_or_a_share_out_of_range(
        found: dict[tuple[str, str, str], list[tuple[str, float]]]) -> None:
    unexpected = {k: v[:3] for k, v in found.items() if k not in KNOWN}
    assert unexpected == {}


def test_every_known_finding_still_occurs(found: dict[tuple[str, str, str], list[tuple[str, float]]]) -> None:
    assert sorted(k for k in KNOWN if k not in found) == []


@pytest.mark.parametrize(("name", "unit", "kind"), [
    ("idle_time_us", "", "time"), ("x", "ms", "time"), ("step_time_ms_avg", "", None),
    ("device_idle_percent", "", "percent"), ("share", "%", "percent"), ("tensor_core_utilization_percent_of_x", "",
                                                                           "percent"),
    ("idle_time_ratio", "", "fraction"), ("fraction", "", "fraction"), ("delta_us", "", None),
    ("compute_time_diff_percent", "", None), ("name", "", None), ("count", "", None),
])
def test_field_rule(name: str, unit: str, kind: str | None) -> None:
    assert _kind(name, unit) == kind


def test_the_walker_finds_what_it_should() -> None:
    # Not vacuous: a negative time, a percent over 100 and a fraction over 1, in a key, in a
    # nested list and in a table cell, are each found; good values are not.
    from tbprof.analyses.table import Column

    table = Table.from_columns([Column("gap_us", "Gap", "float", "us"), Column("share", "Share", "float", "%")],
                               {"gap_us": [1.0, -2.0], "share": [50.0, 101.0]})
    answer = {"idle_time_us": -1.0, "rows": [{"x_ratio": 1.5, "ok_percent": 100.0}], "tables": {"t": table},
              "fine_ms": 0.0, "none_percent": None, "nan_us": float("nan"),
              "change": {"shift_ms": -3.0, "ci_low_percent": -20.0}}
    assert sorted((w, v) for w, _, v in findings(answer)) == [
        ("idle_time_us", -1.0), ("rows[0].x_ratio", 1.5), ("tables.t[gap_us]", -2.0), ("tables.t[share]", 101.0)]
