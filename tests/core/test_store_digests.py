"""The compiled core builds the same stores as the numba kernels it replaced.

``store_digests.json`` holds a digest of every store column (dtype, shape, bytes) of the six
real xplanes as the numba reader built them (see ``store_digest.py``); any change to the wire
scanner or the column kernels that alters one array shows up here by column name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tbprof.readers import xplane
from tests.conftest import xplane_of
from tests.core.store_digest import DIGESTS, PROFILES, store_digest


def _check(root: Path, name: str, host: str) -> None:
    want = json.loads(DIGESTS.read_text())[f"{name}/{host}"]
    got = store_digest(xplane.read_xspace(xplane_of(root, name, host)))
    assert sorted(got) == sorted(want)
    assert [k for k in want if got[k] != want[k]] == []


# jax_large (60 MB) is not in the repository: ``python -m tests.core.store_digest --check ROOT``
# checks it (and the rest) against an unpacked copy of the benchmark profiles (bench/ says where).
@pytest.mark.parametrize(("name", "host"), [p for p in PROFILES if p[0] != "jax_large"])
def test_small_profiles_match_the_numba_stores(profiles_root: Path, name: str, host: str) -> None:
    _check(profiles_root, name, host)
