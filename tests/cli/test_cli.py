"""The `tbprof` command line on real profiles."""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
from pathlib import Path

import pytest

from tbprof.cli import main as cli
from tests.conftest import xplane_of


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_tools_lists_runs(capsys: pytest.CaptureFixture[str], profiles_root: Path, cache_dir: Path) -> None:
    code, out, _ = _run(capsys, "tools", str(profiles_root), "--cache-dir", str(cache_dir))
    assert code == 0
    lines = out.strip().splitlines()
    assert len(lines) == 4  # keras_cnn, custom_loop, jax_mlp, jax_2hosts: one session each
    two = next(line for line in lines if line.startswith("jax_2hosts/"))
    assert two.split("\t")[1] == "worker0,worker1"


@pytest.mark.parametrize("target", ["file", "session", "logdir"])
def test_show_accepts_file_session_or_logdir(capsys: pytest.CaptureFixture[str], profiles_root: Path,
                                             cache_dir: Path, target: str) -> None:
    f = xplane_of(profiles_root, "custom_loop")
    path = {"file": f, "session": f.parent, "logdir": profiles_root / "custom_loop"}[target]
    code, out, _ = _run(capsys, "show", "profile_summary", str(path), "--cache-dir", str(cache_dir))
    assert code == 0
    body = json.loads(out)
    assert body["tool"] == "profile_summary" and body["event_count"] > 0


def test_csv_output(capsys: pytest.CaptureFixture[str], profiles_root: Path, cache_dir: Path) -> None:
    f = xplane_of(profiles_root, "jax_mlp")
    code, out, _ = _run(capsys, "show", "profile_summary", str(f), "--format", "csv", "--cache-dir", str(cache_dir))
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["host", "plane", "line", "event_count", "device_type"]
    assert sum(int(r[3]) for r in rows[1:]) == json.loads(
        _run(capsys, "show", "profile_summary", str(f), "--cache-dir", str(cache_dir))[1])["event_count"]


def test_summary_json(capsys: pytest.CaptureFixture[str], profiles_root: Path, cache_dir: Path) -> None:
    code, out, _ = _run(capsys, "summary", str(profiles_root / "jax_mlp"), "--json", "--cache-dir", str(cache_dir))
    assert code == 0
    body = json.loads(out)
    assert body["device_type"] == "GPU" and body["device_count"] == 2 and body["host_count"] == 1
    assert body["event_count"] > 0


def test_summary_timings_of_a_pod(capsys: pytest.CaptureFixture[str], profiles_root: Path, cache_dir: Path) -> None:
    """``--timings``: the same answer on stdout, and one line on stderr naming each phase, the
    hosts' work summed (a pod of two hosts converts them for their partials)."""
    path = str(profiles_root / "jax_2hosts")
    code, out, err = _run(capsys, "summary", path, "--json", "--timings", "--cache-dir", str(cache_dir))
    assert code == 0 and json.loads(out)["host_count"] == 2
    (line,) = err.strip().splitlines()
    assert line.startswith("tbprof timings (s): import + list ")
    for phase in ("pool start + dispatch", "waiting for workers", "decode", "combine", "answer", "convert",
                  "partial", "encode", "serial (all but waiting for workers)"):
        assert f" {phase} " in line, phase
    # The serial part is the phases but the wait: import + list, the summary's total and the answer.
    seconds = {k: float(v) for k, v in re.findall(
        r"(import \+ list|waiting for workers|summary total|answer|serial \(all but waiting for workers\)) ([0-9.]+)",
        line)}
    derived = seconds["import + list"] + seconds["summary total"] + seconds["answer"] - seconds["waiting for workers"]
    assert seconds["serial (all but waiting for workers)"] == pytest.approx(derived, abs=0.0025)  # 3 decimals each
    code, _, err = _run(capsys, "summary", path, "--json", "--cache-dir", str(cache_dir))
    assert code == 0 and err == ""


def test_summary_lists_the_logdir_once_while_it_imports(profiles_root: Path, cache_dir: Path) -> None:
    """``start_listing`` walks the logdir on a thread; the Profiles given its index waits for that
    walk instead of starting another, and lists the same runs as a Profiles of its own."""
    from tbprof.cli.common import profiles_for, start_listing
    from tbprof.service.profiles import Profiles

    index = start_listing(str(profiles_root))
    profiles = profiles_for(str(profiles_root), str(cache_dir), None, index)
    assert profiles.index is index
    assert sorted(profiles.index.runs()) == sorted(Profiles(profiles_root, cache_dir=cache_dir).index.runs())
    assert len(profiles.index.runs()) == 4 and index.listings == 1


def test_summary_timings_of_one_host(capsys: pytest.CaptureFixture[str], profiles_root: Path,
                                     cache_dir: Path) -> None:
    """One host's summary total splits into the analyses' imports, the wait for the conversion
    beyond them and the analyses: three wall times within the total (the rest is the call's own)."""
    code, out, err = _run(capsys, "summary", str(profiles_root / "jax_mlp"), "--json", "--timings",
                          "--cache-dir", str(cache_dir))
    assert code == 0 and json.loads(out)["host_count"] == 1
    (line,) = err.strip().splitlines()
    found = re.search(r" summary total ([0-9.]+) \(imports ([0-9.]+), then converting ([0-9.]+), "
                      r"analyses ([0-9.]+)\), answer ", line)
    assert found is not None, line
    total, *parts = (float(x) for x in found.groups())
    # Each printed to the millisecond, so their sum may pass the total by rounding alone.
    assert sum(parts) <= total + 0.002


def test_errors_exit_codes(capsys: pytest.CaptureFixture[str], tmp_path: Path, cache_dir: Path) -> None:
    code, _, err = _run(capsys, "show", "profile_summary", str(tmp_path / "missing"))
    assert code == cli.EXIT_USAGE and "no such file" in err
    bad = tmp_path / "bad.xplane.pb"
    bad.write_bytes(b"\xff" * 20)
    code, _, err = _run(capsys, "show", "profile_summary", str(bad), "--cache-dir", str(cache_dir))
    assert code == cli.EXIT_UNREADABLE and "bad.xplane.pb" in err and "not a readable XSpace" in err
    code, _, err = _run(capsys, "show", "no_such_tool", str(bad))
    assert code == cli.EXIT_USAGE and "unknown tool" in err


# XProf's newer tools (#18): JSON, and CSV of their first table (graph_viewer's nodes, ...).
@pytest.mark.parametrize(("tool", "table"), [
    ("hlo_stats", "hlo_ops"), ("roofline_model", "roofline"), ("memory_viewer", "buffers"),
    ("graph_viewer", "nodes"), ("smart_suggestion", "suggestions"),
])
def test_show_hlo_tools_json_and_csv(capsys: pytest.CaptureFixture[str], profiles_root: Path, cache_dir: Path,
                                     tool: str, table: str) -> None:
    f = str(xplane_of(profiles_root, "jax_mlp"))
    code, out, _ = _run(capsys, "show", tool, f, "--cache-dir", str(cache_dir))
    assert code == 0
    body = json.loads(out)
    assert body["tool"] == tool
    code, out, _ = _run(capsys, "show", tool, f, "--format", "csv", "--table", table, "--cache-dir", str(cache_dir))
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0][0] == {"hlo_ops": "rank", "roofline": "operation", "buffers": "logical_buffer_id", "nodes": "name",
                          "suggestions": "rule"}[table]
    # One CSV row per table row: the JSON's own list where the tool has one.
    listed = {"nodes": "nodes", "suggestions": "suggestions"}.get(table)
    if listed:
        assert len(rows) - 1 == len(body[listed]) > 0


@pytest.mark.parametrize(("tool", "why"), [("inference_profile", "request_id"), ("perf_counters", "TPU")])
def test_show_absent_tool_says_why(capsys: pytest.CaptureFixture[str], profiles_root: Path, cache_dir: Path,
                                   tool: str, why: str) -> None:
    code, out, err = _run(capsys, "show", tool, str(xplane_of(profiles_root, "jax_mlp")), "--cache-dir",
                          str(cache_dir))
    assert code == 1 and out == "" and why in err


@pytest.mark.parametrize("command", ["show", "csv"])
def test_show_and_csv_take_the_workers(capsys: pytest.CaptureFixture[str], profiles_root: Path, cache_dir: Path,
                                       monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """`tbprof show`/`csv` convert a pod's hosts on the executor `--workers` names (#26: they used
    to build their profiles without one, converting in-process whatever was asked)."""
    from tbprof.cli import show
    from tbprof.service.executor import ProcessPool

    seen: list[object] = []
    real = show.profiles_for

    def spy(path: str, cache: str | None, executor: object = None) -> object:
        seen.append(executor)
        return real(path, cache, executor)  # type: ignore[arg-type]

    monkeypatch.setattr(show, "profiles_for", spy)
    code, _, _ = _run(capsys, command, "framework_op_stats", str(profiles_root / "jax_2hosts"), "--workers", "3",
                      "--cache-dir", str(cache_dir))
    assert code == 0
    assert len(seen) == 1 and isinstance(seen[0], ProcessPool) and seen[0].workers == 3


def test_summary_timings_say_when_forked_workers_were_ready() -> None:
    """A pod's forked workers: the line says when the last was ready and when the first batch
    was handed out (the later is where conversion could start); other pods' lines do not."""
    from tbprof.cli.summary import timings_line

    phases = {"start_s": 0.05, "wait_s": 0.2, "ready_at_s": 0.18, "handed_at_s": 0.125}
    line = timings_line(0.1, 0.4, 0.001, phases, {})
    assert ("(starting workers 0.050; last worker ready at 0.180, first batch handed out at 0.125 after the "
            "start)") in line
    assert "ready at" not in timings_line(0.1, 0.4, 0.001, {"start_s": 0.05}, {})


def test_the_command_runs_with_the_collector_that_entry_paused_for_its_imports_on(
        capsys: pytest.CaptureFixture[str], profiles_root: Path, cache_dir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``entry`` pauses the collector for the command module's imports; ``main`` turns it on
    again once it has the arguments, so that no command (``serve`` above all, which runs for
    days) runs with it off."""
    import gc

    from tbprof.cli import common, show

    seen: list[bool] = []
    configure, cmd_tools = show.COMMANDS["tools"]

    def cmd_tools_seen(args: argparse.Namespace) -> int:
        seen.append(gc.isenabled())
        return cmd_tools(args)

    monkeypatch.setitem(show.COMMANDS, "tools", (configure, cmd_tools_seen))
    common.pause_collector()
    try:
        assert not gc.isenabled()
        code, out, _ = _run(capsys, "tools", str(profiles_root / "jax_mlp"), "--cache-dir", str(cache_dir))
    finally:
        common.resume_collector()
        gc.unfreeze()
    assert code == 0 and out and seen == [True]


def test_summary_leaves_the_garbage_collector_as_it_found_it(capsys: pytest.CaptureFixture[str],
                                                              profiles_root: Path, cache_dir: Path) -> None:
    """The command imports with the collector off and freezes what it imported; a caller that
    goes on (this test) finds it on again and nothing frozen, after an answer and after an error."""
    import gc

    assert gc.isenabled() and gc.get_freeze_count() == 0
    code, out, _ = _run(capsys, "summary", str(profiles_root / "jax_2hosts"), "--json", "--cache-dir", str(cache_dir))
    assert code == 0 and json.loads(out)["host_count"] == 2
    assert gc.isenabled() and gc.get_freeze_count() == 0
    code, _, _ = _run(capsys, "summary", str(profiles_root / "no_such_run"), "--cache-dir", str(cache_dir))
    assert code != 0
    assert gc.isenabled() and gc.get_freeze_count() == 0
