"""#29 items on the kernel stats, compare and pod viewer pages in a real browser, at 1280 and
1600 px (screenshots in test-artifacts/): the TensorCore cards show XProf's shares where its
rules recognise something and "not determined" (with the reason) where a 0 % would be false;
expectations come from the backend's JSON and XProf's goldens."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import golden

from .helpers import app_url, run_named, wait_ready

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("width", [1280, 1600])
def test_tensorcore_cards(standalone: Any, serve_page: Any, width: int) -> None:
    page = serve_page.page
    page.set_viewport_size({"width": width, "height": 900})
    # jax_mlp: XProf marks its four cuBLAS xmma_gemm kernels eligible and using TensorCores.
    run = run_named(standalone, "jax_mlp/")
    page.goto(app_url(standalone, run=run, tool="kernel_stats"))
    wait_ready(page)
    result = standalone.json("data", run=run, tool="kernel_stats", rows="0")
    g = golden("jax_mlp", "kernel_stats")
    assert g["tensorcore_eligible_rows"] == 4
    share = f"{100 * result['tensorcore_eligible_fraction']:.1f}%"
    assert share != "0.0%"
    assert page.inner_text('[data-card="eligible"] .tbp-card-value') == share
    serve_page.screenshot(f"kernel_stats__jax_mlp_{width}")
    # jax_2hosts: XProf's rules recognise no op and no kernel; no false 0.0 %.
    run = run_named(standalone, "jax_2hosts/")
    page.goto(app_url(standalone, run=run, tool="kernel_stats", host="worker0"))
    wait_ready(page)
    assert golden("jax_2hosts", "kernel_stats")["tensorcore_eligible_rows"] == 0
    for card in ("eligible", "tensorcore"):
        assert page.inner_text(f'[data-card="{card}"] .tbp-card-value') == "not determined"
    assert "XProf's TensorCore rules" in page.inner_text("[data-tensorcore-note]")
    serve_page.screenshot(f"kernel_stats__jax_2hosts_{width}")
    serve_page.check()
