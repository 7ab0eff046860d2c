"""Typed derived values: a value computed from a host's events, named by its memo key.

A ``Derived`` says how a full ``ProfileStore`` computes the value; ``ProfileStore.derive``
computes it once (the store's memo). A ``CarriedValue`` is one that per-host partials carry too,
the only kind ``StoreView.derive`` (store/view.py) takes. This module sits beside the store
model rather than in the view protocol so that neither the protocol nor the store imports the
other: the store reads a ``Derived`` structurally (store/tables.py ``Derivable``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from tbprof.store.tables import ProfileStore

V = TypeVar("V", covariant=True)


@dataclass(frozen=True, eq=False)
class Derived(Generic[V]):
    """A value derived from a host's events: its memo key and how a full store computes it."""

    key: Hashable
    compute: Callable[[ProfileStore], V]


class CarriedValue(Derived[V]):
    """A derived value that per-host partials carry (analyses/partials.py ``CARRIED``)."""
