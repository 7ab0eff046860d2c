"""``tbprof summary``: the ``profile_summary`` tool's headline of a run (analyses/overview/headline.py),
named by its run, its hosts and the hosts found unreadable.

One shape for the command (text and ``--json``), the Python API's ``summary()`` and the agent's
``summary``; the hosts are read as ``Profiles.views`` chooses (a pod's per-host partials, or the
stores), as every tool typed on what a partial holds reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tbprof.analyses.overview.headline import headline
from tbprof.service.logdir import Run
from tbprof.service.profiles import Profiles


def summary(profiles: Profiles, run: Run, parts: frozenset[str] | None = None) -> dict[str, Any]:
    """``parts``: what a pod's hosts' partials are computed with (``Profiles.views``). None (all
    of them) where the process goes on to other tools of the run (the server, the Python API,
    the agent): partials of the headline's parts alone (``HEADLINE_PARTS``: less worker time,
    bench/measurements.md#services; what ``tbprof summary`` asks, whose process ends with the
    answer) would have every host converted again for the first page that reads the rest."""
    views = profiles.views(run, list(run.hosts), parts=parts)
    return of_hosts(run, views.hosts, views.host_errors)


def of_hosts(run: Run, hosts: Sequence[Any], host_errors: list[dict[str, str]]) -> dict[str, Any]:
    """The summary of a run from its hosts' stores or partials: ``run`` and ``hosts`` (every
    host of the run), the headline, and after its span the unreadable hosts (``host_errors``)."""
    out: dict[str, Any] = {"run": run.name, "hosts": sorted(run.hosts)}
    for key, value in headline(hosts).items():
        out[key] = value
        if key == "span_ms" and host_errors:
            out["host_errors"] = host_errors
    return out
