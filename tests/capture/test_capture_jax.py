"""The same capture against jax.profiler.start_server (skipped unless jax is installed)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from tbprof.http.app import create_app
from tests.capture.profiler_servers import capture_until, profiler_server

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed")]


def test_capture_jax_server(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    with profiler_server("jax_training_server.py", tmp_path / "jax.log") as server:
        app = create_app(logdir, cache_dir=tmp_path / "cache")
        host = f"localhost_{server.port}"

        def capture(attempt: int) -> tuple[int, dict[str, Any]]:
            r = Client(app).post("/capture", json={"addresses": server.address, "duration_ms": 500 << attempt})
            return r.status_code, json.loads(r.get_data())

        def has_training(answer: tuple[int, dict[str, Any]]) -> bool:
            if answer[0] != 200:
                return False
            store = app.ctx.profiles.store(app.ctx.profiles.index.runs(refresh=True)[answer[1]["run"]], host)
            plane = store.plane("/host:CPU")
            return plane is not None and store.strings.id("train") in set(plane.name_id.tolist())

        (status, body), _ = capture_until(capture, has_training)
        assert status == 200 and body["ok"], body
        run = app.ctx.profiles.run(body["run"])
        store = app.ctx.profiles.store(run, host)
        plane = store.plane("/host:CPU")
        assert plane is not None and plane.n_events > 0
        # StepTraceAnnotation("train", step_num=i) in jax_training_server.py
        assert store.strings.id("train") in set(plane.name_id.tolist())
