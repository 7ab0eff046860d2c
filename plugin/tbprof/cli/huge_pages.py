"""Whether a ``tbprof`` process lets numpy ask for transparent huge pages.

numpy asks the kernel for 2 MB pages (``madvise``) for every array of 4 MB or more. Where the
machine backs its memory itself, one fresh huge page costs less than 512 small ones. In a
virtual machine whose balloon device reports free memory to its host (virtio-balloon's free
page reporting, which the hypervisor offers and the guest's kernel turns on), the guest hands free 2 MB
blocks back to the host a few seconds after they were freed, and a huge page is taken from
those very blocks: the host then finds and zeroes memory for it on its first touch, while small
pages come from memory freed moments ago. A command that converts a profile writes its columns
into fresh memory once, so there its columns in huge pages took several times longer to fill
(bench/measurements.md#huge-pages). The ``tbprof`` command therefore turns numpy's huge pages
off where the platform reports free pages, unless the user set ``NUMPY_MADVISE_HUGEPAGE``
(numpy reads it when it is imported, as do the command's workers, which inherit it).
"""

from __future__ import annotations

import os

NUMPY_HUGEPAGE_VAR = "NUMPY_MADVISE_HUGEPAGE"
VIRTIO_DEVICES = "/sys/bus/virtio/devices"
# virtio's device id of a memory balloon, and the feature bit of its free page reporting (the
# VIRTIO 1.2 specification, 5.5): sysfs shows a device's negotiated features as one '0' or '1'
# per bit, bit 0 first.
VIRTIO_ID_BALLOON = 5
VIRTIO_BALLOON_F_REPORTING = 5


def free_pages_reported(devices: str = VIRTIO_DEVICES) -> bool:
    """Whether a virtio balloon of this machine reports free pages to its host (False where
    there is no virtio bus, as on a machine that is not a virtual one, or it cannot be read)."""
    try:
        names = os.listdir(devices)
    except OSError:
        return False
    for name in names:
        try:
            if int(_read(os.path.join(devices, name, "device")), 16) != VIRTIO_ID_BALLOON:
                continue
            features = _read(os.path.join(devices, name, "features"))
        except (OSError, ValueError):  # (a UnicodeDecodeError is a ValueError)
            continue
        if len(features) > VIRTIO_BALLOON_F_REPORTING and features[VIRTIO_BALLOON_F_REPORTING] == "1":
            return True
    return False


def choose_page_size(devices: str = VIRTIO_DEVICES) -> None:
    """Before numpy is imported: small pages for its arrays where free pages are reported."""
    if NUMPY_HUGEPAGE_VAR not in os.environ and free_pages_reported(devices):
        os.environ[NUMPY_HUGEPAGE_VAR] = "0"


def _read(path: str) -> str:
    with open(path, encoding="ascii") as f:
        return f.read(4096).strip()
