// The page registry: which code draws which tool. A tool without a registered page gets the
// generic page (summary cards for top-level fields + every table), so a new backend tool is
// usable the day it lands and gets a dedicated page when one is written.
//
// Adding a page (see frontend/README.md):
//   // src/pages/kernel_stats/kernel_stats_page.ts
//   registerPage({ tools: ["kernel_stats"], render: (ctx) => { ... ctx.result ... } });
//   // src/pages/all.ts: add  import "./kernel_stats/kernel_stats_page";

import type { PageContext } from "./context";

export interface PageSpec {
  /** Tool names (as the backend registers them) this page draws. */
  tools: readonly string[];
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
  /** For everyRun pages (no backend tool to say so): the page accepts the all-hosts choice. */
  multiHost?: boolean;
  /** Rows per table in the first `data` response (default 100); the table pages the rest. */
  rows?: number;
  /** Tool options the page sets with its own controls (hidden from the shell's options bar). */
  hideOptions?: readonly string[];
  /** Options with a fixed set of values: the options bar shows a select for them. */
  optionChoices?: Readonly<Record<string, readonly string[]>>;
  /** Draws the page into ctx.el. Errors thrown here are shown in the page, not lost. */
  render: (ctx: PageContext) => void | Promise<void>;
}

const pages = new Map<string, PageSpec>();

export function registerPage(spec: PageSpec): void {
  for (const tool of spec.tools) pages.set(tool, spec);
}

/** The dedicated page of a tool, or undefined (the shell then uses the generic page). */
export function pageFor(tool: string): PageSpec | undefined {
  return pages.get(tool);
}

/** Pages the shell lists for every run (see PageSpec.everyRun). */
export function everyRunTools(): string[] {
  return [...pages.entries()].filter(([, spec]) => spec.everyRun === true).map(([tool]) => tool);
}

export function registeredTools(): string[] {
  return [...pages.keys()];
}
