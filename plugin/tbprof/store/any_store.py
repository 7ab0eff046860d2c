"""What a run's host file converts to: the columnar event store, or tfprof's graph profile."""

from __future__ import annotations

from tbprof.store.tables import ProfileStore
from tbprof.store.tfprof import TfprofProfile

AnyStore = ProfileStore | TfprofProfile
