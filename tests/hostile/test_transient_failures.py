"""Short of descriptors is not the file's fault (issue #34, medium).

With the process out of descriptors, a conversion fails with "Too many open files" (EMFILE): that
answer is a 422 now, but it must not be remembered as the file's failure, so the same file opens
once descriptors are free again. Files: a demo profile copied here.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest
from werkzeug.test import Client

from tbprof.http.app import create_app
from tests.conftest import SAMPLE_PROFILES

API = "/data/plugin/tbprof/"


def test_emfile_is_not_remembered_as_the_files_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logdir = tmp_path / "logs"
    shutil.copytree(SAMPLE_PROFILES / "torch_cnn", logdir / "torch_cnn")
    client = Client(create_app(logdir, cache_dir=tmp_path / "cache"))
    query = {"run": "torch_cnn", "tool": "profile_summary"}
    real_open = os.open

    def no_descriptors(path: object, *args: object, **kwargs: object) -> int:
        if str(path).endswith(".json"):
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", no_descriptors)
    r = client.get(API + "data", query_string=query)
    assert r.status_code == 422 and "Too many open files" in r.get_json()["error"], r.data[:300]
    monkeypatch.setattr(os, "open", real_open)  # descriptors are free again
    r = client.get(API + "data", query_string=query)
    assert r.status_code == 200, r.data[:300]
    assert r.get_json()["event_count"] > 0
