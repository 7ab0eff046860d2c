"""Initial load of the overview page in a real browser, timed by the browser itself.

    python bench/frontend_load_bench.py [--logdir demo_logs] [--tool overview_page] [--repeat 5]

Starts `tbprof serve` on the logdir (converted-profile cache in a temp dir), converts every
run once (a server does that on its first request; `bench/store_bench.py` times it), then
for each run opens `/#run=R&tool=TOOL` in a fresh browser context (empty HTTP cache) in
Debian's chromium and reads:
  - the Navigation Timing entry (DOMContentLoaded, load event),
  - the page's own marks: `tbprof:data-received` (the tool's JSON arrived) and
    `tbprof:page-rendered` (cards, tables and chart boxes are in the DOM),
  - "charts drawn": the last `tbprof:chart-drawn` mark (ECharts' first frame of each chart),
    after which every chart canvas is checked to have pixels,
  - Resource Timing: requests, bytes transferred, the slowest resource.
The first load of a run also includes the server computing the tool (memoised after), so
"first" and "repeat" loads are printed separately. Target (issue 5): overview under 1 s.
XProf is not compared here: its frontend fetches its chart library from the internet, which
this offline machine cannot reach.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("TBPROF_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]

MEASURE_JS = """
async () => {
  // Wait on the page's own marks (cheap), then check once that every canvas has pixels.
  const count = (n) => performance.getEntriesByName(n).length;
  const t0 = performance.now();
  const ready = () => count('tbprof:page-rendered') > 0
    && count('tbprof:chart-drawn') >= document.querySelectorAll('[data-chart]').length;
  while (!ready()) {
    if (performance.now() - t0 > 60000) throw new Error('page not drawn after 60 s');
    await new Promise((r) => setTimeout(r, 10));
  }
  const blank = [...document.querySelectorAll('[data-chart]')].filter((c) => ![...c.querySelectorAll('canvas')]
    .some((cv) => {
      const d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
      for (let i = 3; i < d.length; i += 4 * 97) if (d[i] > 0) return true;
      return false;
    }));
  if (blank.length) throw new Error(`blank charts: ${blank.map((c) => c.dataset.chart)}`);
  const nav = performance.getEntriesByType('navigation')[0];
  const mark = (n) => {
    const m = performance.getEntriesByName(n);
    return m.length ? m[m.length - 1].startTime : null;
  };
  const res = performance.getEntriesByType('resource');
  const slowest = res.reduce((a, r) => (!a || r.duration > a.duration ? r : a), null);
  return {
    dom_content_loaded_ms: nav.domContentLoadedEventEnd, load_ms: nav.loadEventEnd,
    data_received_ms: mark('tbprof:data-received'), page_rendered_ms: mark('tbprof:page-rendered'),
    charts_drawn_ms: Math.max(mark('tbprof:page-rendered'), mark('tbprof:chart-drawn') ?? 0),
    charts: document.querySelectorAll('[data-chart]').length,
    requests: res.length + 1,
    transferred_bytes: res.reduce((a, r) => a + (r.transferSize || 0), nav.transferSize || 0),
    slowest: slowest ? `${new URL(slowest.name).pathname.split('/').pop()} ${slowest.duration.toFixed(0)} ms` : '',
  };
}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=300) as r:
        return json.loads(r.read())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--logdir", default=str(REPO / "demo_logs"))
    ap.add_argument("--tool", default="overview_page")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    api = base + "/data/plugin/tbprof/"
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"), TBPROF_CACHE_DIR=cache)
        proc = subprocess.Popen([sys.executable, "-m", "tbprof.cli", "serve", "--logdir", args.logdir, "--host",
                                 "127.0.0.1", "--port", str(port), "--no-capture"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    get_json(api + "settings")
                    break
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise SystemExit("tbprof serve did not start") from None
                    time.sleep(0.2)
            runs = []
            for r in get_json(api + "runs")["runs"]:
                tools = [t["name"] for t in get_json(api + "tools?run=" + urllib.parse.quote(r["run"]))["tools"]]
                if args.tool in tools:
                    runs.append(r["run"])
            if not runs:
                raise SystemExit(f"no run in {args.logdir} has {args.tool}")
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                print(f"{args.tool} initial load in chromium (1280x800, fresh context = empty HTTP cache), "
                      f"tbprof serve on {args.logdir}")
                print(f"{'run':44} {'load':>6} {'DCL':>6} {'data':>6} {'render':>7} {'charts':>7} "
                      f"{'req':>4} {'KiB':>6}  slowest resource")
                all_repeat: list[float] = []
                for run in runs:
                    samples = []
                    for i in range(args.repeat + 1):
                        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
                        page = ctx.new_page()
                        page.goto(base + "/#" + urllib.parse.urlencode({"run": run, "tool": args.tool}))
                        m = page.evaluate(MEASURE_JS)
                        ctx.close()
                        samples.append(m)
                        label = "first (server computes)" if i == 0 else None
                        if label:
                            print(f"{run[:44]:44} {m['load_ms']:6.0f} {m['dom_content_loaded_ms']:6.0f} "
                                  f"{m['data_received_ms'] or 0:6.0f} {m['page_rendered_ms'] or 0:7.0f} "
                                  f"{m['charts_drawn_ms']:7.0f} {m['requests']:4d} "
                                  f"{m['transferred_bytes'] / 1024:6.0f}  {m['slowest']}  <- {label}")
                    rep = samples[1:]
                    med = {k: statistics.median(s[k] or 0 for s in rep)
                           for k in ("load_ms", "dom_content_loaded_ms", "data_received_ms", "page_rendered_ms",
                                     "charts_drawn_ms", "transferred_bytes")}
                    all_repeat.append(med["charts_drawn_ms"])
                    print(f"{'':44} {med['load_ms']:6.0f} {med['dom_content_loaded_ms']:6.0f} "
                          f"{med['data_received_ms']:6.0f} {med['page_rendered_ms']:7.0f} "
                          f"{med['charts_drawn_ms']:7.0f} {rep[0]['requests']:4d} "
                          f"{med['transferred_bytes'] / 1024:6.0f}  <- median of {len(rep)} repeat loads")
                browser.close()
            worst = max(all_repeat)
            print(f"\nslowest run, page drawn (all charts painted): {worst:.0f} ms "
                  f"= {worst / 1000:.2f} x the 1 s target")
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
