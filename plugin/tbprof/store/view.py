"""The store contract: what a tool that can run on per-host partials reads of a host.

An all-hosts tool (overview, input pipeline, op and kernel stats, pod viewer, ``tbprof
summary``) reads of each host a little metadata, its planes' names and stats, and a few values
derived from its events (the step assignment, the op tables, ...). ``StoreView`` is exactly
that; a ``ProfileStore`` (every event) and a ``HostPartial`` (analyses/partials.py: the
metadata and the carried derived values, without events) both are one, which mypy checks
structurally. Such a tool is typed on ``Sequence[StoreView]``, so reading anything else of a
host (an event column, a value no partial carries) is a type error, not a 500 at run time.

A derived value is asked for by a typed ``Derived`` (store/derived.py: its memo key and how a
full store computes it): a store computes it once (its memo). Those per-host partials carry are ``CarriedValue``s,
the only ones ``StoreView.derive`` takes, so a tool typed on ``StoreView`` cannot ask for a value
no partial holds (a partial hands over the value it carries; analyses/partials.py ``CARRIED``
lists them all, which tests/service/test_partials.py checks).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from tbprof.store.derived import CarriedValue, Derived

__all__ = ["CarriedValue", "Derived", "PlaneView", "StoreView"]

T = TypeVar("T")


class PlaneView(Protocol):
    """A plane as an all-hosts tool reads it: its name, event count and plane-level stats."""

    @property
    def name(self) -> str: ...

    @property
    def n_events(self) -> int: ...

    @property
    def plane_stats(self) -> dict[str, Any]: ...


class StoreView(Protocol):
    """One host as an all-hosts tool reads it (``ProfileStore`` and ``HostPartial`` are views)."""

    @property
    def host(self) -> str: ...

    @property
    def format(self) -> str: ...

    @property
    def source_path(self) -> str: ...

    @property
    def span_ps(self) -> int: ...

    @property
    def hostnames(self) -> list[str]: ...

    @property
    def errors(self) -> list[str]: ...

    @property
    def warnings(self) -> list[str]: ...

    @property
    def metadata(self) -> dict[str, Any]: ...

    @property
    def planes(self) -> Sequence[PlaneView]: ...

    @property
    def n_events(self) -> int: ...

    def derive(self, value: CarriedValue[T]) -> T:
        """The derived value of this host (a store computes it once; a partial carries it)."""
        ...
