"""A hostile-input corpus driven through a real ``tbprof serve`` (issue #15).

The logdir holds good runs beside crafted files of every format tbprof reads (XSpace, Chrome
trace JSON, tfprof ProfileProto), special files and symlinks; the requests include regex
bombs, foreign Host/Origin headers, HEAD and oversized capture requests. Whatever is asked:
the process survives, the good runs keep answering, every refusal is a 4xx JSON
``{"error", "kind"}``, and nothing in the logdir changes.
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import random
import shutil
import stat
import threading
import urllib.parse
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLE_PROFILES
from tests.servers import Server, tbprof_serve

# A long run of letters: ``^(?:[A-Za-z:]|[A-Za-z:])*!`` tries 2^n ways to split it before failing
# (n = 48: days of backtracking in Python's re; linear in RE2).
BOMB_NAME = "A" * 48
REGEX_BOMB = "^(?:[A-Za-z:]|[A-Za-z:])*!"
# Memory the server may assume (the gzip bombs below expand far beyond a twelfth of it).
CONVERT_MEMORY_BYTES = 1_200_000_000
BOMB_EXPANDED_BYTES = 400 << 20


def _event(**kw: Any) -> dict[str, Any]:
    return {"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 0, "dur": 5, **kw}


def _gzip_bomb(inner_prefix: bytes = b"[") -> bytes:
    """400 MB of JSON whitespace in gzip (about 400 KB), built without holding it in memory."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [comp.compress(inner_prefix)]
    block = b" " * (1 << 20)
    for _ in range(BOMB_EXPANDED_BYTES >> 20):
        parts.append(comp.compress(block))
    parts.append(comp.compress(b"]"))
    parts.append(comp.flush())
    return b"".join(parts)


def _chrome_corpus() -> dict[str, bytes]:
    good = json.dumps({"traceEvents": [_event(name=BOMB_NAME), _event(name="b", ts=10)]}).encode()
    deep_args = {"traceEvents": [_event(args={"a": json.loads("[" * 900 + "]" * 900)})]}
    files = {
        "good": good,
        "deep_array": b"[" * 200_000,  # RecursionError in json
        "deep_object": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
        "deep_args": json.dumps(deep_args).encode(),
        "phase_list": json.dumps([_event(ph=[]), _event(ph={}), _event()]).encode(),
        "dur_list": json.dumps([_event(dur=[]), _event(dur={"x": 1}), _event()]).encode(),
        "flow_ts_null": json.dumps([_event(), {"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": None},
                                    {"ph": "f", "id": [1], "pid": 1, "tid": 1, "ts": 3, "bp": "e"}]).encode(),
        "huge_numbers": json.dumps([_event(ts=1e308), _event(ts=-1e308, dur=1e308), _event(ts=2**80),
                                    _event(pid=[1, 2], tid={"a": 1})]).encode(),
        "span_1e15": json.dumps([_event(ts=0), _event(ts=1e15)]).encode(),
        "not_json": b"\x00\xff" * 1000,
        "not_utf8": b'["\xff\xfe"]',
        "empty": b"",
        "truncated_gzip": gzip.compress(good)[:-20],
        "gzip_garbage": b"\x1f\x8b" + os.urandom(2000),
        "gzip_bomb": _gzip_bomb(),
        "wrong_shape": b'{"traceEvents": {"a": 1}}',
        "scalar": b"42",
    }
    rnd = random.Random(15)
    for i in range(12):  # byte-flip mutants of a real PyTorch trace
        real = bytearray(next((SAMPLE_PROFILES / "torch_cnn").glob("*.pt.trace.json")).read_bytes()[:200_000])
        for _ in range(rnd.randint(1, 40)):
            real[rnd.randrange(len(real))] = rnd.choice(b'{}[]",:0123456789-e.ntfl\\ ')
        files[f"flip{i}"] = bytes(real)
    return files


def _tfprof_corpus() -> dict[str, bytes]:
    real = (SAMPLE_PROFILES / "tf1_timeline" / "profile.pb").read_bytes()
    rnd = random.Random(14)
    files = {"profile_1": real, "profile_2": b"", "profile_3": os.urandom(5000),
             "profile_4": real[: len(real) // 2],
             # field 1 (a ProfileNode map entry) claiming 2^60 bytes
             "profile_5": b"\x0a\x80\x80\x80\x80\x80\x80\x80\x80\x10" + real[:100],
             # nested length-delimited fields, 50 000 levels
             "profile_6": b"\x0a\x02" * 50_000}
    for i in range(7, 27):
        b = bytearray(real)
        for _ in range(rnd.randint(1, 12)):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        files[f"profile_{i}"] = bytes(b)
    return files


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes, claimed_len: int | None = None) -> bytes:
    """A length-delimited field; ``claimed_len`` lies about the length."""
    length = len(payload) if claimed_len is None else claimed_len
    return _varint(number << 3 | 2) + _varint(length) + payload


def _xplane_corpus() -> dict[str, bytes]:
    """XSpace > planes(1) > lines(3) > events(4) > stats(4): at each level, a length that claims
    more than the file holds (2^63-1, 2^32, one byte too many); byte flips and truncations of a
    real profile; an XSpace of a million empty events (the densest file per byte)."""
    real = next((SAMPLE_PROFILES / "custom_loop").rglob("*.xplane.pb")).read_bytes()
    files: dict[str, bytes] = {}
    levels = [1, 3, 4, 4]  # field numbers from XSpace down to XEvent.stats
    for depth in range(len(levels)):
        for claimed_name, claimed in (("max", (1 << 63) - 1), ("4g", 1 << 32), ("plus1", None)):
            inner = b"\x08\x01"  # a varint field 1 = 1 inside the innermost message
            msg = _field(levels[depth], inner, claimed if claimed is not None else len(inner) + 1)
            for number in reversed(levels[:depth]):
                msg = _field(number, msg)
            files[f"len_{depth}_{claimed_name}"] = msg
    rnd = random.Random(13)
    for i in range(10):
        b = bytearray(real)
        for _ in range(rnd.randint(1, 30)):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        files[f"xflip{i}"] = bytes(b)
    for i, cut in enumerate((1, 7, len(real) // 3, len(real) - 1)):
        files[f"xcut{i}"] = real[:cut]
    empty_events = _field(4, b"") * 1_000_000  # one line of a million empty XEvents
    files["dense_empty"] = _field(1, _field(3, _varint(1 << 3) + _varint(1) + empty_events))
    return files


def _snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(root))] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory,
            _memory_budget: None) -> Iterator[tuple[Server, Path, dict[str, tuple[int, int, int]]]]:
    root = tmp_path_factory.mktemp("hostile")
    logdir = root / "logs"
    shutil.copytree(SAMPLE_PROFILES / "custom_loop", logdir / "custom_loop")
    shutil.copytree(SAMPLE_PROFILES / "torch_cnn", logdir / "torch_cnn")
    session = logdir / "crafted" / "plugins" / "profile" / "2026_01_01_00_00_00"
    session.mkdir(parents=True)
    for name, data in _chrome_corpus().items():
        (session / f"{name}.trace.json").write_bytes(data)
    (session / "gz_in_json_name.trace.json").write_bytes(_gzip_bomb())
    xsession = logdir / "crafted_xplane" / "plugins" / "profile" / "2026_01_01_00_00_00"
    xsession.mkdir(parents=True)
    for name, data in _xplane_corpus().items():
        (xsession / f"{name}.xplane.pb").write_bytes(data)
    tfprof_dir = logdir / "crafted_tfprof"
    tfprof_dir.mkdir()
    for name, data in _tfprof_corpus().items():
        (tfprof_dir / name).write_bytes(data)
    # Special files and links: a FIFO would hang any open(); links must not leave the logdir.
    os.mkfifo(session / "fifo.trace.json")
    secret = root / "outside" / "secret.trace.json"
    secret.parent.mkdir()
    secret.write_bytes(json.dumps([_event(name="SECRET_OUTSIDE_LOGDIR")]).encode())
    (session / "link_out.trace.json").symlink_to(secret)
    (session / "link_dangling.trace.json").symlink_to(root / "nowhere.json")
    (session / "link_loop.trace.json").symlink_to(session / "link_loop.trace.json")
    before = _snapshot(logdir)
    cache = root / "cache"
    with tbprof_serve(logdir, cache, root / "server.log",
                      extra_args=("--host", "127.0.0.1", "--allowed-host", "tbprof.test")) as server:
        yield server, logdir, before
    assert server.process.returncode is not None


@pytest.fixture(scope="module")
def _memory_budget() -> Iterator[None]:
    # Read by the server process at start (tests/servers.py copies os.environ).
    old = os.environ.get("TBPROF_CONVERT_MEMORY_BYTES")
    os.environ["TBPROF_CONVERT_MEMORY_BYTES"] = str(CONVERT_MEMORY_BYTES)
    yield
    if old is None:
        os.environ.pop("TBPROF_CONVERT_MEMORY_BYTES", None)
    else:
        os.environ["TBPROF_CONVERT_MEMORY_BYTES"] = old


def _get(server: Server, route: str, query: dict[str, str] | None = None,
         headers: dict[str, str] | None = None, method: str = "GET",
         body: bytes | None = None) -> tuple[int, dict[str, Any] | None]:
    url = urllib.parse.urlsplit(server.api)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=120)
    try:
        path = url.path + route + ("?" + urllib.parse.urlencode(query) if query else "")
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        raw = resp.read()
    finally:
        conn.close()
    try:
        return resp.status, json.loads(raw) if raw else None
    except ValueError:
        return resp.status, None


def _assert_answer(status: int, body: dict[str, Any] | None, what: str) -> None:
    assert status < 500, f"{what}: {status} {body}"
    if status >= 400:
        assert body is not None and body.get("error") and body.get("kind"), f"{what}: {status} {body}"


def _runs(server: Server) -> dict[str, dict[str, Any]]:
    status, body = _get(server, "runs")
    assert status == 200 and body is not None
    return {r["run"]: r for r in body["runs"]}


def _crafted_chrome(server: Server) -> dict[str, Any]:
    """The crafted Chrome-trace session (its byte-flipped PyTorch traces are a PyTorch run beside it)."""
    return next(r for name, r in _runs(server).items() if name.startswith("crafted/") and r["kind"] == "chrome_trace")


def test_special_files_and_outside_links_are_not_listed(hostile: tuple[Server, Path, Any]) -> None:
    server, _, _ = hostile
    crafted = _crafted_chrome(server)
    assert "fifo" not in crafted["hosts"]
    assert not {"link_out", "link_dangling", "link_loop"} & set(crafted["hosts"])
    assert {"good", "deep_array", "gzip_bomb"} <= set(crafted["hosts"])


def test_every_crafted_file_is_an_answer(hostile: tuple[Server, Path, Any]) -> None:
    server, _, _ = hostile
    runs = _runs(server)
    crafted = [r for name, r in runs.items() if name.startswith("crafted")]
    # The Chrome-trace and XSpace sessions, the tfprof folder, and the byte-flipped PyTorch traces
    # of the Chrome-trace session: PyTorch traces by their content, whatever their name.
    assert sorted(r["kind"] for r in crafted) == ["chrome_trace", "pytorch", "tfprof", "xspace"]
    refused: dict[str, str] = {}
    for run in crafted:
        for host in run["hosts"]:
            status, body = _get(server, "tools", {"run": run["run"], "host": host})
            _assert_answer(status, body, f"tools {run['run']} {host}")
            tools = {"tfprof": ["tfprof_views", "tfprof_advice"],
                     "xspace": ["profile_summary", "trace_viewer", "overview_page", "op_profile",
                                "framework_op_stats"],
                     "pytorch": ["profile_summary", "trace_viewer", "overview_page", "framework_op_stats",
                                 "kernel_stats", "gpu_breakdown"]}.get(run["kind"], ["profile_summary", "trace_viewer"])
            for tool in tools:
                status, body = _get(server, "data", {"run": run["run"], "host": host, "tool": tool})
                _assert_answer(status, body, f"{tool} {run['run']} {host}")
                if status == 422:
                    assert body is not None
                    refused[host] = body["error"]
                    # Asked again: the same answer (remembered, not parsed again).
                    again = _get(server, "data", {"run": run["run"], "host": host, "tool": tool})
                    assert again == (status, body)
    # Each kind of damage says what is wrong.
    assert "nested too deeply" in refused["deep_array"] and "nested too deeply" in refused["deep_object"]
    assert "expands beyond" in refused["gzip_bomb"]
    assert "expands beyond" in refused["gz_in_json_name"]
    assert "span" in refused["span_1e15"]
    assert "empty" in refused["empty"] and "profile_2" in refused
    assert "gzip" in refused["truncated_gzip"]
    # Every lying length is refused (the compiled scanner checks each against the bytes left).
    assert {f"len_{d}_{c}" for d in range(4) for c in ("max", "4g", "plus1")} <= set(refused)


def test_malformed_events_are_dropped_and_counted(hostile: tuple[Server, Path, Any]) -> None:
    server, _, _ = hostile
    run = _crafted_chrome(server)["run"]
    for host in ("phase_list", "dur_list", "flow_ts_null", "huge_numbers"):
        status, body = _get(server, "data", {"run": run, "host": host, "tool": "profile_summary"})
        assert status == 200, (host, body)
        assert body is not None and body["event_count"] >= 1  # the good event of each file is kept


def test_regex_bombs_are_linear_and_others_keep_answering(hostile: tuple[Server, Path, Any]) -> None:
    server, _, _ = hostile
    run = _crafted_chrome(server)["run"]
    good_run = next(name for name in _runs(server) if name.startswith("custom_loop/"))
    results: list[tuple[int, dict[str, Any] | None]] = []

    def bomb() -> None:
        results.append(_get(server, "trace_search", {"run": run, "host": "good", "q": REGEX_BOMB, "regex": "1"}))
        results.append(_get(server, "table", {"run": run, "host": "good", "tool": "profile_summary",
                                              "table": "lines", "filter.plane": REGEX_BOMB}))

    threads = [threading.Thread(target=bomb) for _ in range(3)]
    for t in threads:
        t.start()
    # Meanwhile another run answers (with Python's re, the bombs would hold the GIL for days).
    status, _ = _get(server, "data", {"run": good_run, "tool": "profile_summary"})
    assert status == 200
    for t in threads:
        t.join(timeout=180)
        assert not t.is_alive()
    assert len(results) == 6 and all(s == 200 for s, _ in results), results
    # The search ran for real: the name is in the trace, the pattern (no '!') matches nothing.
    status, body = _get(server, "trace_search", {"run": run, "host": "good", "q": "^A+$", "regex": "1"})
    assert status == 200 and body is not None and body["total"] == 1, body
    # Syntax RE2 does not run in linear time: a 400 that says so.
    status, body = _get(server, "trace_search", {"run": run, "host": "good", "q": r"(A)\1", "regex": "1"})
    assert status == 400 and body is not None and "RE2" in body["error"], body


def test_foreign_host_origin_and_methods(hostile: tuple[Server, Path, Any]) -> None:
    server, _, _ = hostile
    status, body = _get(server, "runs", headers={"Host": "attacker.example:80"})
    assert status == 403 and body is not None and body["kind"] == "forbidden_host"
    status, body = _get(server, "runs", headers={"Host": "tbprof.test:1234"})  # --allowed-host
    assert status == 200
    capture = json.dumps({"addresses": "localhost:1", "duration_ms": 10, "retries": 0}).encode()
    status, body = _get(server, "capture", method="POST", body=capture,
                        headers={"Content-Type": "application/json", "Origin": "http://attacker.example"})
    assert status == 403 and body is not None and body["kind"] == "forbidden_origin"
    status, body = _get(server, "capture", method="HEAD")
    assert status == 405
    status, body = _get(server, "runs", headers={"Host": "localhost"}, method="DELETE")
    assert status == 405 and body is not None and body["kind"] == "method_not_allowed"


def test_chunked_capture_body_is_cut_at_the_limit(hostile: tuple[Server, Path, Any]) -> None:
    server, _, _ = hostile
    url = urllib.parse.urlsplit(server.api)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=120)
    chunk = b" " * 65536

    def body() -> Iterator[bytes]:
        for _ in range(4096):  # 256 MB if the server read it all
            yield chunk

    try:
        conn.request("POST", url.path + "capture", body=body(), encode_chunked=True,
                     headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
        status = conn.getresponse().status
    except (BrokenPipeError, ConnectionResetError):
        status = 413  # the server answered and closed while we were still sending
    finally:
        conn.close()
    assert status == 413


@pytest.mark.parametrize("query", [
    {"run": "../../../etc", "tool": "profile_summary"},
    {"run": "no 'such' run", "tool": "overview_page"},
    {"run": "x" * 10000, "tool": "overview_page"},
    {"run": "\x00", "tool": "x"},
    {"tool": "overview_page"},
])
def test_bad_names_are_4xx(hostile: tuple[Server, Path, Any], query: dict[str, str]) -> None:
    server, _, _ = hostile
    status, body = _get(server, "data", query)
    assert 400 <= status < 500, (status, body)
    _assert_answer(status, body, str(query)[:80])


def test_zz_server_survived_and_logdir_unchanged(hostile: tuple[Server, Path, Any]) -> None:
    server, logdir, before = hostile
    assert server.process.poll() is None, server.log()
    good = next(name for name in _runs(server) if name.startswith("torch_cnn"))
    status, _ = _get(server, "data", {"run": good, "tool": "profile_summary"})
    assert status == 200
    assert _snapshot(logdir) == before
    assert stat.S_ISFIFO((next(logdir.rglob("fifo.trace.json"))).lstat().st_mode)
    assert "Traceback" not in server.log()


@pytest.mark.parametrize("mode", [0o777, 0o775])
def test_serve_refuses_a_cache_dir_others_can_write(tmp_path: Path, mode: int) -> None:
    """Another user who can write the cache could plant converted profiles: refused at start."""
    import subprocess
    import sys

    from tests.servers import PLUGIN_SRC

    cache = tmp_path / "shared_cache"
    cache.mkdir()
    cache.chmod(mode)
    (tmp_path / "logs").mkdir()
    env = dict(os.environ, PYTHONPATH=str(PLUGIN_SRC))
    proc = subprocess.run([sys.executable, "-m", "tbprof.cli", "serve", "--logdir", str(tmp_path / "logs"),
                           "--cache-dir", str(cache), "--port", "0"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 1, proc.stderr
    assert f"refusing the tbprof cache dir {cache}" in proc.stderr and "other users can write" in proc.stderr
    assert "Traceback" not in proc.stderr
