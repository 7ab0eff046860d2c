// What a page gets from the shell.

import type { Api } from "../data/api";
import type { ToolEnvelope } from "../data/schema.gen";
import type { DataRequest, RunInfo, ToolInfo, ToolResult } from "../data/types";

/** `R`: the result type of the page's tool (schema.gen.ts ToolResults; src/plugins.ts checks it). */
export interface PageContext<R extends ToolEnvelope = ToolEnvelope> {
  /** The page's container, empty when render() starts. */
  readonly el: HTMLElement;
  readonly api: Api;
  /** run, host (a host name, or ctx.allHosts for all hosts) and tool options of this view. */
  readonly request: DataRequest;
  readonly run: RunInfo;
  /** The backend's description of the tool (title, options), when it lists it. */
  readonly tool: ToolInfo | null;
  /** The tool's JSON (tables capped at PageSpec.rows rows); null for ownData pages. */
  readonly result: ToolResult<R> | null;
  /** Aborted when the user leaves the page: pass it to requests. */
  readonly signal: AbortSignal;
  /** The host value that means "all hosts" ("__all__"). */
  readonly allHosts: string;
  /** Page state from the URL ("c.<key>"): chart options, selected allocator, step, ... */
  param(key: string): string | null;
  /** Writes page state to the URL without re-rendering (the page updates itself). */
  setParams(updates: Readonly<Record<string, string | null>>): void;
  /** Changes tool options ("o.<name>" in the URL): the shell refetches and re-renders. */
  setOptions(updates: Readonly<Record<string, string | null>>): void;
  /** A table's view state from the URL ("t.<table>.*", prefix removed). */
  tableParams(table: string): ReadonlyMap<string, string>;
  setTableParams(updates: Readonly<Record<string, string | null>>): void;
  /** Opens another tool of the same run and host (optionally with page state "c.*"). */
  navigate(tool: string, params?: Readonly<Record<string, string>>): void;
  /** A tool's title as the tool list shows it ("HLO op stats"), for links that name a page. */
  toolTitle(tool: string): string;
  /** A real href for a link to another tool (middle-click/new tab keep working). */
  href(tool: string, params?: Readonly<Record<string, string>>): string;
  /** Runs when the page is left (dispose charts, timers, observers). */
  onDispose(fn: () => void): void;
}
