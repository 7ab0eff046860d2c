"""A run's environment (XProf's run environment): its hosts and their devices, read from the
device planes alone; the overview, the pod viewer and the headline (``tbprof summary``, which
imports this, not the overview's analyses) show it."""

from __future__ import annotations

from collections.abc import Sequence

from tbprof.analyses.results.whole_run import DeviceInfo, RunEnvironment
from tbprof.domain.planes import device_display_name, device_model, device_planes_of, device_type
from tbprof.store.view import StoreView


def run_environment(stores: Sequence[StoreView]) -> RunEnvironment:
    devices: list[DeviceInfo] = []
    for s in stores:
        for pi in device_planes_of(s):
            p = s.planes[pi]
            devices.append({"host": s.host, "plane": p.name, "device_type": device_type(p),
                            "model": device_display_name(p), "xprof_device_type": device_model(p),
                            "core_count": int(p.plane_stats["core_count"]) if p.plane_stats.get("core_count") else None,
                            "compute_capability": (f"{p.plane_stats['compute_cap_major']}."
                                                   f"{p.plane_stats.get('compute_cap_minor', 0)}"
                                                   if "compute_cap_major" in p.plane_stats else "")})
    types = sorted({str(d["device_type"]) for d in devices})
    models = sorted({str(d["model"]) for d in devices if d["model"]})
    xprof_types = sorted({str(d["xprof_device_type"]) for d in devices if d["xprof_device_type"]})
    return {
        "host_count": len(stores), "hosts": [s.host for s in stores],
        "hardware_type": (types[0] if len(types) == 1 else ",".join(types)) if types else "CPU_ONLY",
        "device_type": (types[0] if len(types) == 1 else ",".join(types)) if types else "CPU",
        "device_model": ", ".join(models), "device_count": len(devices), "devices": devices,
        # XProf's run-environment device type ("Nvidia GPU (Hopper)", "AMD GPU - gfx942", "TPU v6 Lite").
        "xprof_device_type": ", ".join(xprof_types),
    }
