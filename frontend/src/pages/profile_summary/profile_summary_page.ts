// profile_summary: what the profile file holds — hosts, planes (devices, host threads),
// lines, event counts and time span — and any errors the profiler wrote into it.

import type { HostSummary as HostSummaryJson, ProfileSummaryResult } from "../../data/schema.gen";
import { html, tooltipHtml } from "../../base/html";
import { formatDurationPs, formatNumber } from "../../base/format";
import { cardRow } from "../../widgets/cards";
import { axisLabel, PALETTE, unitFormatter } from "../../widgets/chart";
import { h } from "../../widgets/dom";
import { jsonView } from "../../widgets/json_view";
import { messageBox } from "../../widgets/message";
import { chart, pageTitle, tableWidget } from "../common";
import type { PageContext } from "../context";
import type { PageSpec } from "../registry";

interface PlaneSummary {
  name: string;
  deviceType: string;
  deviceName: string;
  lineCount: number;
  eventCount: number;
  firstPs: number | null;
  lastPs: number | null;
}

interface HostSummary {
  host: string;
  format: string;
  sourcePath: string;
  hostnames: string[];
  errors: string[];
  warnings: string[];
  spanPs: number;
  eventCount: number;
  deviceTypes: string[];
  deviceCount: number;
  deviceNames: string[];
  planes: PlaneSummary[];
  raw: HostSummaryJson;
}

/** The backend's host summaries in the page's terms (camelCase, first/last event as one range). */
function decodeHosts(raw: ProfileSummaryResult): HostSummary[] {
  return raw.hosts.map((h) => ({
    host: h.host,
    format: h.format,
    sourcePath: h.source_path,
    hostnames: h.hostnames,
    errors: h.errors,
    warnings: h.warnings,
    spanPs: h.span_ps,
    eventCount: h.event_count,
    deviceTypes: h.device_types,
    deviceCount: h.device_count,
    deviceNames: h.device_names,
    planes: h.planes.map((p) => ({
      name: p.name,
      deviceType: p.device_type,
      deviceName: p.device_name,
      lineCount: p.line_count,
      eventCount: p.event_count,
      firstPs: p.first_event_ps,
      lastPs: p.last_event_end_ps,
    })),
    raw: h,
  }));
}

/**
 * The kind of device a plane is, or null for host planes: XSpace device planes are
 * "/device:GPU:0"; Chrome traces (PyTorch) name GPU processes "python3 (GPU 0)" and may send
 * no device type, so a PyTorch GPU run must not be read as "CPU only" for the lack of one.
 */
export function deviceKind(p: { name: string; deviceType: string }): string | null {
  const xspace = /^\/device:([A-Z]+)/.exec(p.name);
  if (xspace) return p.deviceType || (xspace[1] ?? "device");
  const chrome = /\b(GPU|TPU|XPU|MPS)\s*:?\s*\d+\)?\s*$/.exec(p.name);
  if (chrome) return p.deviceType || (chrome[1] ?? "device");
  return null;
}

export function devicesText(hosts: readonly { planes: readonly { name: string; deviceType: string; eventCount: number }[] }[]): string {
  const counts = new Map<string, number>();
  for (const h of hosts) {
    for (const p of h.planes) {
      const kind = deviceKind(p);
      if (kind !== null && p.eventCount > 0) counts.set(kind, (counts.get(kind) ?? 0) + 1);
    }
  }
  if (counts.size === 0) return "CPU only";
  return [...counts].map(([t, n]) => `${n} × ${t || "device"}`).join(", ");
}

function render(ctx: PageContext<ProfileSummaryResult>): void {
  const result = ctx.result;
  if (!result) return;
  const hosts = decodeHosts(result.raw);
  const multi = hosts.length > 1;
  const planeLabel = (h: HostSummary, p: PlaneSummary): string => (multi ? `${h.host} · ${p.name}` : p.name);
  const planes = hosts.flatMap((h) => h.planes.map((p) => ({ host: h, plane: p, label: planeLabel(h, p) })));
  const spanPs = Math.max(0, ...hosts.map((h) => h.spanPs));
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "Profile summary"));
  el.appendChild(
    cardRow([
      { label: "Hosts", value: formatNumber(hosts.length), hint: hosts.map((h) => h.host).join(", "), id: "hosts" },
      { label: "Events", value: formatNumber(result.raw.event_count), id: "events" },
      { label: "Time span", value: formatDurationPs(spanPs), hint: "first to last event", id: "span" },
      { label: "Devices", value: devicesText(hosts), id: "devices" },
      { label: "Planes", value: formatNumber(planes.length), hint: `${formatNumber(planes.reduce((a, p) => a + p.plane.lineCount, 0))} lines`, id: "planes" },
    ]),
  );

  for (const host of hosts) {
    if (host.errors.length) {
      el.appendChild(
        messageBox({
          kind: "error",
          title: `The profiler reported ${host.errors.length} error(s) on ${host.host}`,
          body: h("ul", {}, host.errors.map((e) => h("li", {}, e))),
        }),
      );
    }
    if (host.warnings.length) {
      el.appendChild(
        messageBox({
          title: `${host.warnings.length} warning(s) on ${host.host}`,
          body: h("ul", {}, host.warnings.map((w) => h("li", {}, w))),
        }),
      );
    }
  }

  // Events per plane: where the profile's volume is (a busy Python thread, GPU streams...).
  const withEvents = planes.filter((p) => p.plane.eventCount > 0).sort((a, b) => b.plane.eventCount - a.plane.eventCount);
  const top = withEvents.slice(0, 20).reverse();
  const charts = h("div", { class: "tbp-grid-2" });
  el.appendChild(charts);
  const countBox = h("div", { class: "tbp-panel" }, h("h2", {}, "Events per plane"));
  charts.appendChild(countBox);
  const countChart = chart(ctx, countBox, { label: "Events per plane", id: "events_per_plane", height: Math.max(180, 28 * top.length + 60) });
  countChart.setOption({
    color: PALETTE,
    grid: { left: 8, right: 24, top: 8, bottom: 24, containLabel: true },
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, valueFormatter: unitFormatter("events") },
    xAxis: { type: "value", axisLabel: { formatter: (v: number) => formatNumber(v) } },
    yAxis: { type: "category", data: top.map((p) => p.label), axisLabel: { width: 260, overflow: "truncate" } },
    series: [{ type: "bar", name: "Events", data: top.map((p) => p.plane.eventCount) }],
  });

  // When each plane was active: offset and length of [first event, last event end].
  const ranged = withEvents.filter((p) => p.plane.firstPs !== null && p.plane.lastPs !== null).slice(0, 20).reverse();
  const spanBox = h("div", { class: "tbp-panel" }, h("h2", {}, "Active range per plane"));
  charts.appendChild(spanBox);
  const spanChart = chart(ctx, spanBox, { label: "Active time range per plane", id: "plane_ranges", height: Math.max(180, 28 * ranged.length + 60) });
  const toMs = (ps: number): number => ps / 1e9;
  spanChart.setOption({
    color: PALETTE,
    grid: { left: 8, right: 24, top: 8, bottom: 24, containLabel: true },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      formatter: tooltipHtml((params: unknown) => {
        const list = Array.isArray(params) ? (params as { dataIndex: number }[]) : [];
        const p = ranged[list[0]?.dataIndex ?? -1];
        if (!p) return html``;
        const first = p.plane.firstPs ?? 0;
        const last = p.plane.lastPs ?? 0;
        return html`${p.label}<br>from ${formatDurationPs(first)} to ${formatDurationPs(last)}<br>length ${formatDurationPs(last - first)}`;
      }),
    },
    xAxis: { type: "value", axisLabel: { formatter: axisLabel("ms") } },
    yAxis: { type: "category", data: ranged.map((p) => p.label), axisLabel: { width: 260, overflow: "truncate" } },
    series: [
      { type: "bar", stack: "range", itemStyle: { color: "transparent" }, emphasis: { disabled: true }, data: ranged.map((p) => toMs(p.plane.firstPs ?? 0)) },
      { type: "bar", stack: "range", name: "Active", data: ranged.map((p) => toMs((p.plane.lastPs ?? 0) - (p.plane.firstPs ?? 0))) },
    ],
  });

  if (result.tables.lines) {
    el.appendChild(tableWidget(ctx, "lines", { title: "Lines (threads, streams) and their events" }).el);
  }

  const details = h("section", { class: "tbp-section" }, h("h2", {}, "Hosts"));
  for (const host of hosts) {
    details.appendChild(
      h(
        "div",
        { class: "tbp-kv" },
        h("h3", {}, host.host),
        kv("File", host.sourcePath),
        kv("Format", host.format),
        kv("Hostnames in the file", host.hostnames.join(", ") || "–"),
        kv("Device names", host.deviceNames.join(", ") || "–"),
        kv("Events", formatNumber(host.eventCount)),
        kv("Span", formatDurationPs(host.spanPs)),
        jsonView("planes", host.raw.planes),
      ),
    );
  }
  el.appendChild(details);
}

function kv(key: string, value: string): HTMLElement {
  return h("div", { class: "tbp-kv-row" }, h("span", { class: "tbp-kv-key" }, key), h("span", {}, value));
}

export const profileSummaryPage: PageSpec<ProfileSummaryResult> = { render };
