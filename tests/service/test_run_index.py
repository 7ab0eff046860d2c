"""Listing a large logdir stays off the request path (#25).

A logdir of 20 000 runs took 1.6-2.8 s to list, re-walked under one lock every 2 s, and other
requests waited behind it. Now: requests read the last complete listing while a stale one is
re-listed in the background; forced refreshes are rate-limited and shared; a local walk skips
folders that did not change; ``GET runs`` pages with ``offset``/``limit``.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest
from werkzeug.test import Client

from tbprof.http.app import create_app
from tbprof.service import logdir as logdir_mod
from tbprof.service.logdir import FolderCache, RunIndex, discover

API = "/data/plugin/tbprof/"


def _session(root: Path, src: Path, name: str) -> Path:
    folder = root / name / "plugins" / "profile" / "2026_01_01_00_00_00"
    folder.mkdir(parents=True)
    shutil.copyfile(src, folder / "vm.xplane.pb")
    return folder


@pytest.fixture()
def logdir(tmp_path: Path, profiles_root: Path) -> Path:
    src = next((profiles_root / "custom_loop").rglob("vm.xplane.pb"))
    root = tmp_path / "logdir"
    for i in range(5):
        _session(root, src, f"run{i}")
    return root


def test_a_stale_listing_is_refreshed_in_the_background(logdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = RunIndex(logdir, ttl_s=0.0)  # always stale: every call wants a new listing
    first = index.runs()
    assert len(first) == 5 and index.listings == 1
    release = threading.Event()
    started = threading.Event()
    real = logdir_mod.runs_for_path

    def slow_listing(*args: object, **kwargs: object) -> object:
        started.set()
        assert release.wait(60)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(logdir_mod, "runs_for_path", slow_listing)
    # The listing started here blocks until released, yet every caller gets the last listing.
    assert index.runs() is first
    assert started.wait(60)
    assert index.runs() is first and index.get("run0/2026_01_01_00_00_00") is not None
    release.set()
    for _ in range(600):
        if index.listings == 2:
            break
        threading.Event().wait(0.05)
    assert index.listings == 2


def test_forced_refreshes_are_rate_limited(logdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logdir_mod, "MIN_REFRESH_S", 3600.0)
    index = RunIndex(logdir, ttl_s=3600)
    index.runs()
    for _ in range(20):
        index.runs(refresh=True)
    assert index.listings == 2  # the first listing and one forced refresh; the other 19 read it
    for i in range(20):  # requests for made-up run names do not list either
        assert index.get(f"nope{i}") is None
    assert index.listings == 2
    index.runs(fresh=True)  # the server's own refresh (after a capture) is not rate-limited
    assert index.listings == 3


def test_a_walk_lists_only_changed_folders(logdir: Path, profiles_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = FolderCache()
    assert len(discover(logdir, cache)) == 5
    src = next((profiles_root / "custom_loop").rglob("vm.xplane.pb"))
    scanned: list[str] = []
    real_scandir = os.scandir

    def counting_scandir(path: str) -> object:
        scanned.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr(logdir_mod.os, "scandir", counting_scandir)
    again = discover(logdir, cache)
    assert len(again) == 5 and scanned == []
    _session(logdir, src, "run9")
    runs = discover(logdir, cache)
    assert "run9/2026_01_01_00_00_00" in runs and len(runs) == 6
    # The logdir (a new entry) and the new run's 4 folders; none of the other runs' 20.
    assert sorted(scanned) == sorted([str(logdir), *(str(logdir / "run9" / p) for p in
                                                     ("", "plugins", "plugins/profile",
                                                      "plugins/profile/2026_01_01_00_00_00"))])
    assert set(discover(logdir)) == set(runs)  # the same runs as a walk without a cache


def test_runs_are_paged(logdir: Path, tmp_path: Path) -> None:
    client = Client(create_app(logdir, cache_dir=tmp_path / "cache"))
    whole = client.get(API + "runs").get_json()
    assert "total" not in whole and len(whole["runs"]) == 5  # the default answer is unchanged
    page = client.get(API + "runs", query_string={"offset": "1", "limit": "2"}).get_json()
    assert page["total"] == 5
    assert page["runs"] == whole["runs"][1:3]
    assert client.get(API + "runs", query_string={"offset": "4", "limit": "10"}).get_json()["runs"] == whole["runs"][4:]
    for bad in ({"limit": "0"}, {"offset": "-1"}, {"limit": "x"}):
        r = client.get(API + "runs", query_string=bad)
        assert r.status_code == 400 and "error" in r.get_json()


def test_runs_are_searched_by_name(logdir: Path, tmp_path: Path) -> None:
    _session(logdir, next(logdir.rglob("vm.xplane.pb")), "Exp_B/seed7")
    client = Client(create_app(logdir, cache_dir=tmp_path / "cache"))
    whole = client.get(API + "runs").get_json()["runs"]
    names = [r["run"] for r in whole]
    # Every term must occur in the name, ignoring case; the order stays newest first.
    for q, expected in (("run", [n for n in names if "run" in n]), ("exp_b SEED", ["Exp_B/seed7/2026_01_01_00_00_00"]),
                        ("run3", ["run3/2026_01_01_00_00_00"]), ("nothing", []), ("", names)):
        got = client.get(API + "runs", query_string={"q": q, "limit": "100"}).get_json()
        assert [r["run"] for r in got["runs"]] == expected, q
        assert got["total"] == len(expected)
    # A page of the matches: total counts the matches, not every run.
    page = client.get(API + "runs", query_string={"q": "run", "offset": "1", "limit": "2"}).get_json()
    assert page["total"] == 5 and [r["run"] for r in page["runs"]] == [n for n in names if "run" in n][1:3]
    assert page["runs"] == [r for r in whole if "run" in r["run"]][1:3]  # the same entries as the whole list


def test_run_search_is_validated(logdir: Path, tmp_path: Path) -> None:
    client = Client(create_app(logdir, cache_dir=tmp_path / "cache"))
    for bad, says in (({"q": "x" * 257}, "at most 256"), ({"q": "a\x00b"}, "NUL"),
                      ({"limit": "10001"}, "[1, 10000]"), ({"limit": "-5"}, "[1, 10000]"),
                      ({"offset": "99999999999999999999"}, "out of range"), ({"run": ""}, "missing")):
        r = client.get(API + "runs", query_string=bad)
        assert r.status_code == 400, bad
        assert says in r.get_json()["error"], (bad, r.get_json())
    assert client.get(API + "runs", query_string={"q": "x" * 256}).status_code == 200  # the bound itself


def test_one_run_is_looked_up_by_name(logdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app(logdir, cache_dir=tmp_path / "cache")
    client = Client(app)
    whole = {r["run"]: r for r in client.get(API + "runs").get_json()["runs"]}
    one = client.get(API + "runs", query_string={"run": "run2/2026_01_01_00_00_00"}).get_json()
    assert one["runs"] == [whole["run2/2026_01_01_00_00_00"]] and one["total"] == 1
    missing = client.get(API + "runs", query_string={"run": "run2"})
    assert missing.status_code == 404 and missing.get_json()["kind"] == "not_found"
    # A session written after the last listing is found: an unknown name lists again (at most
    # once a second; no wait here).
    monkeypatch.setattr(logdir_mod, "MIN_REFRESH_S", 0.0)
    app.ctx.profiles.index.miss_refresh_s = 0.0
    _session(logdir, next(logdir.rglob("vm.xplane.pb")), "late")
    late = client.get(API + "runs", query_string={"run": "late/2026_01_01_00_00_00"})
    assert late.status_code == 200 and late.get_json()["runs"][0]["run"] == "late/2026_01_01_00_00_00"


def test_the_sorted_listing_is_reused_until_the_next_listing(logdir: Path) -> None:
    index = RunIndex(logdir, ttl_s=1e9)
    first = index.newest_first()
    assert index.newest_first() is first  # one sort per listing, not per page
    assert [r.name for r in first] == sorted(index.runs(), key=lambda n: (-index.runs()[n].mtime, n))
    index.runs(fresh=True)
    assert index.newest_first() is not first
