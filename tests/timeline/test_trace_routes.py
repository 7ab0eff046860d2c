"""The trace viewer's HTTP routes through werkzeug's test client: encodings and errors."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from werkzeug.test import Client

from tbprof.http.app import create_app
from tbprof.protos import xplane_pb2
from tbprof.timeline.encoding import BINARY_MIME, decode_binary
from tests.conftest import xplane_of


@pytest.fixture(scope="module")
def client(profiles_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Client:
    logdir = tmp_path_factory.mktemp("trace_logdir")
    for name in ("jax_mlp", "custom_loop", "jax_2hosts"):
        shutil.copytree(profiles_root / name, logdir / name)
    # A Chrome trace alone in its folder is a run of its own (kind chrome_trace).
    solo = logdir / "solo_json"
    solo.mkdir()
    trace = next((profiles_root / "jax_mlp").rglob("vm.trace.json.gz"))
    shutil.copy(trace, solo / "gpu_host.trace.json.gz")
    return Client(create_app(logdir, cache_dir=tmp_path_factory.mktemp("trace_cache")))


def _run(client: Client, prefix: str) -> str:
    runs = client.get("/runs").get_json()["runs"]
    return next(r["run"] for r in runs if r["run"].startswith(prefix))


def test_binary_and_json_encodings_agree(client: Client) -> None:
    run = _run(client, "jax_mlp")
    raw = client.get("/trace", query_string={"run": run, "width_px": 1200}, headers={"Accept-Encoding": "gzip"})
    assert raw.status_code == 200 and raw.mimetype == BINARY_MIME
    assert raw.headers["Content-Encoding"] == "gzip"
    header, columns = decode_binary(gzip.decompress(raw.data))
    js = client.get("/trace", query_string={"run": run, "width_px": 1200, "format": "json"}).get_json()
    assert js["counts"] == header["counts"]
    assert js["window"] == header["window"]
    assert js["strings"] == header["strings"]
    for name, values in js["columns"].items():
        assert columns[name].tolist() == pytest.approx(values), name
    counts = header["counts"]
    assert counts["returned"] == columns["event_row"].shape[0]
    assert counts["merged"] == int(columns["box_count"].sum())
    assert counts["in_window"] == counts["returned"] + counts["merged"]
    # Per-track ranges tile the columns.
    assert sum(t.get("events", [0, 0])[1] for t in header["tracks"]) == counts["returned"]
    assert sum(t.get("boxes", [0, 0])[1] for t in header["tracks"]) == counts["boxes"]
    # A second request is answered from the response cache, byte for byte.
    again = client.get("/trace", query_string={"run": run, "width_px": 1200}, headers={"Accept-Encoding": "gzip"})
    assert again.data == raw.data


def test_window_and_track_selection(client: Client) -> None:
    run = _run(client, "custom_loop")
    whole = client.get("/trace", query_string={"run": run, "format": "json"}).get_json()
    span = whole["span_ps"]
    part = client.get("/trace", query_string={"run": run, "format": "json", "start_ps": span // 4,
                                              "end_ps": span // 2, "width_px": 500, "tracks": "2,3"}).get_json()
    assert part["window"]["start_ps"] == span // 4 and part["window"]["end_ps"] == span // 2
    with_data = [t["id"] for t in part["tracks"] if "events" in t]
    assert with_data == [2, 3]


def test_trace_viewer_tool_lists_tracks(client: Client, profiles_root: Path) -> None:
    run = _run(client, "jax_mlp")
    tools = client.get("/tools", query_string={"run": run}).get_json()["tools"]
    assert "trace_viewer" in [t["name"] for t in tools]
    d = client.get("/data", query_string={"run": run, "tool": "trace_viewer"}).get_json()
    space = xplane_pb2.XSpace.FromString(xplane_of(profiles_root, "jax_mlp").read_bytes())
    events = sum(len(line.events) for plane in space.planes for line in plane.lines)  # protobuf's count
    assert d["tool"] == "trace_viewer" and d["event_count"] == events > 0
    names = [g["name"] for g in d["groups"]]
    assert names[:2] == ["/device:GPU:0 (NVIDIA H200)", "/device:GPU:1 (NVIDIA H200)"]
    assert names[2] == "Host CPU"


def test_chrome_trace_run(client: Client) -> None:
    run = _run(client, "solo_json")
    runs = {r["run"]: r for r in client.get("/runs").get_json()["runs"]}
    assert runs[run]["kind"] == "chrome_trace" and runs[run]["hosts"] == ["gpu_host"]
    js = client.get("/trace", query_string={"run": run, "format": "json"}).get_json()
    assert js["counts"]["in_window"] >= 17736  # every X event of the file (+ none dropped)
    found = client.get("/trace_search", query_string={"run": run, "q": "fusion", "limit": 2}).get_json()
    assert found["total"] > 0
    m = found["matches"][0]
    ev = client.get("/trace_event", query_string={"run": run, "plane": m["plane"], "row": m["row"]}).get_json()
    assert ev["event"]["name"] == m["name"]


def test_search_and_event_routes(client: Client) -> None:
    run = _run(client, "jax_mlp")
    found = client.get("/trace_search", query_string={"run": run, "q": "nccl", "limit": 5}).get_json()
    assert found["total"] > 5 and found["count"] == 5 and found["next_offset"] == 5
    m = found["matches"][0]
    ev = client.get("/trace_event", query_string={"run": run, "plane": m["plane"], "row": m["row"]}).get_json()
    assert ev["event"]["start_ps"] == m["start_ps"]


@pytest.mark.parametrize(("route", "query", "status"), [
    ("trace", {"width_px": "0"}, 400),
    ("trace", {"width_px": "abc"}, 400),
    ("trace", {"start_ps": "10", "end_ps": "5"}, 400),
    ("trace", {"format": "xml"}, 400),
    ("trace", {"tracks": "1,x"}, 400),
    ("trace", {"tracks": "999"}, 400),
    ("trace_search", {}, 400),
    ("trace_search", {"q": "([", "regex": "1"}, 400),
    ("trace_event", {}, 400),
    ("trace_event", {"plane": "99", "row": "0"}, 404),
    ("trace_event", {"plane": "2", "row": "99999999"}, 404),
])
def test_bad_requests(client: Client, route: str, query: dict[str, str], status: int) -> None:
    run = _run(client, "jax_mlp")
    r = client.get(f"/{route}", query_string={"run": run, **query})
    assert r.status_code == status
    assert "error" in r.get_json()


def test_unknown_run_and_all_hosts(client: Client) -> None:
    assert client.get("/trace", query_string={"run": "nope"}).status_code == 404
    run = _run(client, "jax_2hosts")
    assert client.get("/trace", query_string={"run": run}).status_code == 400  # two hosts: choose one
    assert client.get("/trace", query_string={"run": run, "host": "__all__"}).status_code == 400
    assert client.get("/trace", query_string={"run": run, "host": "worker1"}).status_code == 200
