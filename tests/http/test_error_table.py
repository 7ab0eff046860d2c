"""Domain errors carry no HTTP status; http/errors.py and cli/main.py map them, one table each."""

from __future__ import annotations

from pathlib import Path

import pytest
from werkzeug.test import Client

from tbprof import errors
from tbprof.analyses.compare.report import SelectionError
from tbprof.analyses.table import QueryError
from tbprof.analyses.tfprof.tfprof_export import ExportError
from tbprof.analyses.tool import OptionError
from tbprof.cli.common import EXIT_UNREADABLE, EXIT_USAGE
from tbprof.cli.main import exit_code
from tbprof.domain.regex import RegexError
from tbprof.http.app import create_app
from tbprof.http.errors import error_fields, http_status
from tbprof.timeline.search import MAX_QUERY_CHARS, SearchError

API = "/data/plugin/tbprof/"


def test_domain_errors_know_nothing_of_http() -> None:
    for cls in (errors.TbprofError, errors.NotFound, errors.NoData, errors.BadParameter, errors.ProfileReadError,
                errors.MemoryRefusal, errors.UnsafeCacheDir, errors.StorageError):
        assert not any("http" in name or "status" in name for name in vars(cls)), cls


# The statuses docs/api.md (errors) promises: unknown name 404, bad parameter 400, unreadable 422.
@pytest.mark.parametrize(("error", "status", "code"), [
    (errors.NotFound("x"), 404, EXIT_USAGE),
    (errors.NoData("x"), 404, EXIT_USAGE),
    (errors.BadParameter("x"), 400, EXIT_USAGE),
    (OptionError("x"), 400, EXIT_USAGE),
    (QueryError("x"), 400, EXIT_USAGE),
    (SelectionError("x"), 400, EXIT_USAGE),
    (ExportError("x"), 400, EXIT_USAGE),
    (SearchError("x"), 400, EXIT_USAGE),
    (RegexError("x"), 400, EXIT_USAGE),
    (errors.ProfileReadError("f", "why"), 422, EXIT_UNREADABLE),
    (errors.MemoryRefusal("f", "why"), 422, EXIT_UNREADABLE),
    (errors.StorageError("f", "why"), 422, EXIT_UNREADABLE),
    (errors.UnsafeCacheDir("x"), 500, EXIT_USAGE),
])
def test_one_table_each_at_the_edges(error: errors.TbprofError, status: int, code: int) -> None:
    assert http_status(error) == status
    assert exit_code(error) == code
    assert error_fields(error)["kind"] == error.kind


def test_unreadable_file_names_it() -> None:
    fields = error_fields(errors.StorageError("s3://b/k", "no credentials"))
    assert fields == {"kind": "storage_error", "file": "s3://b/k", "reason": "no credentials"}


def test_search_and_step_selection_errors_reach_http_as_400(profiles_root: Path, cache_dir: Path) -> None:
    """The routes no longer convert SearchError / SelectionError themselves: the table does."""
    client = Client(create_app(profiles_root, cache_dir=cache_dir))
    run = next(e["run"] for e in client.get(API + "runs").get_json()["runs"] if e["run"].startswith("jax_mlp/"))
    r = client.get(API + "trace_search", query_string={"run": run, "q": "x" * (MAX_QUERY_CHARS + 1)})
    assert r.status_code == 400 and "longer than" in r.get_json()["error"]
    r = client.get(API + "compare", query_string={"base_run": run, "run": run, "steps": "three"})
    assert r.status_code == 400 and r.get_json()["kind"] == "bad_request"
    r = client.get(API + "compare", query_string={"run": run})
    assert r.status_code == 400 and "'base_run'" in r.get_json()["error"]
