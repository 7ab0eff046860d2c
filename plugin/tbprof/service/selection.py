"""Choosing what a request names: a run of a logdir, the hosts of a run, a table of a result.

One implementation each for HTTP, the CLI and the Python API. They differ only in policy
(several runs and none named: ``tbprof show``/``summary`` take the newest, ``compare`` and
``tbprof.open`` refuse; HTTP always names the run) and in how a message says to choose
(``--run``, ``run=``); the rules themselves live here. Refusals are domain errors
(``tbprof.errors``): NotFound for a name that does not exist, BadParameter for a choice left open.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from tbprof.errors import BadParameter, NotFound
from tbprof.service.logdir import Run

if TYPE_CHECKING:  # the analyses' modules load where a table or a comparison is chosen, not for a run
    from tbprof.analyses.table import Table

ALL_HOSTS = "__all__"

NO_PROFILES_HINT = ("XSpace *.xplane.pb, Chrome trace JSON, PyTorch *.pt.trace.json, TF1 timeline-<step>.json "
                    "or tfprof files")


def pick_run(runs: Mapping[str, Run], name: str | None, *, where: str,
             several: Literal["newest", "refuse"] = "refuse", choose_with: str = "run=", who: str = "",
             note: Callable[[str], None] | None = None) -> Run:
    """The run ``name`` names among ``runs`` (listed from ``where``); with no name, the only
    run, else the newest (``several="newest"``, told to ``note``) or a refusal naming them.
    ``who``: which side of a comparison the run is ("baseline"), for the messages."""
    side = f"{who} " if who else ""
    if not runs:
        raise NotFound(f"{where}: no profiles found ({NO_PROFILES_HINT})")
    if name is not None:
        if name not in runs:
            raise NotFound(f"unknown {side}run {name!r}; runs: {', '.join(sorted(runs))}")
        return runs[name]
    if len(runs) == 1:
        return next(iter(runs.values()))
    if several == "newest":
        newest = max(runs.values(), key=lambda r: r.mtime)
        if note is not None:
            note(f"{len(runs)} runs found; using the newest, {newest.name!r} (choose with {choose_with})")
        return newest
    the = f"the {who} path " if who else ""
    raise BadParameter(f"{the}{where} holds {len(runs)} runs; choose one with {choose_with}: "
                       + ", ".join(sorted(runs)))


def select_hosts(run: Run, host: str | None, choose_with: str = "host=", who: str = "") -> list[str]:
    """The hosts a request selects: one host, all hosts (``__all__``), or the only host; a run
    of several hosts and none named is refused (see ``default_host`` for who picks one)."""
    if host in (None, "") and len(run.hosts) == 1:
        return list(run.hosts)
    if host == ALL_HOSTS:
        return list(run.hosts)
    if host in (None, ""):
        side = f"{who} " if who else ""
        raise BadParameter(f"the {side}run {run.name!r} has several hosts; choose one with {choose_with}: "
                           f"{', '.join(sorted(run.hosts))} (or {ALL_HOSTS})")
    if host not in run.hosts:
        raise NotFound(f"unknown host {host!r} in run {run.name!r}; hosts: {sorted(run.hosts)}")
    return [host]


def default_host(run: Run, host: str | None, multi_host: bool) -> str | None:
    """The host a tool request without one means, for the CLI and the Python API (HTTP asks):
    all hosts for a tool that combines hosts, else the first."""
    if host is not None or len(run.hosts) < 2:
        return host
    return ALL_HOSTS if multi_host else sorted(run.hosts)[0]


def comparison_host(run: Run, host: str | None) -> str | None:
    """A comparison side's host when it names none: a TF1 timeline run's steps all, else as named
    (several hosts and none named is then refused by ``select_hosts``)."""
    from tbprof.analyses.compare.sources import WHOLE_RUN

    if host in (None, "") and WHOLE_RUN in run.traits:
        return ALL_HOSTS
    return host


def pick_table(result: Mapping[str, Any], name: str | None, what: str,
               prefer: Sequence[str] = ()) -> tuple[str, Table]:
    """A table of a tool result or comparison: ``name``, else the first of ``prefer`` present,
    else the first. ``what`` names the result in messages ("tool 'kernel_stats'")."""
    from tbprof.analyses.table import Table

    tables = {k: v for k, v in result.get("tables", {}).items() if isinstance(v, Table)}
    if not tables:
        raise NotFound(f"{what} has no tables for this run")
    if name is None:
        name = next((p for p in prefer if p in tables), next(iter(tables)))
    if name not in tables:
        raise NotFound(f"{what} has no table {name!r}; tables: {', '.join(tables)}")
    return name, tables[name]
