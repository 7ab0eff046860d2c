"""XSpace files read lazily (``read_xspace(lazy=True)``, issue #14): every event at once, each
plane's event stats when a tool first reads them.

The reference is the eager reader (``xspace_from_bytes`` without a lazy size): a lazily read
store holds the same events and stats, string for string (its string ids differ: strings are
interned in the order planes are asked for), and every tool answers exactly the same.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.analyses.encode import to_json_bytes
from tbprof.errors import ProfileReadError
from tbprof.readers import xplane
from tbprof.readers.kinds import KINDS
from tbprof.service import tools as registry
from tbprof.service.profiles import Profiles
from tbprof.store.tables import KIND_BYTES, KIND_REF, KIND_STR, ProfileStore
from tests.conftest import XSPACE_PROFILES, xplane_of

HOST_PLANE = "/host:CPU"


def _eager(path: Path) -> ProfileStore:
    return xplane.xspace_from_bytes(path.read_bytes(), str(path), "h")


def _lazy(path: Path) -> ProfileStore:
    # Every file is "large enough" here; the service's threshold is LAZY_MIN_BYTES (8 MiB).
    return xplane.xspace_from_bytes(path.read_bytes(), str(path), "h", lazy_min_bytes=0)


def _resolved(store: ProfileStore) -> list[Any]:
    """Each plane's events and stats with string ids replaced by their strings."""
    out = []
    s = store.strings
    for p in store.planes:
        st = p.stats
        values = [s[v] if k in (KIND_STR, KIND_REF) else (p.blobs[v] if k == KIND_BYTES else v)
                  for k, v in zip(st.kind.tolist(), st.value.tolist(), strict=True)]
        out.append((p.name, p.start_ps.tolist(), p.dur_ps.tolist(), p.depth.tolist(), p.line_idx.tolist(),
                    [s[i] for i in p.name_id.tolist()], st.owner.tolist(), [s[i] for i in st.stat_id.tolist()],
                    st.kind.tolist(), values, p.plane_stats))
    return out


def _files(root: Path) -> list[Path]:
    return sorted(p for name in XSPACE_PROFILES for p in (root / name).rglob("*.xplane.pb"))


def test_a_lazy_store_holds_what_the_eager_one_does(profiles_root: Path) -> None:
    for path in _files(profiles_root):
        lazy = _lazy(path)
        with_events = [p for p in lazy.planes if p.n_events]
        assert with_events and not any(p.stats_loaded for p in with_events), path  # nothing decoded yet
        assert (lazy.origin_ps, lazy.span_ps) == (_eager(path).origin_ps, _eager(path).span_ps)
        assert _resolved(lazy) == _resolved(_eager(path)), path


@pytest.mark.parametrize("name", ["jax_mlp", "keras_cnn"])
def test_every_tool_answers_the_same_from_a_lazy_store(profiles_root: Path, name: str) -> None:
    path = xplane_of(profiles_root, name)

    def answer(store: ProfileStore, tool: Any) -> Any:
        try:
            return json.loads(to_json_bytes(tool.compute([store], tool.parse_options({}))))
        except Exception as e:  # a tool with no data here must say so the same way
            return type(e).__name__

    tools = registry.offered(KINDS["xspace"].traits)
    assert len(tools) > 15
    for tool in tools:
        assert answer(_lazy(path), tool) == answer(_eager(path), tool), tool.name


def test_a_device_tool_decodes_only_the_device_planes(profiles_root: Path) -> None:
    store = _lazy(xplane_of(profiles_root, "jax_mlp"))
    tool = registry.get("kernel_stats")
    assert tool is not None and tool.few_planes
    tool.compute([store], tool.parse_options({}))
    loaded = {p.name for p in store.planes if p.stats_loaded}
    assert loaded and all(n.startswith("/device:") for n in loaded)
    host = store.plane(HOST_PLANE)
    assert host is not None and host.n_events > 0 and not host.stats_loaded


def test_concurrent_first_reads_decode_a_plane_once(profiles_root: Path) -> None:
    store = _lazy(xplane_of(profiles_root, "jax_mlp"))
    host = store.plane(HOST_PLANE)
    assert host is not None
    seen: list[Any] = []
    threads = [threading.Thread(target=lambda: seen.append(host.stats)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 8 and all(s is seen[0] for s in seen) and seen[0].owner.shape[0] > 0


def _corrupt_a_host_string_stat(path: Path, out: Path) -> None:
    """A copy whose first host-plane string stat says its text is longer than its stat: the
    events-only first pass skips stats whole (by their own length) and sees nothing wrong."""
    data = bytearray(path.read_bytes())
    eager = _eager(path)
    from tbprof._core import wire

    sc = wire.scan(bytes(data), threads=1)
    host_pi = next(i for i, p in enumerate(eager.planes) if p.name == HOST_PLANE)
    first_host_row = int(np.searchsorted(sc.lines[:, 0], host_pi))
    host_events_from = int(sc.lines[first_host_row, 1])
    row = next(int(r) for r, off, n in sc.texts.tolist() if sc.st_owner[r] >= host_events_from and 0 < n < 100)
    _, offset, length = sc.texts[np.nonzero(sc.texts[:, 0] == row)[0][0]].tolist()
    assert data[offset - 1] == length  # the one-byte length of the text
    data[offset - 1] = 0x7F  # 127: beyond the stat's end
    out.write_bytes(bytes(data))


def test_unreadable_stats_of_a_deferred_plane_are_a_read_error(profiles_root: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.xplane.pb"
    _corrupt_a_host_string_stat(xplane_of(profiles_root, "jax_mlp"), bad)
    with pytest.raises(ProfileReadError):
        _eager(bad)  # the eager reader refuses the file outright
    store = _lazy(bad)  # the lazy one reads the events ...
    kernel_stats = registry.get("kernel_stats")
    assert kernel_stats is not None
    kernel_stats.compute([store], kernel_stats.parse_options({}))  # ... and answers from the device planes
    host = store.plane(HOST_PLANE)
    assert host is not None
    with pytest.raises(ProfileReadError, match="not a readable XSpace profile"):
        _ = host.stats
    with pytest.raises(ProfileReadError):  # asked again: the same answer, no crash
        _ = host.stats


def test_the_service_converts_lazily_for_a_few_planes_tool(profiles_root: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Through Profiles: kernel_stats opens the file lazily (host stats not decoded); the disk
    cache's background write decodes the rest, and the entry reopens equal to the eager store."""
    monkeypatch.setattr(xplane, "LAZY_MIN_BYTES", 0)
    profiles = Profiles(profiles_root / "jax_mlp", cache_dir=tmp_path / "cache")
    run = next(iter(profiles.index.runs().values()))
    host = next(iter(run.hosts))
    tool = profiles.tool("kernel_stats")
    want = json.loads(to_json_bytes(tool.compute([xplane.read_xspace(run.hosts[host])], tool.parse_options({}))))
    assert json.loads(to_json_bytes(profiles.compute(run, [host], tool, {}))) == want
    store = profiles.store(run, host)
    assert isinstance(store, ProfileStore)
    host_plane = store.plane(HOST_PLANE)
    assert host_plane is not None and not host_plane.stats_loaded
    profiles.cache.flush()  # the write asks for every plane's stats
    assert host_plane.stats_loaded
    reopened = Profiles(profiles_root / "jax_mlp", cache_dir=tmp_path / "cache").store(run, host)
    assert isinstance(reopened, ProfileStore)
    assert _resolved(reopened) == _resolved(_eager(run.hosts[host]))
