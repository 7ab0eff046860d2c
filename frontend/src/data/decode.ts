// Decoders from untrusted JSON to the typed shapes of types.ts. A wrong shape is a bug on
// one side or a version mismatch: say where (path) and what was found, never guess.

import type {
  CellValue,
  ColumnKind,
  Progress,
  RunInfo,
  RunsResponse,
  Settings,
  TableColumn,
  TableData,
  ToolInfo,
  ToolResult,
} from "./types";
import type {
  CompareResult,
  ProgressResponse,
  RunJson,
  RunsResponse as RunsWire,
  SettingsResponse,
  TableColumnJson,
  TableJson,
  ToolEnvelope,
  ToolJson,
  ToolOptionJson,
  ToolsResponse,
  ToolId,
  ToolResults,
  ToolTitleJson,
} from "./schema.gen";

export class DecodeError extends Error {
  constructor(
    readonly path: string,
    readonly expected: string,
    found: unknown,
  ) {
    super(`unexpected response: ${path} should be ${expected}, found ${describe(found)}`);
    this.name = "DecodeError";
  }
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (typeof v === "string") return `"${v.length > 40 ? v.slice(0, 40) + "…" : v}"`;
  if (typeof v === "number" || typeof v === "boolean") return `${typeof v} ${String(v)}`;
  return typeof v === "object" ? "an object" : typeof v;
}

/** A JSON object read through the keys of its wire type (schema.gen.ts, generated from the
 * backend's TypedDicts): reading a key the backend does not send is a compile error, and the
 * values stay `unknown` until a decoder below checks them. */
type Wire<T extends object> = Partial<Record<keyof T & string, unknown>>;

function wire<T extends object>(v: unknown, path: string): Wire<T> {
  const o: Partial<Record<string, unknown>> = record(v, path);
  return o;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function record(v: unknown, path: string): Record<string, unknown> {
  if (!isRecord(v)) throw new DecodeError(path, "an object", v);
  return v;
}

export function array(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) throw new DecodeError(path, "an array", v);
  return v as unknown[];
}

export function string(v: unknown, path: string): string {
  if (typeof v !== "string") throw new DecodeError(path, "a string", v);
  return v;
}

export function number(v: unknown, path: string): number {
  if (typeof v !== "number") throw new DecodeError(path, "a number", v);
  return v;
}

export function boolean(v: unknown, path: string): boolean {
  if (typeof v !== "boolean") throw new DecodeError(path, "true or false", v);
  return v;
}

function optString(v: unknown, path: string, fallback = ""): string {
  return v === undefined || v === null ? fallback : string(v, path);
}

function strings(v: unknown, path: string): string[] {
  return array(v, path).map((x, i) => string(x, `${path}[${i}]`));
}

const KINDS: readonly ColumnKind[] = ["str", "int", "float", "bool"];

export function decodeColumn(v: unknown, path: string): TableColumn {
  const o = wire<TableColumnJson>(v, path);
  const kind = string(o.kind, `${path}.kind`);
  if (!(KINDS as readonly string[]).includes(kind)) throw new DecodeError(`${path}.kind`, KINDS.join("|"), kind);
  const name = string(o.name, `${path}.name`);
  return {
    name,
    label: optString(o.label, `${path}.label`, name),
    kind: kind as ColumnKind,
    unit: optString(o.unit, `${path}.unit`),
    description: optString(o.description, `${path}.description`),
  };
}

function decodeCell(v: unknown, kind: ColumnKind, path: string): CellValue {
  if (v === null) return null;
  switch (kind) {
    case "str":
      return string(v, path);
    case "bool":
      return boolean(v, path);
    default:
      return number(v, path);
  }
}

/** A table in the backend's JSON form ({columns, rows, total_rows, offset[, meta]}). */
export function decodeTable(v: unknown, path: string): TableData {
  const o = wire<TableJson>(v, path);
  const columns = array(o.columns, `${path}.columns`).map((c, i) => decodeColumn(c, `${path}.columns[${i}]`));
  const rows = array(o.rows, `${path}.rows`).map((r, i) => {
    const cells = array(r, `${path}.rows[${i}]`);
    if (cells.length !== columns.length) {
      throw new DecodeError(`${path}.rows[${i}]`, `${columns.length} cells`, cells);
    }
    return cells.map((c, j) => decodeCell(c, columns[j]?.kind ?? "str", `${path}.rows[${i}][${j}]`));
  });
  const totalRows = o.total_rows === undefined ? rows.length : number(o.total_rows, `${path}.total_rows`);
  const offset = o.offset === undefined ? 0 : number(o.offset, `${path}.offset`);
  const meta = o.meta === undefined ? {} : record(o.meta, `${path}.meta`);
  return { columns, rows, totalRows, offset, meta };
}

export function isTableJson(v: unknown): boolean {
  return isRecord(v) && Array.isArray(v.columns) && Array.isArray(v.rows);
}

export function decodeRun(v: unknown, path: string): RunInfo {
  const o = wire<RunJson>(v, path);
  return {
    name: string(o.run, `${path}.run`),
    kind: optString(o.kind, `${path}.kind`),
    hosts: strings(o.hosts, `${path}.hosts`),
    mtime: o.mtime === undefined || o.mtime === null ? 0 : number(o.mtime, `${path}.mtime`),
    tools: o.tools === undefined ? [] : strings(o.tools, `${path}.tools`),
    toolsExact: o.tools_exact === undefined ? true : boolean(o.tools_exact, `${path}.tools_exact`),
    multiHostTools: o.multi_host_tools === undefined ? [] : strings(o.multi_host_tools, `${path}.multi_host_tools`),
    error: o.error === undefined || o.error === null ? null : string(o.error, `${path}.error`),
  };
}

export function decodeRuns(v: unknown): RunsResponse {
  const o = wire<RunsWire>(v, "runs response");
  return {
    runs: array(o.runs, "runs").map((r, i) => decodeRun(r, `runs[${i}]`)),
    allHosts: optString(o.all_hosts, "all_hosts", "__all__"),
    total: o.total === undefined ? null : number(o.total, "total"),
  };
}

export function decodeTools(v: unknown): ToolInfo[] {
  const o = wire<ToolsResponse>(v, "tools response");
  return array(o.tools, "tools").map((t, i) => {
    const p = `tools[${i}]`;
    const to = wire<ToolJson>(t, p);
    const name = string(to.name, `${p}.name`);
    return {
      name,
      title: optString(to.title, `${p}.title`, name),
      multiHost: to.multi_host === undefined ? false : boolean(to.multi_host, `${p}.multi_host`),
      options: (to.options === undefined ? [] : array(to.options, `${p}.options`)).map((op, j) => {
        const oo = wire<ToolOptionJson>(op, `${p}.options[${j}]`);
        const n = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);
        return {
          name: string(oo.name, `${p}.options[${j}].name`),
          default: oo.default,
          help: optString(oo.help, `${p}.options[${j}].help`),
          // How to draw it (a select, a bounded number, "More options"); older servers send none.
          choices: Array.isArray(oo.choices) ? oo.choices.filter((c): c is string => typeof c === "string") : null,
          min: n(oo.min),
          max: n(oo.max),
          group: typeof oo.group === "string" && oo.group ? oo.group : null,
          advanced: typeof oo.advanced === "boolean" ? oo.advanced : null,
        };
      }),
    };
  });
}

export function decodeProgress(v: unknown): Progress {
  const o = wire<ProgressResponse>(v, "progress");
  return {
    hostsTotal: number(o.hosts_total, "progress.hosts_total"),
    hostsConverted: number(o.hosts_converted, "progress.hosts_converted"),
  };
}

export function decodeSettings(v: unknown): Settings {
  const o = wire<SettingsResponse>(v, "settings");
  return {
    version: optString(o.version, "settings.version"),
    captureEnabled: o.capture_enabled === undefined ? false : boolean(o.capture_enabled, "settings.capture_enabled"),
    allHosts: optString(o.all_hosts, "settings.all_hosts", "__all__"),
    tools: (o.tools === undefined ? [] : array(o.tools, "settings.tools")).map((t, i) => {
      const to = wire<ToolTitleJson>(t, `settings.tools[${i}]`);
      const name = string(to.name, `settings.tools[${i}].name`);
      return {
        name,
        title: optString(to.title, `settings.tools[${i}].title`, name),
        description: optString(to.description, `settings.tools[${i}].description`),
        requires: optString(to.requires, `settings.tools[${i}].requires`),
        howTo: (to.how_to === undefined ? [] : array(to.how_to, `settings.tools[${i}].how_to`))
          .map((t, j) => string(t, `settings.tools[${i}].how_to[${j}]`)),
        needs: (to.needs === undefined ? [] : array(to.needs, `settings.tools[${i}].needs`))
          .map((t, j) => string(t, `settings.tools[${i}].needs[${j}]`)),
      };
    }),
  };
}

/**
 * A tool's result as its tool's type, after checking that the answer is that tool's (its
 * envelope's `tool`). Its fields are the backend's TypedDict (decodeToolResult).
 */
export function typedResult<K extends ToolId>(tool: K, r: ToolResult): ToolResult<ToolResults[K]> {
  if (r.tool !== tool) throw new DecodeError("result.tool", `"${tool}"`, r.tool);
  return r as ToolResult<ToolResults[K]>;
}

/**
 * The compare route's answer as its type (CompareResult: no tool's result, it reads two runs),
 * after checking its envelope's `tool`. tests/analyses/test_compare_types.py and
 * tests/http/test_schemas.py check real comparisons against the same TypedDict.
 */
export function compareResult(r: ToolResult): ToolResult<CompareResult> {
  if (r.tool !== "compare") throw new DecodeError("result.tool", '"compare"', r.tool);
  return r as ToolResult<CompareResult>;
}

/**
 * A tool's JSON: `tables` entries become TableData; the answer is the tool's result type as it
 * came. Only the envelope is checked here: tests/analyses/test_result_types.py and
 * tests/http/test_schemas.py check every tool's real answers against the same types (the
 * TypedDicts schema.gen.ts is generated from), on every sample profile.
 */
export function decodeToolResult(v: unknown): ToolResult {
  const o = wire<ToolEnvelope>(v, "result");
  const tables: Record<string, TableData> = {};
  const rawTables = o.tables === undefined ? {} : record(o.tables, "result.tables");
  for (const [name, t] of Object.entries(rawTables)) {
    if (isTableJson(t)) tables[name] = decodeTable(t, `result.tables.${name}`);
  }
  return {
    schemaVersion: o.schema_version === undefined ? 0 : number(o.schema_version, "result.schema_version"),
    tool: optString(o.tool, "result.tool"),
    tables,
    raw: record(v, "result") as unknown as ToolEnvelope,
  };
}
