"""One run picking, host defaulting and table picking (service/selection.py) for http, cli and api."""

from __future__ import annotations

from pathlib import Path

import pytest

from tbprof.analyses.table import Table
from tbprof.errors import BadParameter, NotFound
from tbprof.service.logdir import Run
from tbprof.service.profiles import Profiles
from tbprof.service.selection import ALL_HOSTS, comparison_host, default_host, pick_run, pick_table, select_hosts


@pytest.fixture(scope="module")
def runs(profiles_root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    return Profiles(profiles_root, cache_dir=tmp_path_factory.mktemp("cache")).index.runs()


def _named(runs: dict[str, Run], prefix: str) -> Run:
    return next(r for n, r in runs.items() if n.startswith(prefix))


def test_pick_run_policies(runs: dict[str, Run]) -> None:
    assert len(runs) > 1
    notes: list[str] = []
    newest = pick_run(runs, None, where="logdir", several="newest", choose_with="--run", note=notes.append)
    assert newest.mtime == max(r.mtime for r in runs.values())
    assert notes and "--run" in notes[0] and repr(newest.name) in notes[0]
    with pytest.raises(BadParameter, match="choose one with --base-run"):
        pick_run(runs, None, where="logdir", choose_with="--base-run", who="baseline")
    with pytest.raises(NotFound, match="unknown baseline run 'nope'"):
        pick_run(runs, "nope", where="logdir", who="baseline")
    with pytest.raises(NotFound, match="no profiles found"):
        pick_run({}, None, where="empty")
    one = _named(runs, "jax_mlp/")
    assert pick_run({one.name: one}, None, where="logdir") is one
    assert pick_run(runs, one.name, where="logdir") is one


def test_hosts_selected_and_defaulted(runs: dict[str, Run]) -> None:
    pod = _named(runs, "jax_2hosts/")
    single = _named(runs, "jax_mlp/")
    assert select_hosts(single, None) == list(single.hosts)
    assert select_hosts(pod, ALL_HOSTS) == list(pod.hosts)
    assert select_hosts(pod, "worker1") == ["worker1"]
    with pytest.raises(BadParameter, match="several hosts; choose one with --host: worker0, worker1"):
        select_hosts(pod, None, choose_with="--host")
    with pytest.raises(NotFound, match="unknown host 'worker9'"):
        select_hosts(pod, "worker9")
    # The CLI and the API: all hosts for a tool that combines them, else the first host.
    assert default_host(pod, None, multi_host=True) == ALL_HOSTS
    assert default_host(pod, None, multi_host=False) == "worker0"
    assert default_host(pod, "worker1", multi_host=True) == "worker1"
    assert default_host(single, None, multi_host=False) is None
    # A comparison side: several hosts are not defaulted (it asks), a TF1 timeline's steps are.
    assert comparison_host(pod, None) is None
    tf1 = Run(name="t", path=Path("t"), kind="tf1_timeline", hosts={"step_1": Path("a"), "step_2": Path("b")})
    assert comparison_host(tf1, None) == ALL_HOSTS


def test_pick_table(profiles_root: Path, cache_dir: Path) -> None:
    profiles = Profiles(profiles_root, cache_dir=cache_dir)
    run = profiles.run(next(n for n in profiles.index.runs() if n.startswith("jax_mlp/")))
    result = profiles.compute(run, list(run.hosts), profiles.tool("framework_op_stats"), {})
    names = [k for k, v in result["tables"].items() if isinstance(v, Table)]
    assert pick_table(result, None, "tool 'framework_op_stats'")[0] == names[0]
    assert pick_table(result, None, "x", prefer=("nope", names[-1]))[0] == names[-1]
    with pytest.raises(NotFound, match="tool 'framework_op_stats' has no table 'nope'"):
        pick_table(result, "nope", "tool 'framework_op_stats'")
    with pytest.raises(NotFound, match="has no tables"):
        pick_table({"tables": {}}, None, "tool 'x'")
