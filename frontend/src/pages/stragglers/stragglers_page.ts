// Stragglers (HTA): which rank the others wait for, HTA's metric kernel and its iteration
// window, each card saying what it measures. The metric kernel is a long CUDA name: it wraps
// inside its card instead of running over its neighbours.

import type { StragglersResult } from "../../data/schema.gen";
import { formatDuration } from "../../base/format";
import { type Card, cardRow } from "../../widgets/cards";
import { messageBox } from "../../widgets/message";
import { pageTitle, tableWidget } from "../common";
import type { PageContext } from "../context";
import type { PageSpec } from "../registry";

/** Why HTA's mean iteration is longer than every rank's mean step time. */
export const MEAN_ITERATION_NOTE = "HTA's window: from the first selected event's start to the last one's end over all ranks "
  + "on one clock, divided by the iterations. Ranks start and finish their steps at different times, so it is "
  + "longer than each rank's mean step time (Ranks table).";

function render(ctx: PageContext<StragglersResult>): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "Stragglers (HTA)"));
  const stragglers = raw.stragglers;
  const cards: Card[] = [
    { id: "stragglers", label: "Stragglers (HTA's metric)", value: stragglers.length ? stragglers.map((r) => `rank ${r}`).join(", ") : "none found",
      hint: "ranks whose metric kernel starts latest most often" },
    { id: "waited_for", label: "Waited for", value: raw.waited_for === null ? "–" : `rank ${raw.waited_for}`,
      hint: "least time waiting in collectives: the others wait for it" },
    { id: "metric_kernel", label: "Metric kernel", value: raw.metric_kernel ?? "–", text: true,
      hint: "the collective kernel whose duration differs most across ranks" },
    { id: "mean_iteration", label: "Mean iteration", value: raw.mean_iteration_us === null ? "–" : formatDuration(raw.mean_iteration_us, "us"),
      hint: MEAN_ITERATION_NOTE },
  ];
  el.appendChild(cardRow(cards, { oneRow: true }));
  if (raw.message) el.appendChild(messageBox({ title: "No straggler by HTA's metric", body: raw.message }));
  for (const name of Object.keys(result.tables)) el.appendChild(tableWidget(ctx, name).el);
}

export const stragglersPage: PageSpec<StragglersResult> = { render };
