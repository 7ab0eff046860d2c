// Typed shapes of the backend's JSON as the pages read it (docs/api.md). Decoders in decode.ts
// turn `unknown` into these or throw a DecodeError naming the path. The routes' answers are
// derived from their generated wire types (schema.gen.ts, from plugin/tbprof/http/schemas.py):
// the same fields camelCased, an optional field null when absent, so a field added, renamed or
// retyped on the backend changes these too and decode.ts fails tsc until it follows.

import type {
  ProgressResponse,
  RunJson,
  RunsResponse as RunsJson,
  SettingsResponse,
  TableColumnJson,
  ToolEnvelope,
  ToolJson,
  ToolOptionJson,
  ToolTitleJson,
} from "./schema.gen";

/** snake_case -> camelCase, as decode.ts names the wire's fields. */
type Camel<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<Camel<Tail>>}` : S;

/** A wire type's fields but `Dropped`, camelCased; optional ones are present and null when absent. */
export type Decoded<T, Dropped extends keyof T = never> = {
  -readonly [K in Exclude<keyof T, Dropped> as Camel<K & string>]-?: undefined extends T[K]
    ? Exclude<T[K], undefined> | null
    : T[K];
};

export type CellValue = string | number | boolean | null;
export type ColumnKind = TableColumnJson["kind"];

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

/**
 * A run (`runs` route): `mtime` is the Unix seconds of its newest file; `toolsExact` is false
 * when `tools` are the candidates of the run's kind (not converted yet). Its name is `name`.
 */
export type RunInfo = Decoded<RunJson, "run"> & { name: string };

/** `total`: runs in all (matching the search) when a page, a search or one run was asked for. */
export type RunsResponse = Decoded<RunsJson, "schema_version" | "runs"> & { runs: RunInfo[] };

/** A page of the run list: `limit` runs from `offset`, only those matching `q` (see api.ts). */
export interface RunsQuery {
  offset: number;
  limit: number;
  q: string;
  refresh: boolean;
}

/**
 * A tool option: `choices` (a select), `min`/`max` (a bounded number input), `group` (the
 * heading it is listed under), `advanced` (under a closed "More options"); null when not set.
 */
export type ToolOption = Decoded<ToolOptionJson>;

export type ToolInfo = Decoded<ToolJson, "options"> & { options: ToolOption[] };

/**
 * A tool as its backend descriptor says (plugin/tbprof/analyses/tool.py Tool), from `settings`:
 * `requires` (what a profile must contain for it to have data; "" when it does not say),
 * `howTo` (how to record a profile that has it), `needs` (run traits, plugin/tbprof/store/traits.py).
 */
export type ToolTitle = Decoded<ToolTitleJson>;

/** ``GET progress``: hosts of a run converted so far (a pod converting for an all-hosts page). */
export type Progress = Decoded<ProgressResponse, "schema_version" | "run">;

/** `tools`: every tool this backend has (with or without data for a given run). */
export type Settings = Decoded<SettingsResponse, "schema_version" | "tools"> & { tools: ToolTitle[] };

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
