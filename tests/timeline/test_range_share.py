"""A selection's share per name (#35): "% of selection" summed over every track read 344 % over
four ranks; the share is now the name's time on its busiest track, at most the selection."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tbprof.readers.xplane import read_xspace
from tbprof.timeline.range import range_summary
from tbprof.timeline.tracks import track_index
from tests.conftest import xplane_of


def test_busiest_track_share_is_at_most_the_selection(profiles_root: Path) -> None:
    store = read_xspace(xplane_of(profiles_root, "keras_cnn"))
    start, end = 0, int(store.span_ps)
    summary = range_summary(store, start, end, limit=10_000)
    names = summary["names"]
    # The summed total exceeds the selection for some name (it ran on several tracks at once),
    # which is why the share is not total / selection.
    assert any(n["total_ps"] > summary["duration_ps"] for n in names)
    for n in names:
        assert 0 <= n["busiest_track_ps"] <= min(n["total_ps"], summary["duration_ps"])
        assert (n["busiest_track_ps"] > 0) == (n["total_ps"] > 0)
    # Derivation for the top name: its clipped time on each slice track, the largest of them.
    top = names[0]
    index = track_index(store)
    per_track = []
    for track in index.tracks:
        if track.kind != "slices" or track.line < 0:
            continue
        plane = store.planes[track.plane]
        lo, hi = int(plane.line_offsets[track.line]), int(plane.line_offsets[track.line + 1])
        ids = plane.name_id[lo:hi]
        mine = np.array([store.strings[int(i)] == top["name"] for i in ids], dtype=bool)
        s = plane.start_ps[lo:hi][mine]
        e = s + plane.dur_ps[lo:hi][mine]
        per_track.append(int(np.sum(np.minimum(e, end) - np.maximum(s, start))))
    assert top["busiest_track_ps"] == max(per_track)
