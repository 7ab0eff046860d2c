"""A background load's pod partials handed to the caller that waited for it
(``HostPartials.get``'s ``hand_over``, as ``tbprof summary`` loads them): the caller's
``views`` takes the load's answer instead of computing every host's cache key and looking
each one up again, gets the JSON a fresh lookup gives, takes it once only, and at most
``MAX_HANDED`` answers wait."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from make_pod import make_pod
from tbprof.analyses.encode import to_json_bytes
from tbprof.analyses.partial_formats import HEADLINE_PARTS
from tbprof.service import host_partials
from tbprof.service.executor import InProcess
from tbprof.service.host_partials import HostPartials
from tbprof.service.profiles import Profiles
from tbprof.service.summary import of_hosts


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six hosts: copies of jax_2hosts' two real host files (bench/make_pod.py)."""
    root = tmp_path_factory.mktemp("pod6")
    make_pod(root, 6)
    return root


@pytest.fixture
def key_lookups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many hosts' cache keys ``HostPartials`` computed, call by call."""
    calls: list[int] = []
    real = host_partials.cache_keys

    def counting(paths: Any, fmt: str) -> Any:
        calls.append(len(paths))
        return real(paths, fmt)

    monkeypatch.setattr(host_partials, "cache_keys", counting)
    return calls


def _summary_json(profiles: Profiles) -> bytes:
    run = next(iter(profiles.index.runs().values()))
    views = profiles.views(run, list(run.hosts), parts=HEADLINE_PARTS)
    assert views.partials
    return to_json_bytes(of_hosts(run, views.hosts, views.host_errors))


def test_the_waiting_caller_takes_the_loads_answer_once(pod: Path, tmp_path: Path, key_lookups: list[int]) -> None:
    reference = _summary_json(Profiles(pod, cache_dir=tmp_path / "ref", executor=InProcess(2)))
    profiles = Profiles(pod, cache_dir=tmp_path / "c", executor=InProcess(2))
    run = next(iter(profiles.index.runs().values()))
    key_lookups.clear()
    profiles.load_in_background(run, list(run.hosts), parts=HEADLINE_PARTS).join()
    assert key_lookups == [6]  # the load looked the six hosts up
    handed = _summary_json(profiles)
    assert key_lookups == [6]  # the caller took the load's answer: no second lookup
    assert json.loads(handed) == json.loads(reference)
    again = _summary_json(profiles)  # taken once: a later caller looks the hosts up itself
    assert key_lookups == [6, 6]
    assert again == handed


def test_only_the_same_hosts_and_parts_are_handed(pod: Path, tmp_path: Path, key_lookups: list[int]) -> None:
    profiles = Profiles(pod, cache_dir=tmp_path / "c", executor=InProcess(2))
    run = next(iter(profiles.index.runs().values()))
    hosts = list(run.hosts)
    profiles.load_in_background(run, hosts, parts=HEADLINE_PARTS).join()
    key_lookups.clear()
    assert profiles.partials.get(run, hosts[:3], parts=HEADLINE_PARTS) is not None  # other hosts
    assert profiles.partials.get(run, hosts, parts=None) is not None  # other parts: every part
    assert key_lookups == [3, 6]
    assert profiles.partials.get(run, hosts, parts=HEADLINE_PARTS) is not None  # the waiting caller's
    assert key_lookups == [3, 6]


def test_a_load_for_the_stores_hands_nothing_over(pod: Path, tmp_path: Path) -> None:
    """A load that names no parts (``tbprof sql``: it goes on to read the stores) keeps no
    answer, which would hold every host's partial past the memory budget."""
    profiles = Profiles(pod, cache_dir=tmp_path / "c", executor=InProcess(2))
    run = next(iter(profiles.index.runs().values()))
    profiles.load_in_background(run, list(run.hosts), few_planes=True).join()
    assert profiles.partials.contains(next(iter(host_partials.cache_keys([run.hosts[h] for h in run.hosts], "xspace"))))
    assert not profiles.partials._handed


def test_at_most_max_handed_answers_wait(pod: Path, tmp_path: Path) -> None:
    profiles = Profiles(pod, cache_dir=tmp_path / "c", executor=InProcess(2))
    run = next(iter(profiles.index.runs().values()))
    hosts = list(run.hosts)
    assert len(hosts) > HostPartials.MAX_HANDED + 1
    for n in range(2, len(hosts) + 1):  # answers for distinct hosts, none taken
        assert profiles.partials.get(run, hosts[:n], parts=HEADLINE_PARTS, hand_over=True) is not None
    assert len(profiles.partials._handed) == HostPartials.MAX_HANDED
    assert (run.name, tuple(hosts), HEADLINE_PARTS) in profiles.partials._handed  # the latest kept


def test_what_every_answer_reads_is_decoded_as_batches_arrive(pod: Path, tmp_path: Path) -> None:
    """The device planes' stats and a batch's combined op tables are decoded as the batch
    arrives (``keep_fresh``, ``keep_combined``), not on the headline's first read after the last
    batch: each plane holds its unpacked stats, each combined table decodes once, and the
    summary is the one of a fresh lookup."""
    from tbprof.domain.planes import device_planes_of

    reference = _summary_json(Profiles(pod, cache_dir=tmp_path / "ref", executor=InProcess()))
    profiles = Profiles(pod, cache_dir=tmp_path / "c", executor=InProcess(2))  # batches of 2: frames
    run = next(iter(profiles.index.runs().values()))
    got = profiles.partials.get(run, list(run.hosts), parts=HEADLINE_PARTS)
    assert got is not None
    parts, errors = got
    assert not errors and len(parts) == 6
    device = [p.planes[i] for p in parts for i in device_planes_of(p)]
    assert device and all(plane._stats is not None for plane in device)
    assert len(parts.segments) == 3  # three batches of two, each with its combined tables
    for _, _, combined in parts.segments:
        assert combined and all(decode() is decode() for decode in combined.values())
    assert json.loads(to_json_bytes(of_hosts(run, parts, errors))) == json.loads(reference)
