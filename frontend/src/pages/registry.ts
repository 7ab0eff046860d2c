// What a page is. The pages themselves are listed in src/plugins.ts (PAGES: tool id -> page),
// typed by their tool's result: a page listed under the wrong tool, or reading a field its
// tool does not send, fails tsc. A tool without a page gets the generic page (summary cards for
// top-level fields + every table), so a new backend tool is usable the day it lands.
//
// Adding a page (see frontend/README.md):
//   // src/pages/kernel_stats/kernel_stats_page.ts
//   export const kernelStatsPage: PageSpec<KernelStatsResult> = { render: (ctx) => { ... ctx.result.raw ... } };
//   // src/plugins.ts: add  kernel_stats: kernelStatsPage,  to PAGES

import type { ToolEnvelope } from "../data/schema.gen";
import type { PageContext } from "./context";

export interface PageSpec<R extends ToolEnvelope = ToolEnvelope> {
  /**
   * false (default): the shell fetches the tool's `data` first and passes it as ctx.result.
   * true: ctx.result is null and the page fetches what it needs itself through ctx.api
   * (e.g. the trace viewer, which asks for windows of events).
   */
  ownData?: boolean;
  /**
   * true: the page reads no tool result of its run (it asks its own routes, like compare, which
   * puts two runs side by side), so the shell lists it for every run. Implies ownData.
   */
  everyRun?: boolean;
  /** For everyRun pages (no backend tool to name it): its title in the tool list. */
  title?: string;
  /** For everyRun pages (no backend tool to say so): the page accepts the all-hosts choice. */
  multiHost?: boolean;
  /** Rows per table in the first `data` response (default 100); the table pages the rest. */
  rows?: number;
  /** Tool options the page sets with its own controls (hidden from the shell's options bar). */
  hideOptions?: readonly string[];
  /** Options with a fixed set of values: the options bar shows a select for them. */
  optionChoices?: Readonly<Record<string, readonly string[]>>;
  /**
   * Draws the page into ctx.el. Errors thrown here are shown in the page, not lost. (A method,
   * so that the shell, which holds the JSON of whichever tool the URL names, can call any page
   * of the list: the list in src/plugins.ts is where each page meets its tool's type.)
   */
  render(ctx: PageContext<R>): void | Promise<void>;
}
