"""The token table of a streamed Chrome trace counts against the streaming budget (issue #34,
medium).

A trace of millions of distinct names peaked at 16x its budget (1,631 MB under 100 MB): the
scanner's token table (and the strings made of it) stayed outside the budget the streaming
reader checks. It is counted while the file is scanned, and such a file is refused (MemoryRefusal)
with its peak within the budget, as the XSpace streaming reader refuses one. Files written here
(Chrome trace ``X`` events: ``ph``, ``pid``, ``tid``, ``ts``, ``dur``, ``name``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.servers import PLUGIN_SRC

N_NAMES = 1_000_000
BUDGET_BYTES = 64_000_000

_CHILD = """
import json, sys
from pathlib import Path
from tbprof.cache.disk_cache import DiskCache
from tbprof.errors import MemoryRefusal
from tbprof.readers.chrome_stream import stream_chrome_trace
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
base = hwm()
try:
    stream_chrome_trace(Path(sys.argv[1]), DiskCache(Path(sys.argv[2])), "k", int(sys.argv[3]))
    refused = ""
except MemoryRefusal as e:
    refused = str(e)
print(json.dumps({"grew_bytes": hwm() - base, "refused": refused}))
"""


def _distinct_names(path: Path) -> None:
    with open(path, "w") as f:
        f.write('{"traceEvents":[')
        f.write(",".join(f'{{"ph":"X","pid":1,"tid":1,"ts":{i},"dur":1,"name":"kernel_{i:012d}"}}'
                         for i in range(N_NAMES)))
        f.write("]}")


def test_distinct_names_are_counted_against_the_streaming_budget(tmp_path: Path) -> None:
    path = tmp_path / "names.trace.json"
    _distinct_names(path)
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(tmp_path / "cache"), str(BUDGET_BYTES)],
                         capture_output=True, text=True, timeout=600, env={"PYTHONPATH": str(PLUGIN_SRC)},
                         check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    # 1 M names of 19 characters: ~300 bytes each once read (scanner table, bytes, str, string
    # table), ~300 MB against a 64 MB budget.
    assert "distinct names" in got["refused"], got
    assert got["grew_bytes"] < BUDGET_BYTES, got
