// Roofline model: the device's roofs (peak FLOP rate, HBM bandwidth) on log-log axes with
// one point per HLO op and one for the whole program; hovering a point names the op. The
// backend sends the points of one "include infeed/outfeed" setting (a page option).

import type { RooflineModelResult } from "../../data/schema.gen";
import { html, tooltipHtml } from "../../base/html";
import { formatNumber, formatPercent } from "../../base/format";
import type { TableData } from "../../data/types";
import { cardRow } from "../../widgets/cards";
import { h } from "../../widgets/dom";
import { messageBox } from "../../widgets/message";
import { chart, pageTitle, panel, tableWidget } from "../common";
import type { PageContext } from "../context";
import type { PageSpec } from "../registry";
import { decadeBounds, decadeFormatter } from "./roofline_axes";

const GIB_PER_GB = 1e9 / 2 ** 30;

interface Point {
  name: string;
  category: string;
  intensity: number;
  flopRate: number;
  boundBy: string;
}

/** Roof points from x0 to x1 (FLOP/byte): min(peak, x × bandwidth), with the ridge in between. */
export function roofLine(peakGflops: number, peakHbmGbs: number, x0: number, x1: number): [number, number][] {
  if (peakGflops <= 0 || peakHbmGbs <= 0) return [];
  const ridge = peakGflops / peakHbmGbs;
  const xs = [x0, ridge, x1].filter((x) => x >= x0 && x <= x1).sort((a, b) => a - b);
  return xs.map((x) => [x, Math.min(peakGflops, x * peakHbmGbs)]);
}

function points(ctx: PageContext): Point[] {
  const t = ctx.result?.tables.roofline;
  if (!t) return [];
  const col = (n: string): number => t.columns.findIndex((c) => c.name === n);
  const op = col("operation");
  const cat = col("category");
  const oi = col("hbm_operational_intensity");
  const rate = col("measured_flop_rate");
  const bound = col("bound_by");
  const out: Point[] = [];
  for (const r of t.rows) {
    const x = Number(r[oi]);
    const y = Number(r[rate]);
    if (!(x > 0 && y > 0)) continue; // a log axis has no place for 0
    out.push({ name: String(r[op]), category: String(r[cat]), intensity: x, flopRate: y, boundBy: String(r[bound]) });
  }
  return out;
}

function render(ctx: PageContext<RooflineModelResult>): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "Roofline model"));
  const message = raw.message;
  if (message) el.appendChild(messageBox({ title: "No HLO ops", body: message }));
  const peak = raw.peak_flop_rate;
  const hbmGib = raw.peak_hbm_bw;
  const hbmGb = hbmGib / GIB_PER_GB;
  el.appendChild(
    cardRow([
      // The device as every page names it (device_name); XProf's architecture name as the hint.
      {
        id: "device",
        label: "Device",
        value: raw.device_name || raw.device_type || "–",
        hint: [raw.device_type, `${formatNumber(raw.device_count)} device(s)`].filter(Boolean).join(" · "),
      },
      { id: "peak_flop_rate", label: "Peak FLOP rate", value: `${formatNumber(peak)} GFLOP/s` },
      { id: "peak_hbm_bw", label: "Peak HBM bandwidth", value: `${formatNumber(hbmGib)} GiB/s` },
      { id: "ridge", label: "HBM ridge point", value: `${formatNumber(raw.hbm_ridge_point)} FLOP/byte` },
    ]),
  );
  const pts = points(ctx);
  const box = panel(el, "Roofline (log-log): HBM operational intensity vs. measured FLOP rate");
  const ridge = hbmGb > 0 ? peak / hbmGb : 0;
  // Whole decades around the points and the ridge (where the roof bends).
  const [x0, x1] = decadeBounds([...pts.map((p) => p.intensity), ridge]);
  const [y0, y1] = decadeBounds([...pts.map((p) => p.flopRate), peak]);
  const program = pts.filter((p) => p.category === "Program");
  const ops = pts.filter((p) => p.category !== "Program");
  const asData = (ps: Point[]): unknown[] => ps.map((p) => ({ value: [p.intensity, p.flopRate], name: p.name, bound: p.boundBy }));
  const dots = { type: "line", showSymbol: true, symbolSize: 9, lineStyle: { width: 0 }, emphasis: { scale: 1.6 } };
  chart(ctx, box, { label: "Roofline chart", id: "roofline", height: 420 }).setOption({
    tooltip: {
      trigger: "item",
      formatter: tooltipHtml((p: { data?: { name?: string; value?: number[]; bound?: string }; seriesName?: string }) => {
        const v = p.data?.value ?? [];
        if (!p.data?.name) return html`${p.seriesName ?? ""}<br>${formatNumber(v[0] ?? 0)} FLOP/byte, ${formatNumber(v[1] ?? 0)} GFLOP/s`;
        return html`${p.data.name}<br>${formatNumber(v[0] ?? 0)} FLOP/byte<br>${formatNumber(v[1] ?? 0)} GFLOP/s<br>bound by ${p.data.bound ?? ""}`;
      }),
    },
    legend: { top: 0 },
    grid: { left: 72, right: 24, top: 32, bottom: 48 },
    xAxis: { type: "log", name: "FLOP/byte (HBM)", nameLocation: "middle", nameGap: 28, min: x0, max: x1, axisLabel: { formatter: decadeFormatter(x0, x1) } },
    yAxis: { type: "log", name: "GFLOP/s", min: y0, max: y1, axisLabel: { formatter: decadeFormatter(y0, y1) } },
    series: [
      { type: "line", name: "Roof (HBM, peak)", showSymbol: false, data: roofLine(peak, hbmGb, x0, x1) },
      { ...dots, name: "HLO ops", data: asData(ops) },
      { ...dots, name: "Program", symbol: "diamond", symbolSize: 14, data: asData(program) },
    ],
  });
  const included = raw.include_infeed_outfeed ? "with" : "without";
  el.appendChild(h("p", { class: "tbp-muted", "data-program-note": "" }, programNote(raw.device_count)));
  const unknown = raw.undetermined_bytes;
  if (unknown.op_count > 0) {
    el.appendChild(messageBox({
      title: `Bytes not determined for ${formatNumber(unknown.op_count)} ${unknown.op_count === 1 ? "op" : "ops"} (${formatPercent(100 * unknown.time_fraction)} of the device time)`,
      body: h("div", { "data-undetermined-bytes": String(unknown.op_count) },
        h("p", {}, UNDETERMINED_NOTE),
        h("p", { class: "tbp-muted" }, unknown.ops.join(", ") + (unknown.op_count > unknown.ops.length ? `, and ${formatNumber(unknown.op_count - unknown.ops.length)} more` : ""))),
    }));
  }
  const table = result.tables.roofline;
  if (table) {
    const over = overPeakRows(table);
    if (over.length) {
      el.appendChild(messageBox({
        title: `${formatNumber(over.length)} ${over.length === 1 ? "op" : "ops"} above 100 % of peak`,
        body: h("div", { "data-over-peak": String(over.length) },
          h("p", {}, OVER_PEAK_NOTE),
          h("p", { class: "tbp-muted" }, over.slice(0, 8).join(", ") + (over.length > 8 ? `, and ${formatNumber(over.length - 8)} more` : ""))),
      }));
    }
    const flagged = new Set(OVER_PEAK_COLUMNS.map((c) => table.columns.findIndex((x) => x.name === c)).filter((i) => i >= 0));
    el.appendChild(tableWidget(ctx, "roofline", {
      title: `Points (program and ops, ${included} infeed/outfeed)`,
      decorateCell: (td, row, i) => {
        const v = row[i];
        if (!flagged.has(i) || typeof v !== "number" || v <= 1) return;
        td.classList.add("tbp-over-peak");
        td.title = OVER_PEAK_NOTE;
        td.appendChild(document.createTextNode(" ⚠"));
      },
    }).el);
  }
  el.appendChild(h("p", { class: "tbp-muted" }, "Points with no FLOPs or no HBM bytes have no place on log axes; the table lists them."));
}

/** What the Program point sums, as XProf 2.24.2 builds it (docs/formulas.md "Program point"). */
export function programNote(devices: number): string {
  const over = devices > 1 ? `all ${formatNumber(devices)} devices' ops over their device time summed` : "every op over the device time";
  return `Program: ${over} (from each device's first op to its last, idle included), `
    + "so its FLOP rate and bandwidth are per-device averages that idle time lowers; ops that only hold other ops "
    + "(while, call, conditional) add nothing, their inner ops being counted.";
}

export const UNDETERMINED_NOTE = "XLA's cost analysis gives these ops no bytes here (all-gather, reduce-scatter and "
  + "async collectives, whose GPU rules depend on replica groups, and custom-calls XLA does not model): the Program "
  + "point leaves their bytes out, so its HBM intensity reads higher and its bandwidth and roofline efficiency lower "
  + "than with them. XProf 2.24.2 may count bytes for them.";

/** Columns that are fractions of a peak: above 1 the measurement, not the op, is off. */
const OVER_PEAK_COLUMNS = ["roofline_efficiency", "compute_efficiency", "max_mem_bw_utilization"];

export const OVER_PEAK_NOTE = "Above 100 % of the device's peak: the op's measured time is shorter than its FLOPs or "
  + "bytes could take at peak. Async copies (copy-start / copy-done) move their bytes outside their own few-nanosecond "
  + "span, and ops shorter than the clock's resolution get too short a time. XProf's op profile caps these at 100 %; "
  + "here they keep their value, flagged ⚠, and are no measure of how well the op uses the device.";

/** Names of the rows with a fraction of a peak above 1. */
export function overPeakRows(t: TableData): string[] {
  const cols = OVER_PEAK_COLUMNS.map((c) => t.columns.findIndex((x) => x.name === c)).filter((i) => i >= 0);
  const name = t.columns.findIndex((x) => x.name === "operation");
  return t.rows.filter((r) => cols.some((i) => { const v = r[i]; return typeof v === "number" && v > 1; }))
    .map((r) => String(r[name] ?? ""));
}

export const rooflineModelPage: PageSpec<RooflineModelResult> = { render };
