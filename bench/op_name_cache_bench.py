"""The parsed op-name cache (``domain/tf_op.parse_tf_op``: a ``SmallLru`` bounded in bytes)
against ``functools.lru_cache(maxsize=65536)`` (what it replaced, issue #26) in one run.

    python bench/op_name_cache_bench.py [--logdir demo_logs] [--repeat 15]

Every distinct string of the logdir's profiles is parsed through each cache: first into an
empty cache (miss: parse + store), then again (hit). Prints ns per name, best of ``--repeat``,
the ratios SmallLru / lru_cache, and the bytes the SmallLru charged for the names.
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))

from tbprof.domain import tf_op  # noqa: E402
from tbprof.service.profiles import Profiles  # noqa: E402


def distinct_strings(logdir: Path) -> list[str]:
    profiles = Profiles(logdir, cache_dir=Path(tempfile.mkdtemp()))
    names: list[str] = []
    for run in profiles.index.runs().values():
        for host in run.hosts:
            store = profiles.store(run, host)
            strings = getattr(store, "strings", None)
            if strings is not None:
                names += strings.as_list()
    return list(dict.fromkeys(n for n in names if n))


def best_ns(parse: Callable[[str], object], clear: Callable[[], None], names: list[str],
            repeat: int) -> tuple[float, float]:
    miss = hit = float("inf")
    for _ in range(repeat):
        clear()
        t = time.perf_counter()
        for n in names:
            parse(n)
        miss = min(miss, time.perf_counter() - t)
        t = time.perf_counter()
        for n in names:
            parse(n)
        hit = min(hit, time.perf_counter() - t)
    return 1e9 * miss / len(names), 1e9 * hit / len(names)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--logdir", type=Path, default=REPO / "demo_logs")
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    names = distinct_strings(args.logdir)
    old = functools.lru_cache(maxsize=65536)(tf_op._parse_tf_op)
    lru_miss, lru_hit = best_ns(old, old.cache_clear, names, args.repeat)
    new_miss, new_hit = best_ns(tf_op.parse_tf_op, tf_op._PARSED.clear, names, args.repeat)
    used = tf_op._PARSED.used_bytes
    print(f"{len(names)} distinct strings of {args.logdir}")
    print(f"{'':24}{'miss ns':>10}{'hit ns':>10}")
    print(f"{'lru_cache(65536)':24}{lru_miss:10.0f}{lru_hit:10.0f}")
    print(f"{'SmallLru (bytes)':24}{new_miss:10.0f}{new_hit:10.0f}")
    print(f"{'ratio SmallLru/lru':24}{new_miss / lru_miss:10.2f}{new_hit / lru_hit:10.2f}")
    print(f"SmallLru charged {used / 2**20:.2f} MiB for {len(names)} names ({used / len(names):.0f} bytes each; "
          f"bound {tf_op.PARSE_CACHE_BYTES / 2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
