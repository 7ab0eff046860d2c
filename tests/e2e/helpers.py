"""Reading the dashboard from a Playwright page or frame."""

from __future__ import annotations

import csv
import io
import json
import urllib.parse
from typing import Any

PAGE_TIMEOUT_MS = 60_000

# Every chart's canvases: how many sampled pixels are painted and in how many colours.
CHART_PIXELS_JS = """
() => [...document.querySelectorAll('[data-chart]')].map((chart) => {
  let painted = 0, sampled = 0; const colours = new Set();
  for (const canvas of chart.querySelectorAll('canvas')) {
    const ctx = canvas.getContext('2d');
    if (!ctx || canvas.width === 0 || canvas.height === 0) continue;
    const d = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 0; i < d.length; i += 4 * 5) {
      sampled++;
      if (d[i + 3] > 0) { painted++; colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]); }
    }
  }
  return {id: chart.dataset.chart, painted, sampled, colours: colours.size};
})
"""

ROWS_JS = """
(name) => {
  const table = document.querySelector(`[data-table="${name}"]`);
  return [...table.querySelectorAll('tbody tr')]
    .filter((tr) => !tr.querySelector('.tbp-empty'))
    .map((tr) => [...tr.querySelectorAll('td')].map((td) => JSON.parse(td.dataset.v)));
}
"""

# The page is the one the URL asks for: the shell writes the run, host, tool and options it drew
# into data-view (base/url_state.ts routedView) once the page is drawn. Right after a goto to
# another hash the previous page is still on screen, loaded, until the hashchange has run: a
# readiness check without this would pass on it.
PAGE_READY_JS = """
() => {
  const main = document.querySelector('main.tbp-page');
  if (!main || main.children.length === 0) return false;
  const routed = (text) => [...new URLSearchParams(text.replace(/^#/, ''))]
    .filter(([k, v]) => v !== '' && (k === 'run' || k === 'host' || k === 'tool' || k.startsWith('o.')))
    .map(([k, v]) => `${k}=${v}`).sort().join('&');
  if (main.dataset.view === undefined || routed(main.dataset.view) !== routed(location.hash)) return false;
  if (main.querySelector('.tbp-message-loading')) return false;
  return [...main.querySelectorAll('.tbp-table-widget')].every((t) => !t.classList.contains('tbp-loading'));
}
"""


def run_named(server: Any, prefix: str) -> str:
    for r in server.json("runs")["runs"]:
        if r["run"].startswith(prefix):
            return str(r["run"])
    raise AssertionError(f"no run starting with {prefix!r}")


def app_url(server: Any, **state: str) -> str:
    return server.base + "/#" + urllib.parse.urlencode(state, quote_via=urllib.parse.quote)


def wait_ready(target: Any) -> None:
    """Waits until the page shows its content (no loading message, no table loading)."""
    target.wait_for_function(PAGE_READY_JS, timeout=PAGE_TIMEOUT_MS)


# Two animation frames: what the page scheduled for the next frame (requestAnimationFrame: the
# tables' pinned columns) and what follows a layout change (ResizeObserver: a chart following its
# box) has run. Under load a frame can take longer than any fixed sleep.
NEXT_FRAMES_JS = "() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))"


def after_frames(target: Any) -> None:
    """Returns once the page has drawn two more frames."""
    target.evaluate(NEXT_FRAMES_JS)


def wait_charts_drawn(target: Any, min_charts: int = 1) -> list[dict[str, Any]]:
    drawn = (f"() => {{ const c = ({CHART_PIXELS_JS})(); "
             f"return c.length >= {min_charts} && c.every((x) => x.painted > 0); }}")
    target.wait_for_function(drawn, timeout=PAGE_TIMEOUT_MS)
    return list(target.evaluate(CHART_PIXELS_JS))


def shown_rows(target: Any, table: str) -> list[list[Any]]:
    return list(target.evaluate(ROWS_JS, table))


def column_names(target: Any, table: str) -> list[str]:
    return list(target.evaluate(
        "(n) => [...document.querySelectorAll(`[data-table=\"${n}\"] thead tr:first-child th`)]"
        ".map((th) => th.dataset.col)", table))


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def as_csv_cell(value: Any) -> str:
    """A JSON value as Python's csv module writes the Python value it came from."""
    if value is None:
        return ""
    return str(value)


def backend_rows(server: Any, run: str, tool: str, table: str, host: str | None = None,
                 **query: str) -> dict[str, Any]:
    params = {"run": run, "tool": tool, "table": table, **query}
    if host is not None:
        params["host"] = host
    return dict(server.json("table", **params))


def json_of(text: str) -> Any:
    return json.loads(text)


class PluginServer:
    """A real WSGI server of the tbprof app on a logdir (the plugin's routes, as inside
    TensorBoard), and a werkzeug client of the same app for the backend's own answers."""

    def __init__(self, logdir: Any, cache_dir: Any) -> None:
        import threading

        from werkzeug.serving import make_server
        from werkzeug.test import Client

        from tbprof.http.app import PLUGIN_PREFIX, create_app

        app = create_app(logdir, cache_dir=cache_dir, prefix=PLUGIN_PREFIX, capture_enabled=False)
        self._prefix = PLUGIN_PREFIX.rstrip("/")
        self._srv = make_server("127.0.0.1", 0, app, threaded=True)
        self._thread = threading.Thread(target=self._srv.serve_forever, daemon=True)
        self._thread.start()
        self._client = Client(app)
        self.base = f"http://127.0.0.1:{self._srv.server_port}/"

    def json(self, route: str, **params: str) -> Any:
        r = self._client.get(self._prefix + "/" + route, query_string=params)
        assert r.status_code == 200, r.get_data(as_text=True)[:300]
        return r.get_json()

    def close(self) -> None:
        self._srv.shutdown()
        self._thread.join(timeout=10)


def page_error_text(page: Any, error: Any) -> str:
    """An uncaught page error as a failing test reports it: the message, the URL the page was at
    when it was thrown (its hash names the page), and the browser's stack, so a failure seen
    once in CI says where it came from."""
    stack = getattr(error, "stack", None) or ""
    return f"uncaught: {error} at {page.url}" + (f"\n{stack}" if stack else "")


def page_failing_on_errors(browser: Any) -> Any:
    """A new page (in a context of its own) that records console errors and page errors in
    ``page.tbprof_errors``; the caller closes ``page.context`` and asserts the list is empty."""
    context = browser.new_context()
    pg = context.new_page()
    errors: list[str] = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(page_error_text(pg, e)))
    pg.tbprof_errors = errors
    return pg
