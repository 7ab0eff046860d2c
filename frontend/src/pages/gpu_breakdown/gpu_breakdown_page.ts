// The GPU breakdown page (HTA's report): the headline metrics as cards, each table as a full
// table widget (sortable, filterable, CSV), titled as in the overview's section.

import { pageTitle, tableWidget } from "../common";
import type { PageContext } from "../context";
import { registerPage } from "../registry";
import { GPU_BREAKDOWN_TOOL, gpuBreakdownCards, SECTION_TABLES } from "./gpu_breakdown_section";

function render(ctx: PageContext): void {
  const result = ctx.result;
  if (!result) return;
  ctx.el.appendChild(pageTitle(ctx, "GPU breakdown (HTA)"));
  ctx.el.appendChild(gpuBreakdownCards(result));
  const titled = new Map<string, string>(SECTION_TABLES.map(([n, t]) => [n, t]));
  const names = [...SECTION_TABLES.map(([n]) => n), ...Object.keys(result.tables).filter((n) => !titled.has(n))];
  for (const name of names) {
    if (!result.tables[name]) continue;
    const title = titled.get(name);
    ctx.el.appendChild(tableWidget(ctx, name, title !== undefined ? { title } : {}).el);
  }
}

registerPage({ tools: [GPU_BREAKDOWN_TOOL], render });
