"""The WSGI app through werkzeug's test client: routes, errors, path safety, gzip, CSV."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
from pathlib import Path

import pytest
from werkzeug.test import Client

from tbprof.http.app import create_app
from tbprof.protos import xplane_pb2

API = "/data/plugin/tbprof/"


def _client(logdir: Path, cache_dir: Path) -> Client:
    return Client(create_app(logdir, cache_dir=cache_dir))


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file below root with size and mtime: to prove requests modify nothing."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_runs_lists_every_session_with_hosts(profiles_root: Path, cache_dir: Path) -> None:
    r = _client(profiles_root, cache_dir).get(API + "runs")
    assert r.status_code == 200
    body = r.get_json()
    assert body["schema_version"] == 1
    runs = {e["run"]: e for e in body["runs"]}
    # Names: TensorBoard run path below the logdir + session folder.
    sessions = {p.parent.relative_to(profiles_root).as_posix().replace("/plugins/profile", "")
                for p in profiles_root.rglob("*.xplane.pb")}
    assert set(runs) == sessions
    keras = next(n for n in runs if n.startswith("keras_cnn/train/"))
    assert runs[keras]["hosts"] == ["vm"]
    twohosts = next(n for n in runs if n.startswith("jax_2hosts/"))
    assert runs[twohosts]["hosts"] == ["worker0", "worker1"]
    assert all("profile_summary" in e["tools"] for e in runs.values())


def test_profile_summary_counts(profiles_root: Path, cache_dir: Path) -> None:
    client = _client(profiles_root, cache_dir)
    run = next(e["run"] for e in client.get(API + "runs").get_json()["runs"] if e["run"].startswith("jax_mlp/"))
    r = client.get(API + "data", query_string={"run": run, "tool": "profile_summary"})
    assert r.status_code == 200
    body = r.get_json()
    path = next((profiles_root / "jax_mlp").rglob("vm.xplane.pb"))
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    want = sum(len(line.events) for p in space.planes for line in p.lines)
    assert body["event_count"] == want
    host = body["hosts"][0]
    assert host["device_types"] == ["GPU"] and host["device_count"] == 2  # two H200 planes with events
    gpu_planes = [p for p in host["planes"] if p["name"].startswith("/device:GPU")]
    assert [p["event_count"] for p in gpu_planes] == [sum(len(line.events) for line in p.lines)
                                                      for p in space.planes if p.name.startswith(b"/device:GPU")]


def test_csv_and_table_query(profiles_root: Path, cache_dir: Path) -> None:
    client = _client(profiles_root, cache_dir)
    run = next(e["run"] for e in client.get(API + "runs").get_json()["runs"] if e["run"].startswith("jax_2hosts/"))
    full = client.get(API + "data", query_string={"run": run, "host": "__all__", "tool": "profile_summary"})
    table = full.get_json()["tables"]["lines"]
    assert table["total_rows"] == len(table["rows"]) > 0
    r = client.get(API + "csv", query_string={"run": run, "host": "__all__", "tool": "profile_summary",
                                              "table": "lines"})
    assert r.status_code == 200 and r.mimetype == "text/csv"
    assert "attachment" in r.headers["Content-Disposition"] and ".csv" in r.headers["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(r.get_data(as_text=True))))
    assert rows[0] == [c["name"] for c in table["columns"]]
    assert len(rows) - 1 == table["total_rows"]
    # Sorted by event count descending, filtered to worker1, paged by 3.
    q = {"run": run, "host": "__all__", "tool": "profile_summary", "table": "lines", "sort": "event_count",
         "desc": "1", "filter.host": "^worker1$", "limit": "3"}
    page = client.get(API + "data", query_string=q).get_json()["tables"]["lines"]
    w1 = sorted((r for r in table["rows"] if r[0] == "worker1"), key=lambda r: -r[3])
    assert page["total_rows"] == len(w1)
    assert [r[3] for r in page["rows"]] == [r[3] for r in w1[:3]]


def test_gzip_when_accepted(profiles_root: Path, cache_dir: Path) -> None:
    client = _client(profiles_root, cache_dir)
    r = client.get(API + "runs", headers={"Accept-Encoding": "gzip"})
    if len(r.get_data()) >= 1024:
        assert r.headers["Content-Encoding"] == "gzip"
        json.loads(gzip.decompress(r.get_data()))


@pytest.mark.parametrize(
    ("query", "status", "needle"),
    [
        ({"run": "nope", "tool": "profile_summary"}, 404, "unknown run"),
        ({"run": "../../etc", "tool": "profile_summary"}, 404, "unknown run"),
        ({"run": "/etc/passwd", "tool": "profile_summary"}, 404, "unknown run"),
        ({"tool": "profile_summary"}, 400, "missing required parameter 'run'"),
        ({"run": "JAX", "tool": "no_such_tool"}, 404, "unknown tool"),
        ({"run": "JAX", "tool": "profile_summary", "host": "nohost"}, 404, "unknown host"),
        ({"run": "JAX", "tool": "profile_summary", "table": "lines", "sort": "nocol"}, 400, "unknown sort column"),
        ({"run": "JAX", "tool": "profile_summary", "table": "lines", "filter.plane": "(["}, 400, "does not compile"),
        ({"run": "JAX", "tool": "profile_summary", "table": "lines", "limit": "x"}, 400, "not an integer"),
        ({"run": "JAX", "tool": "profile_summary", "table": "lines", "offset": "-1"}, 400, "out of range"),
    ],
)
def test_bad_requests(profiles_root: Path, cache_dir: Path, query: dict[str, str], status: int, needle: str) -> None:
    client = _client(profiles_root, cache_dir)
    if query.get("run") == "JAX":
        query["run"] = next(e["run"] for e in client.get(API + "runs").get_json()["runs"]
                            if e["run"].startswith("jax_mlp/"))
    r = client.get(API + "data", query_string=query)
    assert r.status_code == status, r.get_data(as_text=True)
    assert needle in r.get_json()["error"]


def test_paging_past_the_end_is_empty(profiles_root: Path, cache_dir: Path) -> None:
    client = _client(profiles_root, cache_dir)
    run = next(e["run"] for e in client.get(API + "runs").get_json()["runs"] if e["run"].startswith("jax_mlp/"))
    t = client.get(API + "data", query_string={"run": run, "tool": "profile_summary", "table": "lines",
                                               "offset": "100000"}).get_json()["tables"]["lines"]
    assert t["rows"] == [] and t["total_rows"] > 0


@pytest.mark.parametrize("path", ["../../../../etc/passwd", "%2e%2e/%2e%2e/etc/passwd", "/etc/passwd",
                                  "static/../../tb_plugin.py"])
def test_static_never_escapes(profiles_root: Path, cache_dir: Path, path: str) -> None:
    r = _client(profiles_root, cache_dir).get(API + path)
    assert r.status_code == 404
    assert b"root:" not in r.get_data()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "the file is empty"),
        (b"\x0a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", "not a readable XSpace"),
        (os.urandom(64) + b"\xff" * 16, "not a readable XSpace"),
    ],
)
def test_broken_profile_is_422_and_others_keep_serving(logdir_copy: Path, cache_dir: Path, content: bytes,
                                                       reason: str) -> None:
    bad_dir = logdir_copy / "broken" / "plugins" / "profile" / "2026_01_01_00_00_00"
    bad_dir.mkdir(parents=True)
    (bad_dir / "vm.xplane.pb").write_bytes(content)
    before = _snapshot(logdir_copy)
    client = _client(logdir_copy, cache_dir)
    runs = {e["run"]: e for e in client.get(API + "runs").get_json()["runs"]}
    assert "broken/2026_01_01_00_00_00" in runs
    r = client.get(API + "data", query_string={"run": "broken/2026_01_01_00_00_00", "tool": "profile_summary"})
    assert r.status_code == 422
    body = r.get_json()
    assert reason in body["error"] and body["file"].endswith("vm.xplane.pb")
    assert "Traceback" not in r.get_data(as_text=True)
    good = next(n for n in runs if n.startswith("custom_loop/"))
    assert client.get(API + "data", query_string={"run": good, "tool": "profile_summary"}).status_code == 200
    # The runs listing still answers, naming the broken run's error only after a conversion attempt.
    assert client.get(API + "runs").status_code == 200
    assert _snapshot(logdir_copy) == before


def test_huge_profile_is_refused_before_reading(logdir_copy: Path, cache_dir: Path) -> None:
    """A 1 TiB xplane (sparse: no disk used) is refused with the sizes, without reading it;
    the server keeps serving and nothing in the logdir changes."""
    huge_dir = logdir_copy / "huge" / "plugins" / "profile" / "2026_01_01_00_00_00"
    huge_dir.mkdir(parents=True)
    with open(huge_dir / "vm.xplane.pb", "wb") as f:
        f.truncate(1 << 40)
    before = _snapshot(logdir_copy)
    client = _client(logdir_copy, cache_dir)
    r = client.get(API + "data", query_string={"run": "huge/2026_01_01_00_00_00", "tool": "profile_summary"})
    assert r.status_code == 422
    error = r.get_json()["error"]
    assert "too large to open here: it is 1099.5 GB" in error and "of memory and" in error
    # It could stream into the local cache, but that disk cannot hold 3x a TiB.
    assert "streaming it into the disk cache instead needs about 3298.5 GB of disk" in error
    good = next(e["run"] for e in client.get(API + "runs").get_json()["runs"] if e["run"].startswith("jax_mlp/"))
    assert client.get(API + "data", query_string={"run": good, "tool": "profile_summary"}).status_code == 200
    assert _snapshot(logdir_copy) == before


def test_memory_limit_applies_to_real_profiles(profiles_root: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """TBPROF_CONVERT_MEMORY_BYTES at 5x an xplane's size converts it in memory; below, it
    streams into the disk cache (the entry is committed by the request itself)."""
    path = next((profiles_root / "jax_mlp").rglob("vm.xplane.pb"))
    size = path.stat().st_size
    for limit, streams in ((5 * size - 1, True), (5 * size, False)):
        monkeypatch.setenv("TBPROF_CONVERT_MEMORY_BYTES", str(limit))
        client = _client(profiles_root, tmp_path / f"cache_{limit}")
        run = next(e["run"] for e in client.get(API + "runs").get_json()["runs"] if e["run"].startswith("jax_mlp/"))
        r = client.get(API + "data", query_string={"run": run, "tool": "profile_summary"})
        assert r.status_code == 200, r.get_data(as_text=True)
        if streams:
            assert list((tmp_path / f"cache_{limit}").rglob("meta.json"))


def test_new_session_appears_without_restart(logdir_copy: Path, cache_dir: Path, profiles_root: Path) -> None:
    client = _client(logdir_copy, cache_dir)
    names = {e["run"] for e in client.get(API + "runs").get_json()["runs"]}
    src = next((profiles_root / "custom_loop").rglob("vm.xplane.pb"))
    new = logdir_copy / "later" / "plugins" / "profile" / "2027_01_01_00_00_00"
    new.mkdir(parents=True)
    (new / "vm.xplane.pb").write_bytes(src.read_bytes())
    names2 = {e["run"] for e in client.get(API + "runs", query_string={"refresh": "1"}).get_json()["runs"]}
    assert names2 - names == {"later/2027_01_01_00_00_00"}
    # Even without refresh=1, asking for the new run by name finds it.
    r = client.get(API + "data", query_string={"run": "later/2027_01_01_00_00_00", "tool": "profile_summary"})
    assert r.status_code == 200


def test_read_only_logdir_and_cache_outside(profiles_root: Path, tmp_path: Path) -> None:
    """The cache goes to the cache dir; the logdir gets no file, even when it is read-only."""
    import shutil
    logdir = tmp_path / "ro"
    shutil.copytree(profiles_root / "custom_loop", logdir / "custom_loop")
    before = _snapshot(logdir)
    for p in sorted(logdir.rglob("*"), reverse=True):
        p.chmod(0o555 if p.is_dir() else 0o444)
    logdir.chmod(0o555)
    cache = tmp_path / "cache"
    try:
        app = create_app(logdir, cache_dir=cache)
        client = Client(app)
        run = client.get(API + "runs").get_json()["runs"][0]["run"]
        assert client.get(API + "data", query_string={"run": run, "tool": "profile_summary"}).status_code == 200
        app.ctx.profiles.cache.flush()
        assert any(cache.rglob("meta.json"))
        assert _snapshot(logdir) == before
    finally:
        for p in [logdir, *logdir.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)


def test_wrong_method_and_unknown_route(profiles_root: Path, cache_dir: Path) -> None:
    client = _client(profiles_root, cache_dir)
    assert client.post(API + "runs").status_code == 405
    assert client.get(API + "no_such_route").status_code == 404


def test_one_broken_host_among_good_ones(logdir_copy: Path, cache_dir: Path) -> None:
    """All-hosts views analyse the readable hosts and name the broken one."""
    session = next(logdir_copy.glob("jax_2hosts/plugins/profile/*"))
    (session / "worker1.xplane.pb").write_bytes(b"\x0a\xff\xff")  # truncated
    client = _client(logdir_copy, cache_dir)
    run = f"jax_2hosts/{session.name}"
    r = client.get(API + "data", query_string={"run": run, "host": "__all__", "tool": "profile_summary"})
    assert r.status_code == 200
    body = r.get_json()
    assert [h["host"] for h in body["hosts"]] == ["worker0"]
    assert body["host_errors"][0]["host"] == "worker1"
    assert "truncated" in body["host_errors"][0]["error"] or "runs past" in body["host_errors"][0]["error"]
    r1 = client.get(API + "data", query_string={"run": run, "host": "worker1", "tool": "profile_summary"})
    assert r1.status_code == 422


def test_a_profile_cut_short_while_mapped_is_422_and_the_server_goes_on(
        logdir_copy: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process truncates the file between its map and its scan (the SIGBUS a map would
    raise is turned into zeros by ``_core/mapped.pyx``): the request is a 422 saying the file
    changed, not a 500 or a dead server; other runs, and this one once the file is whole again,
    still answer."""
    from tbprof.readers import files, xplane

    monkeypatch.setattr(files, "MAP_MIN_BYTES", 0)
    client = _client(logdir_copy, cache_dir)
    runs = [e["run"] for e in client.get(API + "runs").get_json()["runs"]]
    run = next(n for n in runs if n.startswith("jax_mlp/"))
    path = next((logdir_copy / "jax_mlp").rglob("*.xplane.pb"))
    whole = path.read_bytes()
    real_map = files.map_profile
    cut: list[Path] = []

    def cut_after_map(p: Path) -> files.MappedProfile | None:
        got = real_map(p)
        assert got is not None
        os.truncate(p, len(whole) // 3)
        cut.append(p)
        return got

    monkeypatch.setattr(xplane, "map_profile", cut_after_map)
    r = client.get(API + "data", query_string={"run": run, "tool": "profile_summary"})
    assert cut == [path]
    assert r.status_code == 422, r.get_data(as_text=True)
    assert "changed while it was being read" in r.get_json()["error"]
    monkeypatch.setattr(xplane, "map_profile", real_map)
    other = next(n for n in runs if n.startswith("custom_loop/"))
    assert client.get(API + "data", query_string={"run": other, "tool": "profile_summary"}).status_code == 200
    path.write_bytes(whole)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert client.get(API + "data", query_string={"run": run, "tool": "profile_summary"}).status_code == 200
