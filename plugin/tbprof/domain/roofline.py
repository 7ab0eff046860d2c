"""A GPU's peak FLOP rate and memory bandwidths, and XProf's "bound by" verdict for an op.

XProf derives the peaks of a profile from its first device plane's stats (``clock_rate`` in
kHz, ``core_count`` SMs, ``compute_cap_major/minor``, ``memory_bandwidth`` in bytes/s,
``device_vendor``) and calls an op bound by the resource it uses the largest fraction of:
compute (FLOP rate / peak FLOP rate), HBM (HBM bytes / time / peak HBM bandwidth) or, on GPUs,
shared memory / L1 (the same bytes against the SMs' shared-memory bandwidth). Nothing used:
"Unknown". Formulas: docs/formulas.md "Bound by".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tbprof.domain.planes import device_planes_of
from tbprof.store.view import StoreView

# Peak FLOPs per SM per clock cycle of NVIDIA GPUs by compute capability (major * 1000 + minor
# * 10), the largest of the fp32 and fp16 rates of the vector units and the tensor cores (dense)
# in NVIDIA's architecture whitepapers, as XProf tabulates them. A capability missing here uses
# the nearest lower one (the oldest if it is older than all).
_NVIDIA_PEAK_FLOPS_PER_SM_CYCLE = {
    2000: 64,     # Fermi: fp32 vector
    3000: 384,    # Kepler: fp32 vector
    5000: 256,    # Maxwell: fp32 vector
    6000: 256,    # Pascal GP100: fp16 vector
    6010: 256,    # Pascal GP10x: fp32 vector
    7000: 1024,   # Volta: fp16 tensor cores
    7050: 1024,   # Turing: fp16 tensor cores
    8000: 2048,   # Ampere A100: fp16 tensor cores
    8060: 1024,   # Ampere GA10x: fp16 tensor cores
    8090: 1024,   # Ada: fp16 tensor cores
    9000: 4096,   # Hopper: fp16 tensor cores
    10000: 8192,  # Blackwell: fp16 tensor cores
}
# Shared memory: 32 banks of 8 bytes per cycle per SM (4 bytes per 2 cycles up to Fermi).
_SHM_BANKS = 32
_KHZ_PER_GHZ = 1e6
GIB_PER_GB = 1e9 / 2**30

COMPUTE, HBM, SHM_L1, UNKNOWN = "Compute", "HBM", "Shm/L1", "Unknown"


@dataclass(frozen=True)
class PerfEnv:
    """Peaks of one device: TFLOP/s and GB/s (10^9 bytes/s). 0: unknown."""

    peak_tflops: float = 0.0
    peak_hbm_gbps: float = 0.0
    peak_shm_gbps: float = 0.0
    tpu: bool = False  # peaks stated by a TPU plane


def _nvidia_flops_per_sm_cycle(major: int, minor: int) -> int:
    cap = major * 1000 + minor * 10
    known = sorted(_NVIDIA_PEAK_FLOPS_PER_SM_CYCLE)
    lower = [k for k in known if k <= cap]
    return _NVIDIA_PEAK_FLOPS_PER_SM_CYCLE[lower[-1] if lower else known[0]]


def perf_env(stores: Sequence[StoreView]) -> PerfEnv:
    """The peaks of the first device plane (of the first host that has one), as XProf takes
    them; all 0 when no plane carries NVIDIA device stats."""
    for store in stores:
        for pi in device_planes_of(store):
            stats = store.planes[pi].plane_stats
            if "peak_teraflops_per_second" in stats:
                # A TPU plane states its peaks (XProf reads them as they are): TFLOP/s, HBM GB/s and
                # the vector memory's write bandwidth, the roof XProf draws as peak_vmem_write_bw.
                return PerfEnv(peak_tflops=_stat_float(stats, "peak_teraflops_per_second"),
                               peak_hbm_gbps=_stat_float(stats, "peak_hbm_bw_gigabytes_per_second"),
                               peak_shm_gbps=_stat_float(stats, "peak_vmem_wr_bw_gigabytes_per_second"),
                               tpu=True)
            if str(stats.get("device_vendor", "")) != "Nvidia" or "compute_cap_major" not in stats:
                return PerfEnv()
            ghz = float(stats.get("clock_rate", 0) or 0) / _KHZ_PER_GHZ
            cores = int(stats.get("core_count", 0) or 0)
            major, minor = int(stats["compute_cap_major"]), int(stats.get("compute_cap_minor", 0) or 0)
            flops_per_cycle = _nvidia_flops_per_sm_cycle(major, minor)
            shm_bytes_per_cycle = _SHM_BANKS * (4 / 2 if major <= 2 else 8)
            return PerfEnv(peak_tflops=cores * flops_per_cycle * ghz / 1e3,
                           peak_hbm_gbps=float(stats.get("memory_bandwidth", 0) or 0) / 1e9,
                           peak_shm_gbps=cores * shm_bytes_per_cycle * ghz)
    return PerfEnv()


def _stat_float(stats: dict[str, object], name: str) -> float:
    try:
        return float(str(stats.get(name, 0) or 0))
    except ValueError:
        return 0.0


def bound_by(env: PerfEnv, flops: np.ndarray, hbm_bytes: np.ndarray, time_ps: np.ndarray) -> np.ndarray:
    """Per op: the resource with the highest utilization over the op's total time; a later
    resource wins only when strictly higher (compute, then HBM, then shared memory / L1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.maximum(time_ps.astype(np.float64), 1.0)
        ok = time_ps > 0
        # flops / ps = TFLOP/s; bytes / ps * 1000 = GB/s.
        compute = np.where(ok & (env.peak_tflops > 0), flops / t / (env.peak_tflops or 1.0), 0.0)
        bw_gbps = np.where(ok, hbm_bytes / t * 1e3, 0.0)
        hbm = bw_gbps / env.peak_hbm_gbps if env.peak_hbm_gbps > 0 else np.zeros_like(bw_gbps)
        shm = bw_gbps / env.peak_shm_gbps if env.peak_shm_gbps > 0 else np.zeros_like(bw_gbps)
    out = np.full(flops.shape[0], UNKNOWN, dtype=object)
    best = np.zeros(flops.shape[0])
    for name, util in ((COMPUTE, compute), (HBM, hbm), (SHM_L1, shm)):
        wins = util > best
        out[wins] = name
        best = np.where(wins, util, best)
    return out
