"""The frontend's test fixtures are the current backend's answers (scripts/gen_frontend_fixtures.py)."""

from __future__ import annotations

from tests.conftest import REPO
from tests.helpers import load_script


def test_frontend_fixtures_are_fresh() -> None:
    gen = load_script("gen_frontend_fixtures")
    stale = [str(path.relative_to(REPO)) for path, data in gen.fixtures().items()
             if not path.exists() or path.read_bytes() != data]
    assert stale == [], "run python scripts/gen_frontend_fixtures.py and commit the result"
