// Typed shapes of the backend's JSON (plugin/tbprof/http/core_routes.py, docs/api.md).
// Decoders in decode.ts turn `unknown` into these or throw a DecodeError naming the path.

import type { ToolEnvelope } from "./schema.gen";

export type CellValue = string | number | boolean | null;
export type ColumnKind = "str" | "int" | "float" | "bool";

export interface TableColumn {
  name: string;
  label: string;
  kind: ColumnKind;
  unit: string;
  description: string;
}

/** One table of a tool result (possibly one page of it). */
export interface TableData {
  columns: TableColumn[];
  rows: CellValue[][];
  /** Rows after filtering, before paging. */
  totalRows: number;
  offset: number;
  meta: Record<string, unknown>;
}

export interface RunInfo {
  name: string;
  kind: string;
  hosts: string[];
  /** Unix seconds of the newest file of the run. */
  mtime: number;
  tools: string[];
  /** False when `tools` are the candidates of the run's kind (not converted yet). */
  toolsExact: boolean;
  multiHostTools: string[];
  error: string | null;
}

export interface RunsResponse {
  runs: RunInfo[];
  allHosts: string;
  /** Runs in all (matching the search) when a page, a search or one run was asked for. */
  total: number | null;
}

/** A page of the run list: `limit` runs from `offset`, only those matching `q` (see api.ts). */
export interface RunsQuery {
  offset: number;
  limit: number;
  q: string;
  refresh: boolean;
}

export interface ToolOption {
  name: string;
  default: unknown;
  help: string;
  /** The allowed values (the options bar shows a select). */
  choices: string[] | null;
  /** Bounds of a number option (a number input with min/max). */
  min: number | null;
  max: number | null;
  /** A heading the option is listed under, e.g. "Thresholds". */
  group: string | null;
  /** Rarely changed: listed under "More options", closed. */
  advanced: boolean | null;
}

export interface ToolInfo {
  name: string;
  title: string;
  multiHost: boolean;
  options: ToolOption[];
}

/** A tool as its backend descriptor says (plugin/tbprof/analyses/tool.py Tool), from `settings`. */
export interface ToolTitle {
  name: string;
  title: string;
  description: string;
  /** What a profile must contain for the tool to have data ("" when the tool does not say). */
  requires: string;
  /** How to record a profile that has it. */
  howTo: string[];
  /** The run traits it needs (plugin/tbprof/store/traits.py). */
  needs: string[];
}

/** ``GET progress``: hosts of a run converted so far (a pod converting for an all-hosts page). */
export interface Progress {
  hostsTotal: number;
  hostsConverted: number;
}

export interface Settings {
  version: string;
  captureEnabled: boolean;
  allHosts: string;
  /** Every tool this backend has (with or without data for a given run). */
  tools: ToolTitle[];
}

/**
 * A tool's JSON: its tables decoded (every page renders them the same way) and the whole answer
 * as its tool's result type `R` (schema.gen.ts ToolResults, generated from the backend's
 * TypedDicts): a page reads `raw.<field>` directly, so a field renamed on either side fails tsc.
 */
export interface ToolResult<R extends ToolEnvelope = ToolEnvelope> {
  schemaVersion: number;
  tool: string;
  tables: Record<string, TableData>;
  /** The whole JSON as the backend sent it (its `tables` as TableJson; read `tables` above). */
  raw: R;
}

/** Which rows of a table to ask for. */
export interface TableQuery {
  sort: string | null;
  desc: boolean | null;
  /** column name -> regex (text columns) or comparison like ">=10" (numeric columns) */
  filters: Record<string, string>;
  offset: number;
  limit: number | null;
}

/** What a page shows: run, host (a host name or the all-hosts token), tool and options. */
export interface DataRequest {
  run: string;
  host: string | null;
  tool: string;
  options: Record<string, string>;
}
