"""Nothing a Dask worker returns is unpickled in the server (issue #34, medium).

An unauthenticated client of the scheduler replaced a worker's ``convert_batch``; the next
all-hosts request ran a shell command as a child of the tbprof server, because results were
unpickled there. Results are now taken as msgpack data only, and a batch's answer is one binary
frame whose decoder checks every length against its bytes: a worker that answers with a pickle
(whose unpickling would run code) or with data of another shape gives that batch's hosts an
error, and nothing runs. The pod: copies of jax_2hosts' host files.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.partial_batches import encode_batch
from tbprof.service.executor import DaskExecutor, HostTask, open_batch, plain_data

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from make_pod import make_pod

REPO = Path(__file__).resolve().parents[2]


class RunsCodeWhenUnpickled:
    """A result whose unpickling writes a file (a stand-in for any command)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path(self.marker).write_text, ("unpickled in the server",))


def _evil_convert_batch(tasks: Any) -> Any:
    return RunsCodeWhenUnpickled(os.environ["TBPROF_TEST_MARKER"])


def _replace_convert_batch() -> None:
    """What the attacker ran on every worker (``Client.run``)."""
    import tbprof.service.executor as executor

    executor.convert_batch = _evil_convert_batch


def _wrong_shape_convert_batch(tasks: Any) -> Any:
    return {"results": [{"host": "not-a-host-of-the-batch", "partial": b""}]}


def _replace_with_wrong_shape() -> None:
    import tbprof.service.executor as executor

    executor.convert_batch = _wrong_shape_convert_batch


def test_a_worker_answering_a_pickle_runs_nothing_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from distributed import Client, LocalCluster

    marker = tmp_path / "pwned"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join((str(REPO / "plugin"), str(REPO))))
    monkeypatch.setenv("TBPROF_TEST_MARKER", str(marker))
    make_pod(tmp_path / "pod", 2)
    files = sorted((tmp_path / "pod").rglob("*.xplane.pb"))
    tasks = [HostTask(host=f.stem.split(".")[0], path=str(f), kind="xspace", cache_dir=str(tmp_path / "cache"))
             for f in files]
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                      scheduler_port=0) as cluster:
        with Client(cluster.scheduler_address) as attacker:
            attacker.run(_replace_convert_batch)
        executor = DaskExecutor(cluster.scheduler_address)
        try:
            got = list(executor.map_batches(tasks))
            with Client(cluster.scheduler_address) as attacker:
                attacker.run(_replace_with_wrong_shape)
            wrong = list(executor.map_batches(tasks))
        finally:
            executor.close()
    assert not marker.exists(), "a worker's pickle was unpickled in the server"
    for answer in (got, wrong):
        results = [r for batch in answer for r in batch["results"]]
        assert sorted(r["host"] for r in results) == sorted(t.host for t in tasks)
        assert all("the Dask task failed" in r["error"] for r in results), results


def test_open_batch_takes_a_frame_of_the_batch_only() -> None:
    task = HostTask(host="h", path="/x", kind="xspace", cache_dir="/c")
    result = {"host": "h", "file": "/x", "error": "cannot read the file"}
    frame = encode_batch([result], [None], None, [], {"combine_s": 0.5})
    opened = open_batch({"frame": frame}, [task])
    assert opened["results"] == [result] and opened["parts"] == {} and opened["timings"] == {"combine_s": 0.5}
    other = encode_batch([{**result, "host": "other"}], [None], None, [], {})
    for bad in ({"results": [{"host": "h"}]}, {"frame": "text"}, {"frame": other}, {"frame": frame[:-9]},
                {"frame": frame[:40]}, "x"):
        with pytest.raises(ValueError):
            open_batch(bad, [task])
    with pytest.raises(ValueError):
        plain_data({"x": object()})
    with pytest.raises(ValueError):
        plain_data({1: "non-string key"})
