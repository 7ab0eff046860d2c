"""`tbprof compare` and `tbprof check` on real pairs: exit codes of a regression, an
improvement and noise, and clear errors for ambiguous or bad arguments.

Pairs: custom_loop is the keras_cnn model trained by a custom loop, about 18 % faster per step
(see tests/analyses/test_compare.py for the numbers); jax_2hosts' two hosts run data-parallel
steps of the same length, but worker0 waits in the all-reduce for worker1 (the straggler).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tbprof.cli import main as cli
from tbprof.cli.compare import EXIT_REGRESSION, EXIT_UNDECIDED
from tests.conftest import xplane_of


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("cache"))


def test_compare_text_and_json(capsys: pytest.CaptureFixture[str], profiles_root: Path, cache: str) -> None:
    keras, custom = profiles_root / "keras_cnn", profiles_root / "custom_loop"
    code, out, _ = _run(capsys, "compare", str(keras), str(custom), "--cache-dir", cache)
    assert code == 0
    assert out.splitlines()[2].startswith("verdict    step time -")
    assert "op types: largest changes" in out and "memory: peak in use" in out
    code, out, _ = _run(capsys, "compare", str(keras), str(custom), "--json", "--cache-dir", cache)
    body = json.loads(out)
    assert code == 0 and body["tool"] == "compare" and body["verdict"]["kind"] == "faster"
    assert set(body["tables"]["ops"]) >= {"columns", "rows", "total_rows"}


@pytest.mark.parametrize(("base", "cand", "extra", "code", "decision"), [
    # 8 custom-loop steps against 6 Keras steps: the interval of the change is above +5 %.
    ("custom_loop", "keras_cnn", (), EXIT_REGRESSION, "REGRESSION"),
    ("keras_cnn", "custom_loop", (), 0, "IMPROVEMENT"),
    ("custom_loop", "custom_loop", (), 0, "NOISE"),
    # Two close hosts of one data-parallel run.
    ("jax_2hosts", "jax_2hosts", ("--base-host", "worker0", "--host", "worker1"), 0, "NOISE"),
    # worker0's all-reduce waits ~2.6 ms per step for worker1; worker1's takes ~13 µs.
    ("jax_2hosts", "jax_2hosts", ("--base-host", "worker1", "--host", "worker0", "--op", "reduce_sum"),
     EXIT_REGRESSION, "REGRESSION"),
    ("jax_2hosts", "jax_2hosts", ("--base-host", "worker0", "--host", "worker1", "--op", "reduce_sum"),
     0, "IMPROVEMENT"),
    # An op type whose time is the same on both hosts.
    ("jax_2hosts", "jax_2hosts", ("--base-host", "worker0", "--host", "worker1", "--op", "transpose"),
     0, "NOISE"),
    # One step against eight: no 95 % interval exists (P(U = 0) = 1/9), so no decision.
    ("jax_mlp", "jax_mlp", ("--steps", "5"), EXIT_UNDECIDED, "UNDECIDED"),
])
def test_check_exit_codes(capsys: pytest.CaptureFixture[str], profiles_root: Path, cache: str, base: str,
                          cand: str, extra: tuple[str, ...], code: int, decision: str) -> None:
    got, out, err = _run(capsys, "check", str(profiles_root / base), str(profiles_root / cand),
                         "--max-regression", "5%", *extra, "--cache-dir", cache)
    assert (got, out.split(":", 1)[0]) == (code, decision), out + err


def test_check_json_and_bound(capsys: pytest.CaptureFixture[str], profiles_root: Path, cache: str) -> None:
    args = ("check", str(profiles_root / "custom_loop"), str(profiles_root / "keras_cnn"), "--json",
            "--cache-dir", cache)
    code, out, _ = _run(capsys, *args, "--max-regression", "5")
    body = json.loads(out)
    assert code == EXIT_REGRESSION and body["decision"] == "regression" and body["ci_low_percent"] > 5
    # A bound above the whole interval: the slowdown is real but allowed.
    code, out, _ = _run(capsys, *args, "--max-regression", f"{body['ci_high_percent'] + 1:.1f}%")
    assert code == 0 and json.loads(out)["decision"] == "slower within the bound"
    # Between the interval's ends and below the estimate: not failing, but said.
    mid = (body["ci_low_percent"] + body["change_percent"]) / 2
    code, out, _ = _run(capsys, *args, "--max-regression", f"{mid:.2f}%")
    assert code == 0 and json.loads(out)["decision"] == "possible regression"


def test_file_paths_and_hosts(capsys: pytest.CaptureFixture[str], profiles_root: Path, cache: str) -> None:
    w0 = xplane_of(profiles_root, "jax_2hosts", "worker0")
    w1 = xplane_of(profiles_root, "jax_2hosts", "worker1")
    code, out, err = _run(capsys, "check", str(w1), str(w0), "--max-regression", "5%", "--op", "reduce_sum",
                          "--cache-dir", cache)
    assert code == EXIT_REGRESSION, out + err


@pytest.mark.parametrize(("argv", "message"), [
    (("check", "{root}/jax_2hosts", "{root}/jax_2hosts", "--max-regression", "5%"), "choose one with --base-host"),
    (("check", "{root}", "{root}/jax_mlp", "--max-regression", "5%"), "choose one with --base-run"),
    (("check", "{root}/jax_mlp", "{root}/jax_mlp", "--max-regression", "lots"), "expected a percentage"),
    (("check", "{root}/jax_mlp", "{root}/jax_mlp", "--max-regression", "5%", "--op", "NoSuchOp"), "matches no"),
    (("compare", "{root}/jax_mlp", "{root}/nope"), "no such file"),
    (("compare", "{root}/jax_mlp", "{root}/jax_mlp", "--steps", "900:999"), "matches none"),
    (("compare", "{root}/jax_mlp", "{root}/jax_mlp", "--confidence", "1.5"), "--confidence"),
])
def test_usage_errors(capsys: pytest.CaptureFixture[str], profiles_root: Path, cache: str,
                      argv: tuple[str, ...], message: str) -> None:
    code, _, err = _run(capsys, *(a.format(root=profiles_root) for a in argv), "--cache-dir", cache)
    assert code == 1 and message in err, err


def _trace_diff_rows(body: dict[str, object]) -> dict[str, dict[str, object]]:
    table = body["tables"]["trace_diff"]  # type: ignore[index]
    names = [c["name"] for c in table["columns"]]
    return {r[names.index("name")]: dict(zip(names, r, strict=True)) for r in table["rows"]}


def test_compare_trace_diff_iterations(capsys: pytest.CaptureFixture[str], sample_profiles: Path,
                                       cache: str) -> None:
    """--base-iterations / --iterations choose HTA's trace-diff iterations (its control_iteration /
    test_iteration): torch_cnn's first against its second iteration, as HTA's golden
    ``first_vs_second_iteration``; and both summed on one side (HTA sums a list's events)."""
    golden_path = Path(__file__).resolve().parent.parent / "golden" / "hta" / "torch_cnn.json"
    golden = json.loads(golden_path.read_text())["trace_diff"]["first_vs_second_iteration"]
    first, second = golden["iterations"]
    run = str(sample_profiles / "torch_cnn")
    code, out, err = _run(capsys, "compare", run, run, "--base-iterations", str(first), "--iterations",
                          str(second), "--json", "--cache-dir", cache)
    assert code == 0, err
    body = json.loads(out)
    assert (body["trace_diff"]["baseline_iterations"], body["trace_diff"]["candidate_iterations"]) == \
        ([first], [second])
    rows = _trace_diff_rows(body)
    assert sorted(rows) == sorted(w["name"] for w in golden["rows"])
    for w in golden["rows"]:
        assert (rows[w["name"]]["baseline_count"], rows[w["name"]]["candidate_count"]) == \
            (w["control_counts"], w["test_counts"])
    code, out, err = _run(capsys, "compare", run, run, "--base-iterations", f"{second},{first}", "--iterations",
                          str(first), "--json", "--cache-dir", cache)
    assert code == 0, err
    rows = _trace_diff_rows(json.loads(out))
    for w in golden["rows"]:
        assert rows[w["name"]]["baseline_count"] == w["control_counts"] + w["test_counts"]
        assert rows[w["name"]]["candidate_count"] == w["control_counts"]
    code, out, _ = _run(capsys, "compare", run, run, "--iterations", str(second), "--cache-dir", cache)
    assert code == 0 and f"HTA trace diff, iterations {first} -> {second};" in out


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--iterations", "999", "is not a ProfilerStep of the trace"),
    ("--base-iterations", "3;4", "expected ProfilerStep numbers"),
])
def test_compare_bad_iterations(capsys: pytest.CaptureFixture[str], sample_profiles: Path, cache: str,
                                flag: str, value: str, message: str) -> None:
    run = str(sample_profiles / "torch_cnn")
    code, _, err = _run(capsys, "compare", run, run, flag, value, "--cache-dir", cache)
    assert code == 1 and message in err, err
