"""Packaging: a build never writes into the checkout.

``pip wheel .`` and ``pip install .`` build in a private temporary directory (setup.py), so a
read-only or shared checkout installs, and two builds at once do not trip over one ``build/``.
``pip install -e .`` (scripts/test.sh) still builds the compiled core in place, next to its
``.pyx``, and nothing else. Each test compiles the Cython core (minutes), hence ``slow``; pip
fetches the build requirements (setuptools, Cython) into its isolated build environment.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy
import pytest

REPO = Path(__file__).resolve().parent.parent
CORE_MODULES = ("wire", "kernels", "jsonscan", "groups", "chrome_pass", "mapped")

pytestmark = pytest.mark.slow


def _copy_checkout(dest: Path) -> Path:
    """The tracked files of this checkout (what a clone holds), without the compiled core."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        src = REPO / rel
        if src.is_file():  # a tracked file deleted in the working tree is no part of it
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under root with its size and modification time."""
    return {p.relative_to(root).as_posix(): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in root.rglob("*")}


def _set_writable(root: Path, writable: bool) -> None:
    for p in [root, *root.rglob("*")]:
        mode = p.lstat().st_mode
        p.chmod(mode | stat.S_IWUSR if writable else mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _pip(*args: str | Path, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    # Unoptimised C (setup.py leaves an optimisation level in $CFLAGS alone): these tests check
    # where a build writes and what it holds, not the code it makes, and -O0 compiles several times faster.
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "CFLAGS": "-O0"}
    return subprocess.run([python, "-m", "pip", *map(str, args)], capture_output=True, text=True, env=env)


def test_two_concurrent_wheels_from_a_read_only_checkout(tmp_path: Path) -> None:
    src = _copy_checkout(tmp_path / "src")
    before = _snapshot(src)
    _set_writable(src, False)  # root ignores permission bits: the snapshot below checks all the same
    try:
        outs = [tmp_path / "wheels1", tmp_path / "wheels2"]
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda out: _pip("wheel", "--no-deps", "-q", "-w", out, src), outs))
    finally:
        _set_writable(src, True)
    for r in results:
        assert r.returncode == 0, r.stderr[-4000:]
    assert _snapshot(src) == before  # nothing written, nothing added (build/, egg-info, *.c)
    for out in outs:
        (wheel,) = out.glob("tbprof-*.whl")
        names = zipfile.ZipFile(wheel).namelist()
        for module in CORE_MODULES:
            assert any(n.startswith(f"tbprof/_core/{module}.") and n.endswith((".so", ".pyd")) for n in names)
        assert not [n for n in names if n.endswith(".c")]


def test_editable_install_builds_the_core_in_place_and_nothing_else(tmp_path: Path) -> None:
    src = _copy_checkout(tmp_path / "src")
    before = set(_snapshot(src))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    python = str(venv / "bin" / "python")
    r = _pip("install", "--no-deps", "-q", "-e", src, python=python)
    assert r.returncode == 0, r.stderr[-4000:]
    added = set(_snapshot(src)) - before
    assert added, "an editable install builds the compiled core into the checkout"
    for rel in added:  # only the compiled modules, next to their .pyx
        assert rel.startswith("plugin/tbprof/_core/") and rel.endswith((".so", ".pyd")), rel
    assert {rel.split("/")[-1].split(".")[0] for rel in added} == set(CORE_MODULES)
    # The throwaway venv has no numpy (the core imports it): this interpreter's, on the path.
    env = {**os.environ, "PYTHONPATH": str(Path(numpy.__file__).parent.parent)}
    probe = ("import tbprof._core.wire as w, tbprof._core.kernels, tbprof._core.jsonscan, tbprof._core.groups, "
             "tbprof._core.chrome_pass, tbprof._core.mapped; "
             "print(w.__file__)")
    where = subprocess.run([python, "-c", probe], cwd=tmp_path, env=env, check=True, capture_output=True,
                           text=True).stdout
    assert Path(where.strip()).parent == src / "plugin" / "tbprof" / "_core"
