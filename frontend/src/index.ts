// Entry point. Inside TensorBoard the plugin frame (data/plugin_entry.html?name=tbprof)
// imports this module and calls render(); standalone, static/index.html does the same.

import { Api } from "./data/api";
import { Shell } from "./shell/shell";
import styles from "./styles.css?inline";
import { preloadCharts } from "./widgets/chart";
import { watchTheme } from "./widgets/theme";

/** The folder of index.js: /data/plugin/tbprof/ in both TensorBoard and `tbprof serve`. */
// (Through a variable: Vite rewrites a literal `new URL("…", import.meta.url)` as an asset.)
const moduleUrl = import.meta.url;
export const PLUGIN_BASE = new URL(".", moduleUrl);

export function render(root: HTMLElement = document.body): Shell {
  const style = document.createElement("style");
  style.textContent = styles;
  document.head.appendChild(style);
  if (!document.title) document.title = "tbprof";
  watchTheme();
  // The chart chunk downloads and parses while runs and the tool's data are requested, so the
  // first chart does not wait for the runs to arrive before its library starts loading
  // (bench/measurements.md#frontend, bench/frontend_load_bench.py).
  void preloadCharts().catch(() => undefined);
  const container = document.createElement("div");
  root.appendChild(container);
  const shell = new Shell(container, new Api(PLUGIN_BASE));
  void shell.start();
  return shell;
}
