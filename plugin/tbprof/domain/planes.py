"""Which planes of a store are the host and the accelerators (XSpace plane naming).

Every reader names planes as XSpace does (the Kineto reader too), so a plane's kind follows
from its name, decided here and nowhere else (``plane_kind``):

* ``device``: an accelerator, ``/device:GPU:n`` or ``/device:TPU:n``;
* ``device-aux``: the other ``/device:*`` planes (``/device:CUSTOM:Megascale Trace``, ...): on
  the device side, but no accelerator;
* ``host``: ``/host:CPU`` and the host's other planes; ``meta``: ``/host:metadata`` (XLA's
  programs, no events), a host plane by name;
* ``other``: the rest (Chrome-trace processes, TF1 timeline devices, ``Task Environment``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol

from tbprof.store.tables import Plane, ProfileStore
from tbprof.store.view import PlaneView, StoreView

HOST_PLANE = "/host:CPU"
METADATA_PLANE = "/host:metadata"


class PlaneKind(StrEnum):
    DEVICE = "device"
    DEVICE_AUX = "device-aux"
    HOST = "host"
    META = "meta"
    OTHER = "other"


DEVICE_SIDE = frozenset({PlaneKind.DEVICE, PlaneKind.DEVICE_AUX})
HOST_SIDE = frozenset({PlaneKind.HOST, PlaneKind.META})


class Named(Protocol):
    """A plane, or a per-host partial's summary of one (analyses/partials.py): its name is enough."""

    @property
    def name(self) -> str: ...


def plane_kind(plane: Named) -> PlaneKind:
    """The one decision of what a plane is (see the module docstring)."""
    return kind_of_name(plane.name)


def kind_of_name(name: str) -> PlaneKind:
    """``plane_kind`` of a plane called ``name`` (where only the name is at hand)."""
    if name.startswith("/device:"):
        return PlaneKind.DEVICE if name.startswith(("/device:GPU", "/device:TPU")) else PlaneKind.DEVICE_AUX
    if name.startswith("/host:"):
        return PlaneKind.META if name == METADATA_PLANE else PlaneKind.HOST
    return PlaneKind.OTHER


def is_accelerator(plane: Named) -> bool:
    """A GPU or TPU plane (``device``)."""
    return plane_kind(plane) is PlaneKind.DEVICE


def on_device_side(plane: Named) -> bool:
    """Any ``/device:*`` plane (``device`` or ``device-aux``)."""
    return plane_kind(plane) in DEVICE_SIDE


def on_host_side(plane: Named) -> bool:
    """Any ``/host:*`` plane (``host`` or ``meta``)."""
    return plane_kind(plane) in HOST_SIDE


def device_planes_of(store: StoreView) -> list[int]:
    """Indices of the accelerator planes that hold events, in plane order (steps, roofline peaks)."""
    return [i for i, p in enumerate(store.planes) if is_accelerator(p) and p.n_events > 0]


def device_planes(store: ProfileStore) -> list[Plane]:
    """Every device-side plane with events, in plane order (the op tools' device side)."""
    return [p for p in store.planes if on_device_side(p) and p.n_events > 0]


# The device_vendor of a Meta MTIA accelerator (readers/kineto.py names its planes as a GPU's,
# /device:GPU:n, so that every device analysis reads it; pages call it what it is).
MTIA_VENDOR = "Meta MTIA"


def device_type(plane: PlaneView) -> str:
    """What kind of device a plane is: "GPU" for /device:GPU:0 ("MTIA" for an MTIA's), "TPU" for
    /device:TPU:0, "CPU" for /host:CPU, else ""."""
    name = plane.name
    if name.startswith("/device:"):
        if str(plane.plane_stats.get("device_vendor", "")) == MTIA_VENDOR:
            return "MTIA"
        return name[len("/device:"):].split(":", 1)[0]
    return "CPU" if name == HOST_PLANE else ""


def device_counts(store: ProfileStore) -> tuple[list[str], int]:
    """A host's device types (``["CPU"]`` without a device plane holding events) and how many
    device planes hold events: what the profile summary says of the host's devices (analyses/
    overview/profile_summary.py), and what a pod's host partial carries of them without
    summarising every plane and line (analyses/partials.py ``SUMMARY_KEYS``)."""
    busy = [p for p in store.planes if kind_of_name(p.name) in DEVICE_SIDE and p.n_events > 0]
    return sorted({device_type(p) for p in busy}) or ["CPU"], len(busy)


# NVIDIA compute capability major (and minor where it splits a major) -> architecture, for
# XProf's "Nvidia GPU (Hopper)" device type (its GpuModelName).
_NVIDIA_ARCH = {(2, None): "Fermi", (3, None): "Kepler", (5, None): "Maxwell", (6, None): "Pascal",
                (7, 0): "Volta", (7, 2): "Volta", (7, 5): "Turing", (8, None): "Ampere", (8, 9): "Ada Lovelace",
                (9, None): "Hopper", (10, None): "Blackwell", (12, None): "Blackwell"}
# AMD architecture family by compute capability major, XProf's fallback without the gfx name.
_AMD_FAMILY = {9: "gfx-9XX series", 10: "gfx-10XX series", 11: "gfx-11XX series"}


def _int_stat(stats: dict[str, object], name: str) -> int | None:
    try:
        return int(str(stats[name]))
    except (KeyError, ValueError):
        return None


def gfx_arch(name: str) -> str:
    """The AMD architecture of a ROCm device name (``gfx942:sramecc+:xnack-`` -> ``gfx942``;
    "" when the name is no gfx architecture)."""
    arch = name.split(":", 1)[0].strip()
    return arch if arch.startswith("gfx") and len(arch) > 3 and arch[3:].isalnum() else ""


def device_model(plane: PlaneView) -> str:
    """A device plane's model as XProf names it (run environment, roofline): a TPU's own
    ``device_type_string`` ("TPU v6 Lite"); an NVIDIA GPU's architecture by compute capability
    ("Nvidia GPU (Hopper)"); an AMD GPU's gfx architecture from its ROCm device name ("AMD GPU -
    gfx942"), else its family by compute capability ("AMD GPU - gfx-9XX series"), else "AMD GPU";
    "" when the plane says neither."""
    stats = plane.plane_stats
    if "device_type_string" in stats:
        return str(stats["device_type_string"])
    if str(stats.get("device_vendor", "")) == MTIA_VENDOR:
        return "MTIA"
    vendor = str(stats.get("device_vendor", "")).strip().lower()
    major, minor = _int_stat(stats, "compute_cap_major"), _int_stat(stats, "compute_cap_minor") or 0
    name = str(stats.get("gpu_device_name", "") or stats.get("device_name", ""))
    # Without a vendor stat (PyTorch traces' deviceProperties), a ROCm device says so by its name.
    if vendor == "amd" or (not vendor and (gfx_arch(name) or "AMD" in name.upper().split())):
        arch = gfx_arch(name)
        if arch:
            return f"AMD GPU - {arch}"
        family = _AMD_FAMILY.get(major) if major is not None else None
        return f"AMD GPU - {family}" if family else "AMD GPU"
    if major is None or vendor not in ("nvidia", ""):
        return ""
    arch_name = _NVIDIA_ARCH.get((major, minor)) or _NVIDIA_ARCH.get((major, None), "")
    return f"Nvidia GPU ({arch_name})" if arch_name else "Nvidia GPU"


def device_display_name(plane: PlaneView) -> str:
    """What pages call a device: its product name (``NVIDIA H100 80GB HBM3``) when the plane has
    one, else its model as XProf names it (an AMD plane's device name is its gfx architecture,
    which reads as "AMD GPU - gfx942"; a TPU's is its type string)."""
    stats = plane.plane_stats
    name = str(stats.get("gpu_device_name", "") or stats.get("device_name", "")).strip()
    if name and not gfx_arch(name):
        return name
    return device_model(plane) or name
