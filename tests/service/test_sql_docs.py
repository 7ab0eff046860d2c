"""docs/sql.md stays true: each of its example questions runs on the demo profile it names and
answers rows, and its column table lists exactly the columns of ``events``."""

from __future__ import annotations

import re
import shutil

import pytest

from tbprof.service import api
from tbprof.service.sql import run_sql, sql_tables
from tests.conftest import REPO, SAMPLE_PROFILES

DOC = (REPO / "docs" / "sql.md").read_text(encoding="utf-8")
QUESTIONS = re.findall(r"\(run: (\w+)\)\n\n```sql\n(.*?)```", DOC, flags=re.S)


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> dict[str, api.Profile]:
    cache = tmp_path_factory.mktemp("cache")
    out = {}
    for name in sorted({run for run, _ in QUESTIONS}):
        root = tmp_path_factory.mktemp(name)
        shutil.copytree(SAMPLE_PROFILES / name, root / name)
        out[name] = api.open(root / name, cache_dir=cache)
    return out


def test_ten_questions() -> None:
    assert len(QUESTIONS) == 10


@pytest.mark.parametrize(("run", "query"), QUESTIONS, ids=[f"q{i + 1}" for i in range(len(QUESTIONS))])
def test_each_question_answers(run: str, query: str, opened: dict[str, api.Profile]) -> None:
    profile = opened[run]
    got = run_sql(profile.profiles, profile.run.name, query)
    assert got["row_count"] > 0, query


def test_the_column_table_is_the_view(opened: dict[str, api.Profile]) -> None:
    section = DOC.split("### `events` columns")[1].split("###")[0]
    documented = re.findall(r"^\| `(\w+)` \| [A-Z]+(?:\[\])? \|", section, flags=re.M)
    profile = next(iter(opened.values()))
    events = next(t for t in sql_tables(profile.profiles, profile.run.name) if t["name"] == "events")
    assert documented == [c["name"] for c in events["columns"]]


def test_every_module_path_named_exists() -> None:
    for path in re.findall(r"`(tests/[\w/]+\.py)`", DOC):
        assert (REPO / path).exists(), path
