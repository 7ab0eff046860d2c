"""The overview's steps card says how its steps were found (step_confidence), in the browser."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import app_url, run_named, wait_ready

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(("profile", "confidence"), [("custom_loop/", "markers"), ("keras_cnn/", "annotated")])
def test_overview_shows_step_confidence(standalone: Any, serve_page: Any, profile: str, confidence: str) -> None:
    run = run_named(standalone, profile)
    result = standalone.json("data", run=run, tool="overview_page", rows="0")
    assert result["steps"]["step_confidence"] == confidence
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="overview_page"))
    wait_ready(page)
    hint = page.locator('[data-card="steps"] .tbp-card-hint').inner_text()
    assert hint.startswith(f"Step confidence: {confidence}")
    serve_page.check()
