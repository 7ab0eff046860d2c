"""File names of the older and foreign profilers' runs: which kind a file is, which step it holds.

Kept apart from the registrations in ``foreign_runs`` so analyses can use the naming rules
without importing the run index.
"""

from __future__ import annotations

import re

PYTORCH_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
_TFPROF_TIMELINE = re.compile(r".*timeline.*\.json_-?\d+")
_TFPROF_PROFILE = re.compile(r"profile\.pb|profile_\d+")
_STEP_IN_NAME = re.compile(r"(\d+)(?!.*\d)")

# A folder holding several kinds: the first kind in this order keeps the folder's name as
# its run name, the others get " (<kind>)".
KIND_ORDER = ("tf1_timeline", "pytorch", "tfprof", "tfprof_timeline")


def classify(name: str) -> tuple[str, str] | None:
    """(run kind, host name) of a file name, or None when it is none of these formats."""
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


def step_of(host: str) -> int | None:
    """The step in a step file's name: its last number (``timeline-12`` -> 12, ``x.json_3`` -> 3)."""
    m = _STEP_IN_NAME.search(host)
    return int(m.group(1)) if m else None
