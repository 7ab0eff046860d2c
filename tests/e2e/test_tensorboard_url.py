"""The address inside real TensorBoard (#29 §2): a tool, run or host change is one history entry
of TensorBoard's window, and the frame follows TensorBoard's Back/Forward and an edited
address."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from .helpers import run_named, wait_ready

pytestmark = pytest.mark.e2e

ACTIVE_TOOL_JS = "() => document.querySelector('a.tbp-tool.tbp-active')?.dataset.tool ?? null"


def _plugin_frame(page: Any) -> Any:
    page.wait_for_selector("iframe", timeout=60_000)
    for _ in range(600):
        for f in page.frames:
            if "plugin_entry.html?name=tbprof" in f.url:
                return f
        page.wait_for_timeout(100)
    raise AssertionError(f"no tbprof frame: {[f.url for f in page.frames]}")


def _tb_hash(run: str, tool: str, host: str | None = None) -> str:
    h = f"#tbprof&p.tbprof.run={quote(run, safe='')}"
    if host is not None:
        h += f"&p.tbprof.host={host}"
    return h + f"&p.tbprof.tool={tool}"


def _wait_tool(frame: Any, tool: str) -> None:
    frame.wait_for_function(f"() => ({ACTIVE_TOOL_JS})() === {tool!r}", timeout=30_000)
    wait_ready(frame)


def test_back_and_forward_follow_tool_run_and_host(tensorboard: Any, tb_page: Any) -> None:
    run = run_named(tensorboard, "jax_2hosts/")
    other = run_named(tensorboard, "jax_mlp/")
    page = tb_page.page
    page.goto(tensorboard.base + "/" + _tb_hash(run, "profile_summary", host="worker0"))
    frame = _plugin_frame(page)
    _wait_tool(frame, "profile_summary")
    length0 = page.evaluate("history.length")

    # Three choices, three entries in TensorBoard's history (the frame adds none of its own,
    # so one Back undoes one choice).
    frame.click('a.tbp-tool[data-tool="hlo_stats"]')
    _wait_tool(frame, "hlo_stats")
    page.wait_for_function("() => location.hash.includes('p.tbprof.tool=hlo_stats')", timeout=10_000)
    frame.select_option("select.tbp-host-select", "worker1")
    wait_ready(frame)
    page.wait_for_function("() => location.hash.includes('p.tbprof.host=worker1')", timeout=10_000)
    frame.select_option("select.tbp-run-select", other)
    wait_ready(frame)
    page.wait_for_function(f"() => location.hash.includes({quote(other, safe='')!r})", timeout=10_000)
    assert page.evaluate("history.length") == length0 + 3

    page.evaluate("history.back()")  # the run comes back
    frame.wait_for_function(f"() => document.querySelector('select.tbp-run-select').value === {run!r}",
                            timeout=30_000)
    wait_ready(frame)
    assert frame.input_value("select.tbp-host-select") == "worker1"
    assert frame.evaluate(ACTIVE_TOOL_JS) == "hlo_stats"

    page.evaluate("history.back()")  # the host comes back
    frame.wait_for_function("() => document.querySelector('select.tbp-host-select').value === 'worker0'",
                            timeout=30_000)
    assert frame.evaluate(ACTIVE_TOOL_JS) == "hlo_stats"

    page.evaluate("history.back()")  # the tool comes back, still inside TensorBoard's tbprof tab
    _wait_tool(frame, "profile_summary")
    assert page.evaluate("location.hash").startswith("#tbprof")

    page.evaluate("history.forward()")
    _wait_tool(frame, "hlo_stats")
    tb_page.screenshot("in_tensorboard__after_forward")
    tb_page.check(inside_tensorboard=True)


def test_link_pasted_into_a_tab_on_tensorboard_changes_the_view(tensorboard: Any, tb_page: Any) -> None:
    run = run_named(tensorboard, "jax_2hosts/")
    other = run_named(tensorboard, "keras_cnn/")
    page = tb_page.page
    page.goto(tensorboard.base + "/" + _tb_hash(run, "profile_summary", host="worker0"))
    frame = _plugin_frame(page)
    _wait_tool(frame, "profile_summary")
    # What the address bar does with a link to the same page: only the hash changes.
    page.evaluate(f"location.hash = {_tb_hash(other, 'framework_op_stats')!r}")
    _wait_tool(frame, "framework_op_stats")
    assert frame.input_value("select.tbp-run-select") == other
    assert "keras_cnn" in frame.locator(".tbp-page-title").inner_text()
    tb_page.check(inside_tensorboard=True)
