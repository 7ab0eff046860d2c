"""The Chrome-trace reader reads every demo trace and dialect fixture as the pure-Python reader did.

``chrome_digests.json`` was made by ``python -m tests.core.chrome_digest`` with the reader of
``json.loads`` and a dict per event (before the compiled scanner), which the scanner reproduced
digest for digest; it was then made again once, when the Kineto dialect reading landed
(``readers/kineto.py``: categories in one vocabulary, devices found by their work,
``metadata["producer"]``), which changes the PyTorch traces' and Kineto fixtures' stores on
purpose; and again when times became the exact decimal text of ``ts``/``dur`` (a third of the
PyTorch traces' events are 1 ns from where float64 arithmetic put them; the TF1 and JAX digests
are unchanged). See ``chrome_digest.py`` for what the semantic digest covers.
"""

from __future__ import annotations

import json

import pytest

from tbprof.errors import ProfileReadError
from tbprof.readers.chrome_trace import chrome_trace_from_bytes, read_chrome_trace
from tests.core.chrome_digest import DEMO, DIGESTS, FIXTURES, demo_files, fixture_bytes, semantic_digest

WANT = json.loads(DIGESTS.read_text())


def _same(got: dict[str, object], want: dict[str, object]) -> None:
    got = json.loads(json.dumps(got))
    assert sorted(got) == sorted(want)
    assert {k: got[k] for k in want if got[k] != want[k]} == {}


def test_every_demo_trace_is_pinned() -> None:
    assert len(demo_files()) == 13  # torch_cnn, 2 torch_ddp ranks, 6 + 1 TF1 timelines, 3 JAX traces
    assert sorted(k for k in WANT if not k.startswith("fixture:")) == sorted(str(p.relative_to(DEMO))
                                                                            for p in demo_files())


@pytest.mark.parametrize("path", demo_files(), ids=lambda p: p.name)
def test_demo_traces_read_as_before(path: object) -> None:
    from pathlib import Path

    assert isinstance(path, Path)
    _same(semantic_digest(read_chrome_trace(path)), WANT[str(path.relative_to(DEMO))])


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_dialect_fixtures_read_as_before(name: str) -> None:
    want = WANT[f"fixture:{name}"]
    try:
        got: dict[str, object] = semantic_digest(chrome_trace_from_bytes(fixture_bytes(name), "f.json", "f"))
    except ProfileReadError as e:
        got = {"error": e.reason}
    _same(got, want)
