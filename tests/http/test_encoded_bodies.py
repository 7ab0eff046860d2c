"""One JSON encoder (analyses/encode.py) for HTTP, the CLI and the memoised bodies; the bodies of
tool results and comparisons are memoised by the edge (http/responses.py) under the result's own
key, in the byte budget, and nothing else is cached on the way out."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from tbprof.analyses.encode import to_json_bytes
from tbprof.http import responses
from tbprof.http.app import create_app
from tbprof.service.comparisons import SideSpec, compare_pair, compared
from tbprof.service.profiles import Profiles
from tbprof.store.memo import Memo, MemoryBudget

API = "/data/plugin/tbprof/"


def _run(profiles: Profiles, prefix: str) -> str:
    return next(n for n in profiles.index.runs() if n.startswith(prefix))


@pytest.mark.parametrize("tool", ["overview_page", "framework_op_stats", "kernel_stats", "profile_summary"])
def test_indented_json_is_the_compact_json_reindented(profiles_root: Path, cache_dir: Path, tool: str) -> None:
    """The CLI's indented output used to be the compact encoding parsed and dumped again: the
    one encoder's indent gives the same text without the round trip."""
    profiles = Profiles(profiles_root, cache_dir=cache_dir)
    run = profiles.run(_run(profiles, "jax_mlp/"))
    result = profiles.compute(run, list(run.hosts), profiles.tool(tool), {})
    want = json.dumps(json.loads(to_json_bytes(result)), indent=1)
    assert to_json_bytes(result, indent=1).decode() == want


def _charged(budget: MemoryBudget) -> dict[Any, int]:
    return {k: size for (_, k), (_, size) in budget._lru.items() if isinstance(k, tuple)}


def test_a_results_bodies_are_memoised_in_the_budget(profiles_root: Path, cache_dir: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The edge keeps a tool result's JSON body and that body gzipped under the result's memo key:
    a repeated request encodes nothing."""
    budget = MemoryBudget(1 << 40)
    monkeypatch.setattr(responses, "_BODIES", Memo(budget))
    encodings: list[object] = []
    real = responses.to_json_bytes

    def counting(result: Any, *args: Any, **kwargs: Any) -> bytes:
        encodings.append(result)
        return real(result, *args, **kwargs)

    monkeypatch.setattr(responses, "to_json_bytes", counting)
    app = create_app(profiles_root, cache_dir=cache_dir)
    client = Client(app)
    profiles = app.ctx.profiles
    run = profiles.run(_run(profiles, "jax_mlp/"))
    q = {"run": run.name, "tool": "framework_op_stats"}
    plain = client.get(API + "data", query_string=q)
    zipped = client.get(API + "data", query_string=q, headers={"Accept-Encoding": "gzip"})
    assert plain.status_code == 200 and zipped.headers["Content-Encoding"] == "gzip"
    result, key = profiles.computed(run, list(run.hosts), profiles.tool("framework_op_stats"), {})
    assert plain.data == real(result) and gzip.decompress(zipped.data) == plain.data
    assert _charged(budget) == {("json", key): len(plain.data), ("gzip", key): len(zipped.data)}
    assert len(encodings) == 1
    for headers in ({}, {"Accept-Encoding": "gzip"}):
        client.get(API + "data", query_string=q, headers=headers)
    assert len(encodings) == 1  # lookups, not encodings
    # Evicted like any value: a budget too small for two keeps only the newest.
    budget.max_bytes = len(zipped.data)
    client.get(API + "data", query_string={**q, "tool": "kernel_stats"})
    assert ("gzip", key) not in {k for (_, k) in budget._lru}


def test_compare_bodies_are_memoised_under_the_pairs_key(profiles_root: Path, cache_dir: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    budget = MemoryBudget(1 << 40)
    monkeypatch.setattr(responses, "_BODIES", Memo(budget))
    app = create_app(profiles_root, cache_dir=cache_dir)
    client = Client(app)
    profiles = app.ctx.profiles
    run = _run(profiles, "jax_mlp/")
    base, cand = SideSpec(run), SideSpec(run, steps="5:7")
    q = {"base_run": run, "run": run, "steps": "5:7"}
    plain = client.get(API + "compare", query_string=q)
    zipped = client.get(API + "compare", query_string=q, headers={"Accept-Encoding": "gzip"})
    result, key = compared(profiles, base, cand)
    assert result is compare_pair(profiles, base, cand)
    assert plain.data == to_json_bytes(result) and gzip.decompress(zipped.data) == plain.data
    assert _charged(budget) == {("json", ("compare", key)): len(plain.data),
                                ("gzip", ("compare", key)): len(zipped.data)}


def test_http_answers_use_the_memoised_body_and_cache_nothing_else(profiles_root: Path, cache_dir: Path) -> None:
    app = create_app(profiles_root, cache_dir=cache_dir)
    client = Client(app)
    profiles = app.ctx.profiles
    run = _run(profiles, "jax_mlp/")
    q = {"run": run, "tool": "framework_op_stats"}
    plain = client.get(API + "data", query_string=q)
    assert plain.status_code == 200
    assert plain.data == to_json_bytes(profiles.compute(profiles.run(run), [next(iter(profiles.run(run).hosts))],
                                                        profiles.tool("framework_op_stats"), {}))
    zipped = client.get(API + "data", query_string=q, headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip" and gzip.decompress(zipped.data) == plain.data
    # A listing is encoded for its request and not kept: the budget holds no new value after ten
    # of them. The budget is the process's, shared with what other tests left, whose values may
    # go meanwhile: only additions count.
    budget = responses._BODIES.budget
    assert client.get(API + "runs").status_code == 200
    profiles.warmups.wait()  # the warm-ups a listing of converted runs starts fill the budget too
    before = budget.keys()
    for _ in range(10):
        assert client.get(API + "runs").status_code == 200
    profiles.warmups.wait()
    assert budget.keys() - before == set()


def test_a_repeated_request_keys_its_hosts_once(profiles_root: Path, cache_dir: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A result's memo key stats every host file of the run (store/disk_cache.cache_key): a data
    request takes it once, for the result and both of its bodies."""
    from tbprof.service import profiles as profiles_mod

    app = create_app(profiles_root, cache_dir=cache_dir)
    client = Client(app)
    run = _run(app.ctx.profiles, "jax_2hosts/")
    q = {"run": run, "tool": "framework_op_stats", "host": "__all__"}
    assert client.get(API + "data", query_string=q, headers={"Accept-Encoding": "gzip"}).status_code == 200
    calls: list[object] = []
    real = profiles_mod.cache_key

    def counting(path: Path, extra: str = "") -> str:
        calls.append(path)
        return real(path, extra)

    monkeypatch.setattr(profiles_mod, "cache_key", counting)
    r = client.get(API + "data", query_string=q, headers={"Accept-Encoding": "gzip"})
    assert r.status_code == 200 and r.headers["Content-Encoding"] == "gzip"
    assert len(calls) == len(app.ctx.profiles.run(run).hosts)
