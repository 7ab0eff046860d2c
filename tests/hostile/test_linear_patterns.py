"""tbprof's own patterns over text from profile files take linear time (issue #15 item 2)."""

from __future__ import annotations

import threading

from tbprof.timeline.details import parse_details


def test_kernel_details_of_a_crafted_stat() -> None:
    """1 MB of letters without a colon: Python's re tried every start and every split
    (quadratic: about 0.4 s at 8 kB, hours at 1 MB); RE2 scans it once."""
    out: list[dict[str, str]] = []
    t = threading.Thread(target=lambda: out.append(parse_details("a" * 1_000_000 + " regs:32")), daemon=True)
    t.start()
    t.join(60)  # a liveness bound, not a timing assertion: the old pattern never got here
    assert out == [{"regs": "32"}]
    # The usual details, and the pairs findall found before (key: the word right before ':').
    assert parse_details("regs:32 static_shared:0 grid:1,1,1 x-y:z") == {
        "regs": "32", "static_shared": "0", "grid": "1,1,1", "y": "z"}


def test_step_selection_of_a_crafted_parameter() -> None:
    """200 k spaces before a non-digit: Python's re backtracked over the two \\s* (about 0.2 s at
    8 k characters, growing with the square); RE2 does not."""
    import pytest

    from tbprof.analyses.compare.report import parse_step_selection
    from tbprof.analyses.tool import OptionError

    done: list[bool] = []

    def run() -> None:
        with pytest.raises((OptionError, ValueError)):
            parse_step_selection(" " * 200_000 + "x")
        done.append(True)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    assert done == [True]
    assert parse_step_selection(" 3 : 6 ,8") == [(3, 6), (8, 8)]
