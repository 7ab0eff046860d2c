"""Domain errors carry no HTTP status; http/errors.py and cli/main.py map them, one table each."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

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
from tbprof.http.errors import ERROR_STATUS, ErrorKind, error_fields, http_status
from tbprof.http.routes import capture as capture_route
from tbprof.http.routes import sql as sql_route
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


def test_unreadable_file_names_it() -> None:
    fields = error_fields(errors.StorageError("s3://b/k", "no credentials"))
    assert fields == {"file": "s3://b/k", "reason": "no credentials"}


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


PACKAGE = Path(__file__).resolve().parents[2] / "plugin" / "tbprof"
# Where a kind is named at a call: the constructor's first argument, error_response's second.
_KIND_ARG = {"CaptureRefused": 0, "Refusal": 0, "HttpRefused": 0, "error_response": 1}


def _kinds_named_at_calls() -> set[str]:
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func).split(".")[-1]
            index = _KIND_ARG.get(name)
            arg = node.args[index] if index is not None and len(node.args) > index else None
            if isinstance(arg, ast.Constant):
                found.add(str(arg.value))
    return found


def _error_classes() -> set[type[errors.TbprofError]]:
    # Every module that defines a TbprofError subclass is loaded (the tools load the analyses).
    import tbprof.capture.session
    import tbprof.service.sql.engine  # noqa: F401
    from tbprof.service import tools

    tools.all_tools()
    found: set[type[errors.TbprofError]] = set()
    todo: list[type[errors.TbprofError]] = [errors.TbprofError]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_every_kind_is_one_row_of_the_table_and_every_row_is_used() -> None:
    """The one list of error kinds: each kind the code raises or answers has its status here,
    and the table names no kind that nothing raises."""
    from tbprof.capture.session import CaptureRefused

    class_kinds = {cls.kind for cls in _error_classes() if cls is not CaptureRefused}
    used = class_kinds | _kinds_named_at_calls()
    assert used == set(ERROR_STATUS)
    assert set(get_args(ErrorKind)) == set(ERROR_STATUS)  # the wire type is the table's keys


# Larger than either route's limit (capture's 64 KiB, a SQL query's characters as UTF-8).
_TOO_LARGE = b"x" * (max(capture_route.MAX_BODY_BYTES, sql_route.MAX_BODY_BYTES) + 1)


@pytest.mark.parametrize(("body", "content_type", "status", "kind"), [
    (b"{}", "text/plain", 415, "unsupported_media_type"),
    (_TOO_LARGE, "application/json", 413, "too_large"),
    (b"[1]", "application/json", 400, "bad_request"),
], ids=["not_json_type", "too_large", "not_an_object"])
def test_request_bodies_are_refused_by_kind(profiles_root: Path, cache_dir: Path, body: bytes, content_type: str,
                                            status: int, kind: str) -> None:
    """The capture and SQL routes read their bodies alike (http/params.json_body); the status is
    the table's for the kind."""
    client = Client(create_app(profiles_root, cache_dir=cache_dir))
    for route in ("capture", "sql"):
        r = client.post(API + route, data=body, content_type=content_type)
        answer = r.get_json()
        assert (r.status_code, answer["kind"], answer["status"]) == (status, kind, ERROR_STATUS[kind]), route
