"""tfprof views of crafted files cost memory linear in the file, and the guard knows it (#25).

A 120 KB node name of 60 000 ``/`` used to build every ``/``-prefix as a string (3.6 GB); a
100 KB file name made each call site's label 100 KB. Here the peak of Python allocations
(tracemalloc) while reading a crafted file and building all four views must stay within what
the reader's memory check estimates from the file's counts (``views_need_bytes``) plus the
parse factor: the old code's peak is quadratic and far above it.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Mapping
from typing import Any

import pytest

from tbprof.analyses.tfprof import tfprof_views
from tbprof.analyses.tfprof.tfprof_engine import MAX_MATCHED_NAME_CHARS, MAX_SHOWN_NAME_CHARS
from tbprof.cache.memory_guard import LIMIT_ENV, memory_factor
from tbprof.errors import MemoryRefusal
from tbprof.readers.tfprof import read_tfprof, tfprof_from_bytes
from tbprof.store.tfprof import views_need_bytes
from tests.tfprof_data import deep_scope_pb, long_file_pb

# 20 KB of "a/": 10 000 scopes whose full names add up to 10 000 * 10 KB / 2 = 50 MB in the old
# scope view; the estimate is 10 000 * SCOPE_BYTES, about 10 MB.
DEEP_BYTES = 20_000
# 200 frames of a 100 KB file name: 20 MB of labels in the old code view; the estimate is
# 200 * FRAME_BYTES plus the file's size times the parse factor, about 2 MB.
FILE_NAME_BYTES = 100_000
FRAMES = 200


def _peak_bytes(data: bytes, view: str) -> tuple[int, Mapping[str, Any]]:
    tracemalloc.start()
    try:
        profile = tfprof_from_bytes(data, "crafted", "h")
        result = tfprof_views.compute([profile], {"view": view, "max_depth": 100_000})
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


def _estimate(data: bytes, scopes: int, frames: int) -> int:
    from pathlib import Path
    return views_need_bytes(1, scopes, frames) + len(data) * memory_factor(Path("profile.pb"))


@pytest.mark.parametrize("view", ["scope", "graph", "code", "op"])
def test_deep_name_scopes_cost_linear_memory(view: str) -> None:
    data = deep_scope_pb(DEEP_BYTES)
    scopes = DEEP_BYTES // 2 - 1
    peak, result = _peak_bytes(data, view)
    assert peak <= _estimate(data, scopes, 0), (peak, _estimate(data, scopes, 0))
    names = result["tables"]["nodes"].data["name"].tolist()
    if view == "scope":  # the root, then every prefix of the one name: a chain of depth = scopes + 1
        assert len(names) == 1 + scopes + 1
    assert max(len(n) for n in names) <= MAX_SHOWN_NAME_CHARS


def test_long_file_name_costs_linear_memory() -> None:
    data = long_file_pb(FILE_NAME_BYTES, FRAMES)
    peak, result = _peak_bytes(data, "code")
    assert peak <= _estimate(data, 0, FRAMES), (peak, _estimate(data, 0, FRAMES))
    values = {k: v.tolist() for k, v in result["tables"]["nodes"].data.items()}
    assert len(values["name"]) == 1 + FRAMES  # the root and one call site per line
    assert max(len(n) for n in values["name"]) <= MAX_SHOWN_NAME_CHARS + len(f":{FRAMES}:fn")
    assert max(len(f) for f in values["file"]) <= MAX_SHOWN_NAME_CHARS


def test_regexes_still_see_full_names() -> None:
    """Names are built on demand for regexes: hiding every scope deeper than 3 levels leaves 3."""
    data = deep_scope_pb(2_000)
    profile = tfprof_from_bytes(data, "crafted", "h")
    result = tfprof_views.compute([profile], {"view": "scope", "show_name_regexes": ("a|a/a|a/a/a",)})
    assert result["tables"]["nodes"].data["name"].tolist() == ["_TFProfRoot", "a", "a/a", "a/a/a"]


def test_guard_refuses_from_the_counts(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose size passes the guard but whose scopes would not fit is refused (a 422)."""
    path = tmp_path / "profile.pb"
    path.write_bytes(deep_scope_pb(DEEP_BYTES))
    scopes = DEEP_BYTES // 2 - 1
    need = views_need_bytes(1, scopes, 0)
    monkeypatch.setenv(LIMIT_ENV, str(need - 1))
    assert DEEP_BYTES * memory_factor(path) < need  # the size alone would let it through
    with pytest.raises(MemoryRefusal, match="name scopes"):
        read_tfprof(path)
    monkeypatch.setenv(LIMIT_ENV, str(need))
    assert read_tfprof(path).n_nodes == 1


def test_regexes_match_names_beyond_4096_chars_in_their_shown_form() -> None:
    """Matching every prefix of a long name in full would scan sum(prefix lengths): quadratic.
    Names longer than MAX_MATCHED_NAME_CHARS are matched as shown (with "..."), so hiding
    names that contain "..." hides exactly the scopes longer than 4096 characters: of
    "a", "a/a", ... (length 2k - 1), the first 2048 stay."""
    profile = tfprof_from_bytes(deep_scope_pb(DEEP_BYTES), "crafted", "h")
    result = tfprof_views.compute([profile], {"view": "scope", "max_depth": 100_000,
                                              "hide_name_regexes": (r".*\.\.\..*",)})
    names = result["tables"]["nodes"].data["name"].tolist()
    assert len(names) == 1 + (MAX_MATCHED_NAME_CHARS + 1) // 2
    assert int(result["tables"]["nodes"].data["depth"].max()) == (MAX_MATCHED_NAME_CHARS + 1) // 2
