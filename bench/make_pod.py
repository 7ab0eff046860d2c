#!/usr/bin/env python3
"""Writes an N-host pod from real host files: ``<out>/plugins/profile/<session>/host%04d.xplane.pb``.

Host ``i`` is a byte copy of source file ``i % len(sources)`` (by default the two real hosts of
``demo_logs/jax_2hosts``), so every host is a real profile and the pod is what a data-parallel
job's hosts look like to a reader: same program, one file per host. Copies, not links, so
each host has its own path, size and mtime (its own cache key) as on a real pod.

    python bench/make_pod.py OUT --hosts 64 [--source FILE ...] [--session NAME]
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCES = sorted((REPO / "demo_logs" / "jax_2hosts").rglob("*.xplane.pb"))


def make_pod(out: Path, hosts: int, sources: list[Path] | None = None,
             session: str = "2026_11_26_00_00_00") -> Path:
    """Writes the pod and returns its session folder."""
    sources = sources or DEFAULT_SOURCES
    if not sources:
        raise SystemExit("no source host files")
    folder = out / "plugins" / "profile" / session
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(hosts):
        shutil.copyfile(sources[i % len(sources)], folder / f"host{i:04d}.xplane.pb")
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--source", type=Path, action="append", default=None)
    ap.add_argument("--session", default="2026_11_26_00_00_00")
    args = ap.parse_args()
    folder = make_pod(args.out, args.hosts, args.source, args.session)
    print(folder)


if __name__ == "__main__":
    main()
