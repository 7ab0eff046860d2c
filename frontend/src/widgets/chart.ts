// A chart: an ECharts instance in a sized box that follows the theme and its box's size.
// Pages build an ECharts option object; the helpers below give tooltips and axes units.

import type { EChartsCoreOption, ECharts, SetOptionOpts } from "echarts/core";
import { formatWithUnit } from "../base/format";
import { h } from "./dom";
import { isDark, watchTheme } from "./theme";

export type ChartOption = EChartsCoreOption;

type EChartsModule = typeof import("./echarts_setup");
let loading: Promise<EChartsModule> | null = null;
let loaded: EChartsModule | null = null;

/** Starts loading the chart chunk (call early: it downloads while data is fetched). */
export function preloadCharts(): Promise<EChartsModule> {
  loading ??= import("./echarts_setup").then((m) => {
    performance.mark("tbprof:charts-loaded");
    loaded = m;
    return m;
  });
  return loading;
}

type Handler = (params: unknown) => void;

export interface ChartOptions {
  height?: number;
  /** Accessible description (also the element's aria-label). */
  label: string;
  /** data-chart attribute, to find the chart in tests. */
  id?: string;
}

declare global {
  interface Window {
    /** Charts on the page by their id, so browser tests can read what was drawn (options, not pixels). */
    __tbprofCharts?: Map<string, Chart>;
  }
}

/**
 * Whether a box of this size is drawn. A box of zero width or height (hidden, taken out of the
 * page, not laid out yet) shows nothing, and ECharts' graph series throws there ("Cannot read
 * properties of null (reading '0')": its view's transform has no inverse at zero size); the
 * ResizeObserver draws the chart once its box has a size.
 */
export function drawable(widthPx: number, heightPx: number): boolean {
  return widthPx > 0 && heightPx > 0;
}

export class Chart {
  readonly el: HTMLDivElement;
  private instance: ECharts | null = null;
  private option: ChartOption | null = null;
  private readonly handlers: [string, Handler][] = [];
  private readonly observer: ResizeObserver;
  private readonly unwatch: () => void;
  private disposed = false;
  /** A rebuild was put off until the box has a size (drawable). */
  private rebuildDue = false;
  private readonly id: string | null;
  /** Resolves once the chart has drawn its first option (or, in a box without a size, put it off). */
  readonly ready: Promise<void>;

  constructor(parent: HTMLElement, opts: ChartOptions) {
    this.el = h("div", {
      class: "tbp-chart",
      role: "img",
      "aria-label": opts.label,
      "data-chart": opts.id ?? null,
      style: `height:${opts.height ?? 300}px`,
    });
    parent.appendChild(this.el);
    if (opts.id) (window.__tbprofCharts ??= new Map()).set(opts.id, this);
    this.id = opts.id ?? null;
    this.observer = new ResizeObserver(() => {
      if (!this.hasSize()) return;
      if (this.rebuildDue) this.rebuild();
      else this.instance?.resize();
    });
    this.observer.observe(this.el);
    this.unwatch = watchTheme(() => this.rebuild());
    this.ready = preloadCharts().then(() => {
      if (!this.disposed) this.rebuild();
    });
  }

  setOption(option: ChartOption, opts?: SetOptionOpts): void {
    this.option = { backgroundColor: "transparent", animation: false, ...option };
    if (this.instance) this.instance.setOption(this.option, { notMerge: true, ...opts });
  }

  on(event: string, handler: Handler): void {
    this.handlers.push([event, handler]);
    this.instance?.on(event, handler);
  }

  /** The option last set (tests read it through window.__tbprofCharts). */
  get currentOption(): ChartOption | null {
    return this.option;
  }

  /** The ECharts instance (null until the chart chunk has loaded). */
  get echarts(): ECharts | null {
    return this.instance;
  }

  dispose(): void {
    this.disposed = true;
    if (this.id !== null && window.__tbprofCharts?.get(this.id) === this) window.__tbprofCharts.delete(this.id);
    this.observer.disconnect();
    this.unwatch();
    this.instance?.dispose();
    this.instance = null;
  }

  private hasSize(): boolean {
    return drawable(this.el.clientWidth, this.el.clientHeight);
  }

  /** (Re)creates the instance: ECharts themes apply at init, so a theme change re-inits. */
  private rebuild(): void {
    if (this.disposed || loaded === null) return;
    this.rebuildDue = !this.hasSize();
    if (this.rebuildDue) return;
    this.instance?.dispose();
    const inst = loaded.echarts.init(this.el, isDark() ? "dark" : undefined, { renderer: "canvas" });
    this.instance = inst;
    for (const [ev, fn] of this.handlers) inst.on(ev, fn);
    // "Chart drawn" for bench/frontend_load_bench.py and the browser's performance panel.
    const drawn = (): void => {
      performance.mark("tbprof:chart-drawn");
      inst.off("rendered", drawn);
    };
    inst.on("rendered", drawn);
    if (this.option) inst.setOption(this.option, { notMerge: true });
  }
}

/** ECharts valueFormatter for a unit: times and bytes rescaled, "%" as a percentage. */
export function unitFormatter(unit: string): (value: unknown) => string {
  return (value: unknown) => {
    const v = Array.isArray(value) ? (value as unknown[])[0] : value;
    if (typeof v === "number") return formatWithUnit(v, unit);
    return typeof v === "string" ? v : "–";
  };
}

/** Axis label formatter: short values with the unit ("12 ms", "1.5 GiB", "40%"). */
export function axisLabel(unit: string): (value: number) => string {
  return (value: number) => formatWithUnit(value, unit);
}

/** A categorical palette that reads on light and dark backgrounds. */
export const PALETTE = [
  "#4e79a7",
  "#f28e2b",
  "#e15759",
  "#76b7b2",
  "#59a14f",
  "#edc948",
  "#b07aa1",
  "#ff9da7",
  "#9c755f",
  "#bab0ac",
];
