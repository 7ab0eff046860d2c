"""``critical_path`` through the WSGI app: JSON, CSV, and bad or hostile options."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from werkzeug.test import Client

from tbprof.http.app import create_app

API = "/data/plugin/tbprof/"
RUN = "torch_ddp"


@pytest.fixture(scope="module")
def client(sample_profiles: Path, tmp_path_factory: pytest.TempPathFactory) -> Client:
    root = tmp_path_factory.mktemp("logs")
    shutil.copytree(sample_profiles / "torch_ddp", root / "torch_ddp")
    return Client(create_app(root, cache_dir=tmp_path_factory.mktemp("cache")))


def test_json_and_csv(client: Client) -> None:
    r = client.get(API + "data", query_string={"run": RUN, "tool": "critical_path", "host": "__all__", "rank": "1"})
    assert r.status_code == 200, r.get_data(as_text=True)
    body = r.get_json()
    assert body["rank"] == 1 and body["instance"] == 0 and body["step_name"] == body["instances"][0]
    # The breakdown's shares are the path's length split by bound: they add up to 100 %.
    assert sum(body["breakdown_percent"].values()) == pytest.approx(100.0)
    csv = client.get(API + "csv", query_string={"run": RUN, "tool": "critical_path", "host": "__all__", "rank": "1",
                                                "table": "path"})
    assert csv.status_code == 200
    lines = csv.get_data(as_text=True).strip().splitlines()
    assert lines[0].startswith("order,type,bound_by,duration_us,event") and len(lines) == body["path_edges"] + 1


@pytest.mark.parametrize("params", [
    {"rank": "7"}, {"rank": "-5"}, {"instance": "99"}, {"instance": "x"}, {"step": "999"}, {"step": "1e400"},
    {"annotation": " "},
])
def test_bad_options_are_400(client: Client, params: dict[str, str]) -> None:
    r = client.get(API + "data", query_string={"run": RUN, "tool": "critical_path", "host": "__all__", **params})
    assert r.status_code == 400, r.get_data(as_text=True)
    assert "error" in r.get_json()


def test_an_annotation_the_trace_lacks_is_no_data(client: Client) -> None:
    hostile = "<img src=x onerror=alert(1)>" * 20
    r = client.get(API + "data", query_string={"run": RUN, "tool": "critical_path", "host": "__all__",
                                               "annotation": hostile})
    assert r.status_code == 404
    body = r.get_json()
    assert body["kind"] == "no_data" and "<img" in body["error"]  # text, never markup: the page escapes it
