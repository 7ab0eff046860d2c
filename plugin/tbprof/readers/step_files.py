"""File names of the older and foreign profilers' runs: the kind a name suggests, the host and step
it names.

A name decides nothing alone: ``name_hint`` is read only by the one detector,
``sniff.file_kind``, where the bytes leave the kind open (a binary protobuf, a plain Chrome trace
named as a step file); ``kinds.py`` names and orders the runs; analyses read a step file's step
with ``store.markers.step_of``.
"""

from __future__ import annotations

import re

from tbprof.store.markers import step_of

__all__ = ["PYTORCH_SUFFIXES", "host_order_key", "json_host", "name_hint", "step_of"]

PYTORCH_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
# Stripped from a JSON profile's name to get its host (longest first).
JSON_HOST_SUFFIXES = (".pt.trace.json.gz", ".pt.trace.json", ".trace.json.gz", ".trace.json", ".json.gz", ".json")
_TFPROF_TIMELINE = re.compile(r".*timeline.*\.json_-?\d+")
_TFPROF_PROFILE = re.compile(r"profile\.pb|profile_\d+")
_DIGITS = re.compile(r"(\d+)")


def json_host(name: str) -> str:
    """A JSON profile's host: its name without the trace suffixes (``rank0.1795.pt.trace.json``
    -> ``rank0.1795``, ``rank-0.json.gz`` -> ``rank-0``, ``vm.trace.json.gz`` -> ``vm``)."""
    for suffix in JSON_HOST_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def host_order_key(steps: bool, host: str) -> tuple[object, ...]:
    """The order of a run's hosts: step files (``steps``: a kind whose files are steps of one
    program, ``RunKind.hosts_are_steps``) by their step (the last number in the name); ranks
    and hosts by their numbers in reading order, compared as numbers (``rank2.<pid>`` before
    ``rank10.<pid>``, and ``rank0.<pid 1795...8>`` before ``rank1.<pid 1795...0>``, whatever the
    process ids)."""
    if steps:
        step = step_of(host)
        return (step is None, step or 0, host)
    parts = _DIGITS.split(host)
    # A number compares by its length without leading zeros, then its digits: numeric order
    # without int(), which refuses names of thousands of digits.
    return (tuple((0, len(p.lstrip("0")), p.lstrip("0")) if i % 2 else (1, 0, p) for i, p in enumerate(parts)), host)


def name_hint(name: str) -> tuple[str, str] | None:
    """(run kind, host name) a file's name suggests, or None when it suggests none of these
    formats: a hint for ``sniff.file_kind``, which reads the bytes wherever they can decide."""
    for suffix in PYTORCH_SUFFIXES:
        if name.endswith(suffix):
            return "pytorch", name[: -len(suffix)]
    if _TFPROF_TIMELINE.fullmatch(name):
        return "tfprof_timeline", name
    if name.endswith(".ctf.json"):
        return "tf1_timeline", name[: -len(".ctf.json")]
    if name.endswith(".json") and "timeline" in name:
        return "tf1_timeline", name[: -len(".json")]
    if _TFPROF_PROFILE.fullmatch(name):
        return "tfprof", name
    return None
