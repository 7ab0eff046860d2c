"""Every cache is in the one memory budget or bounded, and docs/architecture.md names each.

The code is read for caches (the AST of every module): module-level names bound to a ``Memo``,
``SmallLru``, an ordered or weak dictionary or an empty dict; functions under ``functools.cache``
or ``lru_cache``; attributes that an ``__init__`` binds to a ``Memo``, ``SmallLru`` or
``FailureMemo``. Each must be a row of the doc's cache table, and each row must name something
the code holds. Then each bound is driven past its limit.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from tbprof import fs
from tbprof.readers import sniff
from tbprof.service.host_partials import HostPartials
from tbprof.service.logdir import FolderCache
from tbprof.store.memo import Memo, shared_budget

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "plugin" / "tbprof"
DOC = REPO / "docs" / "architecture.md"

_CACHE_CALLS = {"Memo", "SmallLru", "_Memo", "FailureMemo", "OrderedDict", "WeakKeyDictionary", "WeakValueDictionary"}
_HELD_CACHE_CALLS = {"Memo", "SmallLru", "FailureMemo"}

# Module-level mutable state that is no cache: what it holds is live work, not a value kept
# to be served again.
NOT_CACHES = {
    "capture/session._busy",  # servers with a capture in flight (removed when it ends)
    "capture/session._sessions_issued",  # session names handed out, so two captures never share one
    "cli/common._unwritten",  # caches whose disk write the CLI finishes at exit
    "cli/common._executors",  # worker pools the CLI closes at exit
}


def _module(path: Path) -> str:
    return path.relative_to(PACKAGE).with_suffix("").as_posix()


def _call_name(node: ast.expr | None) -> str:
    return ast.unparse(node.func).split(".")[-1] if isinstance(node, ast.Call) else ""


def caches_in_code() -> set[str]:
    """``module.name`` / ``module.Class.attribute`` of every cache the code holds."""
    found: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if "protos" in path.parts:
            continue
        module = _module(path)
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                value = node.value
                empty = ((isinstance(value, ast.Dict) and not value.keys)
                         or (isinstance(value, (ast.List, ast.Set)) and not value.elts)
                         or _call_name(value) in {"set", "list", "dict"})
                if isinstance(target, ast.Name) and (empty or _call_name(value) in _CACHE_CALLS):
                    found.add(f"{module}.{target.id}")
            if isinstance(node, ast.FunctionDef) and any(
                    re.search(r"\b(cache|lru_cache)\b", ast.unparse(d)) for d in node.decorator_list):
                found.add(f"{module}.{node.name}")
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for fn in cls.body:
                if not (isinstance(fn, ast.FunctionDef) and fn.name == "__init__"):
                    continue
                for stmt in ast.walk(fn):
                    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and _call_name(stmt.value) in _HELD_CACHE_CALLS:
                        attr = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
                        if isinstance(attr, ast.Attribute):
                            found.add(f"{module}.{cls.name}.{attr.attr}")
    return found - NOT_CACHES


def caches_in_doc() -> set[str]:
    """The names in the first column of the doc's cache table (``a/b.name``, several per row)."""
    text = DOC.read_text()
    table = text[text.index("| cache | holds | bound |"):].split("\n\n", 1)[0]
    names: set[str] = set()
    for row in table.splitlines()[2:]:
        first = row.split("|")[1]
        cells = re.findall(r"`([^`]+)`", first)
        module = cells[0].rsplit(".", 2)[0] if cells[0].count(".") == 2 else cells[0].rsplit(".", 1)[0]
        for cell in cells:  # later names in a row share the first one's module
            names.add(cell if "/" in cell or cell.startswith(module + ".") or cell == cells[0] else f"{module}.{cell}")
    return names


def test_the_doc_names_every_cache_of_the_code() -> None:
    assert caches_in_code() - caches_in_doc() == set()


def test_every_cache_the_doc_names_is_in_the_code() -> None:
    for name in caches_in_doc():
        module, _, rest = name.partition(".")
        while not (PACKAGE / f"{module}.py").exists() and "." in rest:  # "service/tools.all_tools"
            head, _, rest = rest.partition(".")
            module = f"{module}.{head}"
        source = (PACKAGE / f"{module}.py").read_text()
        for part in rest.split("."):
            assert re.search(rf"\b{re.escape(part)}\b", source), name


def test_the_scan_finds_the_kinds_of_cache() -> None:
    found = caches_in_code()
    assert {"http/app._GZIPPED", "fs._LISTINGS", "domain/regex.fixed",
            "service/profiles.Profiles._results", "domain/tf_op._PARSED"} <= found


def test_module_level_memos_are_in_the_budget() -> None:
    from tbprof.analyses.compare import stats
    from tbprof.domain import hlo_map
    from tbprof.http import app, responses

    for memo in (app._GZIPPED, responses._BODIES, stats._U_CDFS, hlo_map._PROGRAMS):
        assert isinstance(memo, Memo) and memo.budget is shared_budget()


class _FakeFs:
    """A filesystem object as fsspec's: hashed and compared by its options (here a token)."""

    def __init__(self, token: str) -> None:
        self.token = token

    def __hash__(self) -> int:
        return hash(self.token)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _FakeFs) and other.token == self.token


def test_listings_are_bounded_and_keyed_by_filesystem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fs, "_LISTINGS", type(fs._LISTINGS)())
    monkeypatch.setattr(fs, "filesystem", lambda url: (_FakeFs(url.split("/")[2]), url.split("://", 1)[1]))
    first = fs.location("memory://bucket0/a")
    assert isinstance(first, fs.UrlPath)
    again = fs.location("memory://bucket0/b")  # an equal filesystem (same options): one listing
    assert isinstance(again, fs.UrlPath) and again.listing is first.listing
    for i in range(1, 3 * fs.MAX_LISTINGS):
        other = fs.location(f"memory://bucket{i}/a")
        assert isinstance(other, fs.UrlPath) and other.listing is not first.listing
        assert len(fs._LISTINGS) <= fs.MAX_LISTINGS
    assert len(fs._LISTINGS) == fs.MAX_LISTINGS
    assert first.listing.fs.token == "bucket0"  # a location keeps its listing after eviction


def test_sniff_memo_is_bounded() -> None:
    memo = sniff._Memo()
    for i in range(sniff._MEMO_ENTRIES + 100):
        memo.put((f"f{i}", i, 0.0), "chrome")
    assert len(memo._items) == sniff._MEMO_ENTRIES
    assert memo.get(("f0", 0, 0.0)) == (False, None)  # the oldest went first
    assert memo.get((f"f{sniff._MEMO_ENTRIES + 99}", sniff._MEMO_ENTRIES + 99, 0.0)) == (True, "chrome")


def test_folder_cache_is_bounded_and_still_walks_everything(tmp_path: Path) -> None:
    for i in range(10):
        (tmp_path / f"run{i}" / "plugins" / "profile" / "s").mkdir(parents=True)
        (tmp_path / f"run{i}" / "plugins" / "profile" / "s" / "h.xplane.pb").write_bytes(b"")
    cache = FolderCache()
    cache.MAX_FOLDERS = 7
    walks = [sorted(str(folder) for folder, _ in cache.walk(tmp_path)) for _ in range(2)]
    assert len(walks[0]) == 10 and walks[1] == walks[0]
    assert len(cache._folders) == 7
    unbounded = FolderCache()
    list(unbounded.walk(tmp_path))
    assert len(unbounded._folders) == 1 + 10 * 4  # the logdir, and each run's four folders


def test_host_partials_remember_a_bounded_number_of_unreadable_files_and_batches() -> None:
    parts: Any = HostPartials.__new__(HostPartials)  # only the two bounded maps are exercised
    parts._unreadable, parts._batches = {}, {}
    for i in range(HostPartials.MAX_UNREADABLE + 10):
        parts._remember_unreadable(f"k{i}", {"error": "bad"})
    assert len(parts._unreadable) == HostPartials.MAX_UNREADABLE and "k0" not in parts._unreadable
    for i in range(HostPartials.MAX_BATCHES + 10):
        parts._remember_batch((f"k{i}", f"k{i}+1"))
    assert len(parts._batches) == HostPartials.MAX_BATCHES and "k0" not in parts._batches


def test_offered_tools_are_kept_per_trait_set_not_per_run(tmp_path: Path) -> None:
    from tbprof.readers.kinds import KINDS, Run
    from tbprof.service import tools as registry
    from tbprof.service.profiles import Profiles

    profiles = Profiles(tmp_path, cache_dir=tmp_path / "cache")
    registry.offered.cache_clear()
    for i in range(200):  # many runs of every kind: one entry per distinct trait set
        for kind in KINDS:
            profiles.candidate_tools(Run(name=f"run{i}", path=tmp_path, kind=kind))
    assert registry.offered.cache_info().currsize == len({k.traits for k in KINDS.values()})
