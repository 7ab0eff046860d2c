"""Which store formats have per-host partials (analyses/partials.py), and the partials' version.

A module of its own, importing nothing: the server checks a pod's format and looks for cached
partials before it hands the hosts to the workers, and importing the partials' analyses
first would delay that hand-out.
"""

from __future__ import annotations

PARTIAL_FORMATS = frozenset({"xspace"})

# Bumped when what a partial holds, or how a carried value is computed, changes: a persisted
# partial of another version is ignored (recomputed from the store).
# 2: the memory digests compare reads; 3: binary (encode_partials); 4: PyTorch precision and
# operators by launch; 5: steps need good evidence (step_confidence); 6: the overview's precision facts;
# 7: a device's step breakdown counts the host's events too (per_device_type_ps); 8: a checksum;
# 9: Hopper TensorCore kernels in the per-op TensorCore use (kernel reports); 10: a partial may
# hold some of its parts (the tool list null when left out); 11: the device ops' times alone
# (device_op_times)
PARTIAL_VERSION = 11

# The parts of a pod's host partials (analyses/partials.py ``Parts``) that the run's headline
# (analyses/overview/headline.py, ``tbprof summary``) reads beyond their header: a pod's summary
# asks its workers for these only. Here, not beside the headline, so that the command names them
# before the headline's analyses are imported. tests/service/test_partials.py checks that the
# headline of partials holding only these is the headline of complete ones.
HEADLINE_PARTS = frozenset({"steps", "host_ops", "device_op_times", "gpu_summary"})

# The memo keys of the carried values whose analyses a partial imports only when it computes or
# reads them (analyses/partials.py ``KERNEL_REPORTS``, ``HOST_PRECISION``): here, so that the
# partials name them without importing those analyses (a pod's worker that computes the
# headline's parts never does).
KERNEL_REPORTS_KEY = ("kernel_reports",)
HOST_PRECISION_KEY = ("precision", "host_facts")
