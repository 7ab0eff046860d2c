"""The C heap tuned for a one-shot command (``memory_guard.share_heaps(1)``, ``large_blocks_in_heap``):
a large block freed on one thread serves the next one allocated on another without fresh
pages, where glibc's defaults map (and fault in) a new one. Each case in a process of its own:
the tuning lasts for the process."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

_CHILD = r"""
import json, resource, sys, threading
import numpy as np
from tbprof.cache import memory_guard

tuned = sys.argv[1] == "tuned"
applied = memory_guard.share_heaps(1) and memory_guard.large_blocks_in_heap() if tuned else False
SIZE = 48 << 20
held = []

def convert():  # a conversion's temporaries, freed on its thread; its result kept
    scratch = np.ones(SIZE, dtype=np.uint8)
    held.append(np.ones(1 << 20, dtype=np.uint8))
    del scratch

t = threading.Thread(target=convert)
t.start()
t.join()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
again = np.ones(SIZE, dtype=np.uint8)  # the analyses' first large block, on this thread
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(json.dumps({"applied": applied, "faults": faults}))
"""


def _faults(mode: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", _CHILD, mode], capture_output=True, text=True, check=True, timeout=60)
    result: dict[str, object] = json.loads(out.stdout)
    return result


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                    reason="glibc's mallopt: elsewhere the tuning does nothing (and says so)")
def test_a_block_freed_by_the_conversion_serves_the_analyses() -> None:
    default = _faults("default")
    tuned = _faults("tuned")
    assert tuned["applied"] is True
    # 48 MiB of fresh pages fault in at least once per 2 MiB huge page (24), at most once per
    # 4 KiB page; reused from the heap, they are mapped already: a handful at most.
    assert isinstance(default["faults"], int) and default["faults"] >= 24
    assert isinstance(tuned["faults"], int) and tuned["faults"] < 12
