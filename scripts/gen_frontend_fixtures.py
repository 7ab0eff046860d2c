#!/usr/bin/env python3
"""Regenerates the frontend's test fixtures from the current backend on the sample profiles.

    python scripts/gen_frontend_fixtures.py          # rewrite the fixtures
    python scripts/gen_frontend_fixtures.py --check  # exit 1 when a committed fixture is stale

The vitest suites decode these real answers (frontend/src/data/testdata/, frontend/src/
trace_viewer/model/testdata/); tests/http/test_frontend_fixtures.py runs the check, so a backend
change that alters an answer also updates what the frontend is tested against. Answers are
made deterministic: the logdir copy lives at /logdir, every file's mtime is FIXED_MTIME_S.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "frontend" / "src" / "data" / "testdata"
TRACE = REPO / "frontend" / "src" / "trace_viewer" / "model" / "testdata"
FIXED_MTIME_S = 1_795_600_000  # 2026-11-25, a fixed "file time" so runs answers do not depend on the checkout
XSPACE = ("keras_cnn", "custom_loop", "jax_mlp", "jax_2hosts")
TRACE_WINDOW = {"width_px": "300", "start_ps": "100000000000", "end_ps": "180000000000"}


def _logdir(tmp: Path) -> Path:
    root = tmp / "logdir"
    for name in XSPACE:
        shutil.copytree(REPO / "demo_logs" / name, root / name)
    for path in root.rglob("*"):
        os.utime(path, (FIXED_MTIME_S, FIXED_MTIME_S))
    return root


def fixtures() -> dict[Path, bytes]:
    """Every fixture file and its bytes, from answers of the app on the sample profiles."""
    sys.path.insert(0, str(REPO / "plugin"))
    from werkzeug.test import Client

    from tbprof.http.app import create_app

    out: dict[Path, bytes] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = _logdir(Path(tmp))
        app = create_app(root, cache_dir=Path(tmp) / "cache")
        client = Client(app)

        def get(route: str, **args: str) -> Any:
            r = client.get("/" + route, query_string=args)
            assert r.status_code == 200, (route, args, r.get_data(as_text=True)[:200])
            return r

        def clean(v: Any) -> Any:  # the temporary logdir's path -> /logdir
            return json.loads(json.dumps(v).replace(str(root), "/logdir"))

        def write(path: Path, value: Any) -> None:
            # Trace frames stay on one line: ~50 kB of numbers nobody reads as text.
            indent = None if path.parent == TRACE else 1
            out[path] = (json.dumps(clean(value), indent=indent) + "\n").encode()

        runs = get("runs").get_json()
        write(DATA / "runs.json", runs)
        jax_mlp, custom_loop = (next(r["run"] for r in runs["runs"] if r["run"].startswith(prefix))
                                for prefix in ("jax_mlp/", "custom_loop/"))
        summary = get("data", run=jax_mlp, tool="profile_summary", rows="3").get_json()
        write(DATA / "profile_summary_jax_mlp.json", summary)
        write(DATA / "table_lines_gpu.json", get("table", run=jax_mlp, tool="profile_summary", table="lines",
                                                 **{"filter.plane": "GPU"}, sort="event_count", desc="1",
                                                 limit="4").get_json())
        query = "&".join(f"{k}={v}" for k, v in {"run": custom_loop, **TRACE_WINDOW}.items())
        frame = get("trace", run=custom_loop, **TRACE_WINDOW).get_data()
        write(TRACE / "custom_loop_frame.json", {"source": f"GET trace?{query} (demo_logs/custom_loop)",
                                                  "base64": base64.b64encode(frame).decode()})
        write(TRACE / "custom_loop_frame_json.json", get("trace", run=custom_loop, format="json",
                                                         **TRACE_WINDOW).get_json())
        app.ctx.profiles.cache.flush()  # background cache writes end before the folder goes
    return out


def main(argv: list[str]) -> int:
    stale = []
    for path, data in fixtures().items():
        if "--check" in argv:
            if not path.exists() or path.read_bytes() != data:
                stale.append(str(path.relative_to(REPO)))
        else:
            path.write_bytes(data)
    if stale:
        print("stale frontend fixtures (run python scripts/gen_frontend_fixtures.py): " + ", ".join(stale),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
