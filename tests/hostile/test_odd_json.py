"""Odd but valid JSON in a Chrome trace is an answer, never a 500 (issue #34, low).

A 5,000-digit integer (more digits than Python converts) as an event's ``pid``, ``name`` or in its
``args``, or in the top-level metadata; ``deviceProperties`` that is a number; a rank of 2**64: each
is a 422 naming the file and the field, remembered like any unreadable file (asked again, the file
is not parsed again). A trace of flow points only is a valid, empty trace: it opens.

Each file is written here from the Chrome trace format's documented fields (``ph``, ``pid``,
``tid``, ``ts``, ``dur``, ``name``, ``args``) and Kineto's top-level keys.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from tbprof.http.app import create_app
from tbprof.readers import chrome_scan

API = "/data/plugin/tbprof/"
# sys.get_int_max_str_digits() is 4300 by default: one digit more than any limit Python ships.
LONG = "9" * 5000


def _event(pid: str = "1", name: str = '"k"', args: str = "{}") -> str:
    return '{"ph":"X","pid":' + pid + ',"tid":1,"ts":1,"dur":2,"name":' + name + ',"args":' + args + "}"


def _trace(events: list[str], top: str = "") -> str:
    return '{"traceEvents":[' + ",".join(events) + "]" + top + "}"


# host -> (file text, words the refusal must hold: the field)
REFUSED = {
    "long_pid": (_trace([_event(pid=LONG)]), "'pid'"),
    "long_name": (_trace([_event(name=LONG)]), "'name'"),
    "long_args": (_trace([_event(args='{"shape":{"n":' + LONG + "}}")]), "args"),
    "long_meta": (_trace([_event()], ',"distributedInfo":{"rank":0,"x":' + LONG + "}"), "'distributedInfo'"),
    "props_number": (_trace([_event()], ',"deviceProperties":1.5'), "'deviceProperties'"),
    "rank_2_64": (_trace([_event()], f',"distributedInfo":{{"rank":{2**64}}}'), "'distributedInfo.rank'"),
}
FLOW_ONLY = '{"traceEvents":[{"ph":"s","id":1,"pid":1,"tid":1,"ts":1}]}'


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("odd_json") / "logs"
    for host, (text, _) in REFUSED.items():
        (root / host).mkdir(parents=True)
        (root / host / f"{host}.pt.trace.json").write_text(text)
    (root / "flow_only").mkdir()
    (root / "flow_only" / "flow_only.pt.trace.json").write_text(FLOW_ONLY)
    return root


@pytest.fixture()
def client(logdir: Path, tmp_path: Path) -> Client:
    return Client(create_app(logdir, cache_dir=tmp_path / "cache"))


@pytest.mark.parametrize("host", sorted(REFUSED))
def test_odd_value_is_a_remembered_422_naming_file_and_field(client: Client, host: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    scans: list[int] = []
    real_scan = chrome_scan.scan

    def counted(*args: Any, **kwargs: Any) -> Any:
        scans.append(1)
        return real_scan(*args, **kwargs)

    monkeypatch.setattr(chrome_scan, "scan", counted)
    _, field = REFUSED[host]
    for tool in ("profile_summary", "trace_viewer", "profile_summary"):
        r = client.get(API + "data", query_string={"run": host, "tool": tool})
        assert r.status_code == 422, (tool, r.data[:300])
        error = r.get_json()["error"]
        assert f"{host}.pt.trace.json" in error and field in error, error
    assert len(scans) == 1  # parsed once: the refusal is remembered


def test_flow_only_trace_opens(client: Client) -> None:
    r = client.get(API + "data", query_string={"run": "flow_only", "tool": "profile_summary"})
    assert r.status_code == 200, r.data[:300]
    assert r.get_json()["event_count"] == 0  # a flow point is an arrow's end, not an event
    r = client.get(API + "data", query_string={"run": "flow_only", "tool": "trace_viewer"})
    assert r.status_code == 200, r.data[:300]


def test_python_api_raises_the_domain_error(logdir: Path, tmp_path: Path) -> None:
    import tbprof
    from tbprof.errors import ProfileReadError

    with pytest.raises(ProfileReadError, match="'deviceProperties'"):
        tbprof.open(logdir / "props_number", cache_dir=tmp_path / "c").summary()
    json.loads(json.dumps(tbprof.open(logdir / "flow_only", cache_dir=tmp_path / "c2").summary()))
