"""The `tbprof` command as a process of its own: it answers, exits, and the converted store
reaches the disk cache from a detached writer (``ProfileCache.persist_detached``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tbprof.cache.profile_cache import ProfileCache
from tbprof.readers import xplane
from tbprof.store.tables import ProfileStore
from tests.conftest import xplane_of
from tests.helpers import assert_same_store


def _tbprof(*argv: str, cache_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TBPROF_CACHE_DIR": str(cache_dir)}
    # capture_output waits for EOF on the pipes: a writer that kept them open would hold this up
    # until it finished, and the timeout below would say so.
    return subprocess.run([sys.executable, "-m", "tbprof.cli", *argv], env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def _wait_for_entry(cache: ProfileCache, path: Path) -> None:
    deadline = time.monotonic() + 60
    while not cache.contains(path):
        assert time.monotonic() < deadline, "the detached writer never committed the store"
        time.sleep(0.05)


def test_summary_exits_and_the_store_is_committed_after(profiles_root: Path, tmp_path: Path) -> None:
    f = xplane_of(profiles_root, "jax_mlp")
    cache_dir = tmp_path / "cache"
    first = _tbprof("summary", str(f), "--json", cache_dir=cache_dir)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["event_count"] > 0  # the answer came whole, before the exit

    cache = ProfileCache(cache_dir)
    _wait_for_entry(cache, f)
    # The committed entry is the store the reader makes, column for column.
    loaded = cache.get(f, lambda p: (_ for _ in ()).throw(AssertionError("converted again: entry missing")))
    assert isinstance(loaded, ProfileStore)
    assert_same_store(loaded, xplane.read_xspace(f))

    # The next command answers the same from the cache.
    second = _tbprof("summary", str(f), "--json", cache_dir=cache_dir)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout) == json.loads(first.stdout)


def test_output_cut_short_is_no_error(profiles_root: Path, tmp_path: Path) -> None:
    # `tbprof show ... | head -c 10`: the reader goes away; the command must not print a traceback.
    # (memory_profile of jax_mlp prints ~118 KB, far beyond a pipe's 64 KB buffer: the
    # command is still writing when the reader goes.)
    f = xplane_of(profiles_root, "jax_mlp")
    env = {**os.environ, "TBPROF_CACHE_DIR": str(tmp_path / "cache")}
    with subprocess.Popen([sys.executable, "-m", "tbprof.cli", "show", "memory_profile", str(f)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert len(proc.stdout.read(10)) == 10
        proc.stdout.close()
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
    assert "Traceback" not in err, err
    assert code == 0


def test_a_small_pod_converts_in_process_and_the_command_leaves_at_once(profiles_root: Path,
                                                                       tmp_path: Path) -> None:
    """``--workers 2`` on a pod below the pool's threshold: no pool starts (not even early), and
    the process pool's module is not loaded, so ``entry`` leaves with ``os._exit`` as for one
    host (cli/main.py: a pool that ran makes it exit through the interpreter's teardown)."""
    code = (
        "import sys\n"
        "from tbprof.cli import main\n"
        f"code = main.main(['summary', {str(profiles_root / 'jax_2hosts')!r}, '--workers', '2', '--json', "
        f"'--cache-dir', {str(tmp_path / 'c')!r}])\n"
        "import multiprocessing\n"
        "print(code, 'concurrent.futures.process' in sys.modules, len(multiprocessing.active_children()),"
        " main._still_running(), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout)["host_count"] == 2
    assert out.stderr.strip().splitlines()[-1] == "0 False 0 False"


def test_summary_process_answers_as_the_command_in_process(profiles_root: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The command as its own process tunes the C heap for one host converted in memory
    (``memory_guard.share_heaps(1)``, ``large_blocks_in_heap``); a caller that goes on (``main`` in
    this process) leaves it as it is. Same answers, for each XSpace demo host."""
    from tbprof.cli import main as cli

    for name in ("jax_mlp", "keras_cnn", "custom_loop"):
        f = xplane_of(profiles_root, name)
        run = _tbprof("summary", str(f), "--json", cache_dir=tmp_path / f"p_{name}")
        assert run.returncode == 0, run.stderr
        assert cli.main(["summary", str(f), "--json", "--cache-dir", str(tmp_path / f"i_{name}")]) == 0
        assert json.loads(run.stdout) == json.loads(capsys.readouterr().out), name
