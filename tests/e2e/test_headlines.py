"""No false or unexplained headline (#29 §3): each headline card says what it measures, and
says "unknown" when the profile does not tell."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import app_url, run_named, wait_ready

pytestmark = pytest.mark.e2e


def _card(page: Any, card: str) -> tuple[str, str]:
    loc = page.locator(f'[data-card="{card}"]')
    return loc.locator(".tbp-card-value").inner_text(), loc.locator(".tbp-card-hint").inner_text()


def test_precision_from_hlo_or_unknown(standalone: Any, serve_page: Any) -> None:
    page = serve_page.page
    run = run_named(standalone, "jax_mlp/")
    page.goto(app_url(standalone, run=run, tool="overview_page"))
    wait_ready(page)
    perf = standalone.json("data", run=run, tool="overview_page", rows="0")["performance_summary"]
    value, hint = _card(page, "precision")
    assert value == f"{perf['device_compute_16bit_percent']:.1f}% 16-bit" and value != "0.0% 16-bit"
    assert "element types" in hint
    serve_page.screenshot("overview__jax_mlp")
    serve_page.check()
