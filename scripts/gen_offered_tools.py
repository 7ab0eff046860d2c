#!/usr/bin/env python3
"""Writes tests/data/offered_tools.json: the tools the routes offer for each demo run.

For every run of ``demo_logs/`` (plus a Chrome trace with no xplane beside it, the one run kind
the demo has none of), what the HTTP routes answer: the ``runs`` route before the run is
converted (the tools of its kind, ``tools_exact: false``) and the ``tools`` route after (the
tools with data), each with the tools that take several hosts at once.
``tests/service/test_offered_tools.py`` compares the routes' answers with this file, so a change
to how tools are matched to runs that changes what a user is offered fails there.

Run: ``PYTHONPATH=plugin python scripts/gen_offered_tools.py`` (``--check``: exit 1 when stale).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "data" / "offered_tools.json"
# A jax_mlp session's Chrome trace alone in its folder: a ``chrome_trace`` run.
CHROME_ONLY = ("jax_mlp/plugins/profile/2026_11_26_00_32_23/vm.trace.json.gz", "chrome_only/plugins/profile/s1")


def build_logdir(root: Path) -> Path:
    """A copy of demo_logs/ and the Chrome-trace-only run, under ``root``."""
    logdir = root / "logs"
    shutil.copytree(REPO / "demo_logs", logdir)
    source, folder = CHROME_ONLY
    (logdir / folder).mkdir(parents=True)
    shutil.copy(logdir / source, logdir / folder / "vm.trace.json.gz")
    return logdir


def offered(logdir: Path, cache_dir: Path) -> dict[str, Any]:
    """Per run: its kind, the ``runs`` route's tools before conversion and the ``tools`` route's after."""
    sys.path.insert(0, str(REPO / "plugin"))
    from werkzeug.test import Client

    from tbprof.http.app import create_app

    client = Client(create_app(logdir, cache_dir=cache_dir))
    listed = client.get("/runs").get_json()["runs"]
    assert listed, "no runs in the demo logdir"
    out: dict[str, Any] = {}
    for run in sorted(listed, key=lambda r: r["run"]):
        exact = client.get("/tools", query_string={"run": run["run"]}).get_json()["tools"]
        out[run["run"]] = {
            "kind": run["kind"],
            "candidates": run["tools"],
            "candidates_multi_host": run["multi_host_tools"],
            "tools": [t["name"] for t in exact],
            "tools_multi_host": [t["name"] for t in exact if t["multi_host"]],
        }
    return out


def render() -> str:
    # The disk cache is written after the answers, in the background: the folder is left to it.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        logdir = build_logdir(Path(tmp))
        return json.dumps(offered(logdir, Path(tmp) / "cache"), indent=1) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT.relative_to(REPO)} is stale: run scripts/gen_offered_tools.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
