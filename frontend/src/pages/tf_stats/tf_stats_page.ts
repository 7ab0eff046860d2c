// Framework op stats (XProf's "TensorFlow stats"): the four pies — host and device time by
// operation and by op type — and the op table; the "include idle" option is in the shell's
// options bar.

import type { FrameworkOpStatsResult } from "../../data/schema.gen";
import { formatDuration, formatNumber } from "../../base/format";
import { type Card, cardRow } from "../../widgets/cards";
import { h } from "../../widgets/dom";
import { messageBox } from "../../widgets/message";
import { pageTitle, panel, pieChart, tableWidget } from "../common";
import type { PageContext } from "../context";
import { metricCard, metricsOf } from "../metrics";
import type { PageSpec } from "../registry";

function render(ctx: PageContext<FrameworkOpStatsResult>): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "Framework op stats"));
  const sides = raw.sides;
  const names = (["host", "device"] as const).filter((s) => sides[s] !== undefined);
  if (names.length === 0) el.appendChild(messageBox({ title: "No ops", body: "No framework ops were found on the host or devices." }));
  const includeIdle = raw.include_idle;
  const metrics = metricsOf(raw);
  el.appendChild(
    cardRow(
      names.flatMap((side) => {
        const s = sides[side];
        if (!s) return [];
        const idle = metrics.get(side === "host" ? "host_idle_of_thread_time" : "device_idle_of_device_time");
        const cards: Card[] = [
          { id: `${side}_ops`, label: `${side === "host" ? "Host" : "Device"} ops`, value: formatNumber(s.op_count), hint: `${formatDuration(s.op_time_us, "us")} in ops` },
        ];
        if (idle) {
          const card = metricCard(idle, { id: `${side}_idle` });
          cards.push({ ...card, hint: `${card.hint ?? ""} (${formatDuration(s.total_time_us, "us")})` });
        }
        return cards;
      }),
    ),
  );
  el.appendChild(h("p", { class: "tbp-muted" }, includeIdle ? "Idle time is included as an IDLE row (uncheck “include idle” above to leave it out)." : "Idle time is left out."));
  const grid = h("div", { class: "tbp-grid-4" });
  el.appendChild(grid);
  for (const side of names) {
    const s = sides[side];
    if (!s) continue;
    const sideLabel = side === "host" ? "Host" : "Device";
    for (const [key, what] of [["pie_by_type", "op type"], ["pie_by_operation", "operation"]] as const) {
      const box = panel(grid, `${sideLabel} self-time by ${what}`);
      const slices = s[key].map((o) => ({ name: o.name, value: o.self_time_us }));
      pieChart(ctx, box, { label: `${sideLabel} self-time by ${what}`, id: `${side}_${key}`, height: 300 }, slices, "us",
        { measure: `${side} self-time`, kind: what });
    }
  }
  if (result.tables.ops) el.appendChild(tableWidget(ctx, "ops", { title: "Operations" }).el);
}

export const tfStatsPage: PageSpec<FrameworkOpStatsResult> = { render };
