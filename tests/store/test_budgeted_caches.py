"""Every cache is charged to the one byte budget (store/memo.py) and evicted from it: the HLO
programs shared by a pod's hosts, gzipped static files, encoded trace windows (issue #26)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from werkzeug.test import Client

from tbprof.domain import hlo_map
from tbprof.http import app as app_mod
from tbprof.http.app import create_app
from tbprof.service.profiles import Profiles
from tbprof.store.memo import Memo, MemoryBudget
from tbprof.store.tables import KIND_BYTES, ProfileStore

API = "/data/plugin/tbprof/"


def _entries(budget: MemoryBudget, head: str) -> dict[tuple[object, ...], int]:
    """The budget's entries whose key starts with ``head``, with the bytes charged."""
    return {k: size for (_, k), (_, size) in budget._lru.items() if isinstance(k, tuple) and k[:1] == (head,)}


def _proto_bytes(store: ProfileStore) -> dict[int, int]:
    """program_id -> length of its ``Hlo Proto`` bytes, read from the store's metadata plane."""
    plane = store.plane(hlo_map.METADATA_PLANE)
    assert plane is not None
    protos = plane.meta_stat_column(store.stat_id("Hlo Proto"))
    program_col = plane.meta_stat_column(store.stat_id("program_id"))
    program_of = dict(zip(program_col.rows.tolist(), program_col.as_int().tolist(), strict=True))
    out: dict[int, int] = {}
    for row, kind, value in zip(protos.rows.tolist(), protos.kind.tolist(), protos.value.tolist(), strict=True):
        if kind == KIND_BYTES:
            out.setdefault(program_of.get(row, int(plane.meta_ids[row])), len(plane.blobs[value]))
    return out


def test_shared_hlo_programs_are_charged_and_evicted(profiles_root: Path, cache_dir: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    budget = MemoryBudget(1 << 40)
    monkeypatch.setattr(hlo_map, "_PROGRAMS", Memo(budget))
    profiles = Profiles(profiles_root, cache_dir=cache_dir)
    run = profiles.run(next(n for n in profiles.index.runs() if n.startswith("jax_2hosts/")))
    w0, w1 = (profiles.event_store(run, h) for h in ("worker0", "worker1"))
    progs0, progs1 = hlo_map.hlo_programs(w0), hlo_map.hlo_programs(w1)
    assert progs0, "jax_2hosts carries HLO protos"
    # The hosts' byte-identical protos are decoded once: the same objects serve both.
    shared = [pid for pid in progs0 if pid in progs1 and progs0[pid] is progs1[pid]]
    assert shared
    charged = _entries(budget, "hlo_program")
    lengths = _proto_bytes(w0)
    assert {pid for (_, pid, _length, _crc) in charged} == set(progs0) | set(progs1)
    for (_, pid, length, _crc), size in charged.items():
        # The decoded program, and the proto's own bytes kept to compare the next host's with.
        assert isinstance(pid, int) and length == lengths[pid]
        assert size == lengths[pid] * (hlo_map.SHARED_BYTES_PER_PROTO_BYTE + 1)
    # Evicted by the budget like any value: one byte left keeps only the newest entry.
    budget.max_bytes = 1
    budget.put(0, "newer", b"", 1)
    assert not _entries(budget, "hlo_program")


def test_a_shared_program_is_taken_only_for_equal_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Programs are found by (id, length, CRC-32): other bytes under the same key (a collision,
    here forced by a CRC that answers one value) get their own decode, never another host's."""
    budget = MemoryBudget(1 << 40)
    monkeypatch.setattr(hlo_map, "_PROGRAMS", Memo(budget))
    monkeypatch.setattr(hlo_map.zlib, "crc32", lambda data: 7)
    parsed: list[bytes] = []

    def parse(program_id: int, data: bytes) -> object:
        parsed.append(data)
        return object()

    monkeypatch.setattr(hlo_map, "parse_hlo_proto", parse)
    a, same, other = b"program-a", bytes(bytearray(b"program-a")), b"program-b"
    assert same is not a
    first = hlo_map._shared_program(1, a)
    assert hlo_map._shared_program(1, same) is first
    assert hlo_map._shared_program(1, other) is not first
    assert parsed == [a, other]


def test_gzipped_static_files_are_charged_and_evicted(profiles_root: Path, cache_dir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    budget = MemoryBudget(1 << 40)
    monkeypatch.setattr(app_mod, "_GZIPPED", Memo(budget))
    client = Client(create_app(profiles_root, cache_dir=cache_dir))
    r = client.get(API + "index.js", headers={"Accept-Encoding": "gzip"})
    assert r.status_code == 200 and r.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(r.data) == (app_mod.STATIC_DIR / "index.js").read_bytes()
    assert list(_entries(budget, "static_gzip").values()) == [len(r.data)]
    budget.max_bytes = 1
    budget.put(0, "newer", b"", 1)
    assert not _entries(budget, "static_gzip")


def test_encoded_trace_windows_are_charged_at_their_length_and_evicted(profiles_root: Path, cache_dir: Path) -> None:
    app = create_app(profiles_root, cache_dir=cache_dir)
    client = Client(app)
    profiles = app.ctx.profiles
    run = profiles.run(next(n for n in profiles.index.runs() if n.startswith("jax_mlp/")))
    store = profiles.event_store(run, next(iter(run.hosts)))
    budget = MemoryBudget(1 << 40)
    store._memo = Memo(budget)
    # Even a store that skips estimating its values' sizes (a worker's) charges these bodies.
    store.skip_memo_sizes()
    r = client.get(API + "trace", query_string={"run": run.name, "width_px": "800"})
    zipped = client.get(API + "trace", query_string={"run": run.name, "width_px": "800"},
                        headers={"Accept-Encoding": "gzip"})
    assert r.status_code == 200 and zipped.headers["Content-Encoding"] == "gzip"
    windows = {k: size for (_, k), (_, size) in budget._lru.items()
               if isinstance(k, tuple) and k[:2] == ("timeline", "response")}
    # The window (its body and MIME type) and its gzipped body, each at its length.
    assert sorted(windows.values()) == sorted([len(r.data) + len(r.mimetype or ""), len(zipped.data)])
    budget.max_bytes = 1
    budget.put(0, "newer", b"", 1)
    assert not any(store._memo.contains(k) for k in windows)
