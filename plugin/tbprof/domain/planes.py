"""Which planes of a store are the host and the accelerators (XSpace plane naming)."""

from __future__ import annotations

from tbprof.store.tables import Plane, ProfileStore

HOST_PLANE = "/host:CPU"


def device_planes_of(store: ProfileStore) -> list[int]:
    """Indices of the GPU/TPU planes that hold events, in plane order (steps, roofline peaks)."""
    return [i for i, p in enumerate(store.planes)
            if p.name.startswith(("/device:GPU", "/device:TPU")) and p.n_events > 0]


def device_planes(store: ProfileStore) -> list[Plane]:
    """Every ``/device:*`` plane with events, in plane order (the op tools' device side)."""
    return [p for p in store.planes if p.name.startswith("/device:") and p.n_events > 0]
