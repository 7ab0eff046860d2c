#!/usr/bin/env python3
"""Write the goldens of XProf 2.24.2's agent CLI (``xprof <subcommand>``) for tbprof's parity tests.

HOW TO REGENERATE
-----------------
With a Python that has PyPI ``xprof==2.24.2`` (never the system Python)::

    python3 -m venv /opt/xprof-venv && /opt/xprof-venv/bin/pip install xprof==2.24.2
    /opt/xprof-venv/bin/python tests/golden/make_xprof_agent_goldens.py

For each XSpace demo profile (``demo_logs/<name>``, copied to a temporary folder first so that no
XProf cache lands in the repository) and each host, the script runs ``xprof SUBCOMMAND
--session_id=SESSION --logdir=COPY --host=HOST`` and writes XProf's JSON to
``tests/golden/xprof_agent/<name>/<host>/<subcommand>.json`` (``--bypass_cache=True``: XProf's CLI
keeps answers in a cache of its own), minus the fields no test reads
(``kernel_records``: per-kernel names, the ``kernel_stats`` goldens cover them) to keep the files small,
and the temporary path XProf echoes in ``capture.input``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "xprof_agent"
PROFILES = ("jax_mlp", "jax_2hosts", "tpu_inference")
SUBCOMMANDS = ("get_device_time_attribution", "analyze_async_overlap", "get_kpi_metrics", "check_host_boundness",
               "get_peak_allocations")
# Every module, not XProf's default first 10.
EXTRA_FLAGS = {"get_peak_allocations": ["--limit=0"]}
DROPPED = ("kernel_records",)


def main() -> int:
    xprof = Path(sys.executable).parent / "xprof"
    if not xprof.exists():
        print(f"no xprof beside {sys.executable}: run this with the xprof==2.24.2 venv's python", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for name in PROFILES:
            logdir = Path(tmp) / name
            shutil.copytree(REPO / "demo_logs" / name, logdir)
            for xplane in sorted(logdir.rglob("*.xplane.pb")):
                session, host = xplane.parent.name, xplane.name.removesuffix(".xplane.pb")
                for sub in SUBCOMMANDS:
                    done = subprocess.run([str(xprof), sub, f"--session_id={session}", f"--logdir={logdir}",
                                           f"--host={host}", "--bypass_cache=True", *EXTRA_FLAGS.get(sub, [])],
                                          capture_output=True, text=True, check=True, cwd=tmp)
                    answer = json.loads(done.stdout)
                    for key in DROPPED:
                        answer.pop(key, None)
                    answer.get("capture", {}).pop("input", None)  # the temporary folder's path
                    # The temporary folder's path, wherever XProf echoes it (session_id, a reason).
                    answer = json.loads(json.dumps(answer).replace(tmp, "TMP"))
                    for key in ("__cached__", "__cache_age_s__"):  # XProf's answer cache (bypassed)
                        answer.pop(key, None)
                    target = OUT / name / host / f"{sub}.json"
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(json.dumps(answer, indent=1, sort_keys=True) + "\n")
                    print(target.relative_to(REPO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
