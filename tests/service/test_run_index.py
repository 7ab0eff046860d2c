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
