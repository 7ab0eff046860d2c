"""A run's hosts in rank order (#35): PyTorch names its traces ``rank<N>.<process id>``, and the
process id decided the order (rank 1, 3, 0, 2) on every page that lists ranks."""

from __future__ import annotations

import shutil
from pathlib import Path

from tbprof.fs import location
from tbprof.readers.kinds import folder_runs
from tbprof.readers.step_files import host_order_key


def test_ranks_sort_by_rank_not_by_process_id() -> None:
    # Process ids chosen so that sorting by the last number (the step rule) gives 1, 3, 0, 2.
    hosts = ["rank0.300", "rank1.100", "rank2.400", "rank3.200", "rank10.50"]
    assert sorted(hosts, key=lambda h: host_order_key(False, h)) == hosts
    assert sorted(reversed(hosts), key=lambda h: host_order_key(False, h)) == hosts


def test_step_files_still_sort_by_step() -> None:
    steps = ["timeline-2.json", "timeline-10.json", "timeline-1.json"]
    assert sorted(steps, key=lambda h: host_order_key(True, h)) == [
        "timeline-1.json", "timeline-2.json", "timeline-10.json"]


def test_torch_ddp_run_lists_rank0_first(sample_profiles: Path, tmp_path: Path) -> None:
    # The demo's rank 1 has the smaller process id (1795675218821096345 < ...814413).
    folder = tmp_path / "torch_ddp"
    shutil.copytree(sample_profiles / "torch_ddp", folder)
    files = sorted(p.name for p in folder.iterdir())
    (run,) = folder_runs(location(folder), files, location(tmp_path))
    assert [h.split(".")[0] for h in run.hosts] == ["rank0", "rank1"]
