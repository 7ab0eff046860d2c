"""The tools each demo run is offered, before and after conversion, are the ones pinned in
tests/data/offered_tools.json (written by scripts/gen_offered_tools.py from the routes' answers):
matching tools to runs is a rule over descriptors, and this checks the rule's outcome per run."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import load_script


def test_every_demo_run_is_offered_the_pinned_tools(tmp_path: Path) -> None:
    script = load_script("gen_offered_tools")
    found = script.offered(script.build_logdir(tmp_path), tmp_path / "cache")
    pinned = json.loads(script.OUT.read_text())
    assert sorted(found) == sorted(pinned)
    for run, expected in pinned.items():
        assert found[run] == expected, run
    # Every run kind of readers/kinds.py is among the pinned runs.
    from tbprof.readers.kinds import KINDS

    assert {r["kind"] for r in pinned.values()} == set(KINDS)
