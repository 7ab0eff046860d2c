// The only code that talks to the backend (docs/architecture.md): every URL is relative to the folder
// index.js was loaded from (/data/plugin/tbprof/ inside TensorBoard and standalone), so no
// request can leave the plugin's routes.

import { type ErrorKind, errorKind } from "./error_kind";
import { decodeProgress, decodeRuns, decodeSettings, decodeTable, decodeToolResult, decodeTools, isRecord } from "./decode";
import type {
  DataRequest,
  Progress,
  RunInfo,
  RunsQuery,
  RunsResponse,
  Settings,
  TableData,
  TableQuery,
  ToolInfo,
  ToolResult,
} from "./types";

/**
 * A failed request: HTTP status (0 when the server could not be reached), its message, and
 * its machine-readable kind (the JSON body's `kind`; see error_kind.ts).
 */
export class ApiError extends Error {
  readonly kind: ErrorKind;

  constructor(
    message: string,
    readonly status: number,
    readonly route: string,
    readonly detail: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "ApiError";
    this.kind = errorKind(status, detail);
  }
}

export type Params = ReadonlyArray<readonly [string, string]>;

/** Runs asked for at a time (a picker's worth, a few tens of KB), whatever the logdir holds. */
export const RUN_PAGE = 200;

function requestParams(req: DataRequest): [string, string][] {
  const out: [string, string][] = [
    ["run", req.run],
    ["tool", req.tool],
  ];
  if (req.host !== null && req.host !== "") out.push(["host", req.host]);
  for (const k of Object.keys(req.options).sort()) {
    const v = req.options[k];
    if (v !== undefined && v !== "") out.push([k, v]);
  }
  return out;
}

/** A table query as URL parameters (sort, desc, offset, limit, filter.<col>). */
export function tableQueryParams(q: TableQuery, paging = true): [string, string][] {
  const out: [string, string][] = [];
  if (q.sort !== null) out.push(["sort", q.sort]);
  if (q.desc !== null) out.push(["desc", q.desc ? "1" : "0"]);
  for (const col of Object.keys(q.filters).sort()) {
    const expr = q.filters[col];
    if (expr !== undefined && expr !== "") out.push([`filter.${col}`, expr]);
  }
  if (paging) {
    if (q.offset > 0) out.push(["offset", String(q.offset)]);
    if (q.limit !== null) out.push(["limit", String(q.limit)]);
  }
  return out;
}

export class Api {
  /** @param base the folder of the plugin's routes, e.g. http://host/data/plugin/tbprof/ */
  constructor(readonly base: URL) {}

  url(route: string, params: Params = []): URL {
    const u = new URL(route, this.base);
    for (const [k, v] of params) u.searchParams.append(k, v);
    return u;
  }

  private async fetchOk(route: string, params: Params, signal?: AbortSignal): Promise<Response> {
    const url = this.url(route, params);
    let resp: Response;
    try {
      resp = await fetch(url, { signal, credentials: "same-origin", headers: { Accept: "application/json" } });
    } catch (e) {
      if (e instanceof DOMException && e.name === "AbortError") throw e;
      throw new ApiError(`could not reach the tbprof server (${String(e)})`, 0, route);
    }
    if (!resp.ok) throw await this.errorOf(resp, route);
    return resp;
  }

  private async errorOf(resp: Response, route: string): Promise<ApiError> {
    const text = await resp.text().catch(() => "");
    try {
      const body: unknown = JSON.parse(text);
      if (isRecord(body) && typeof body.error === "string") {
        return new ApiError(body.error, resp.status, route, body);
      }
    } catch {
      // not JSON: e.g. an HTML error page of a proxy in front of TensorBoard
    }
    const snippet = text.replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim().slice(0, 200);
    return new ApiError(snippet || `${resp.status} ${resp.statusText}`, resp.status, route);
  }

  async getJson(route: string, params: Params = [], signal?: AbortSignal): Promise<unknown> {
    const resp = await this.fetchOk(route, params, signal);
    try {
      return (await resp.json()) as unknown;
    } catch (e) {
      throw new ApiError(`${route}: the response is not valid JSON (${String(e)})`, resp.status, route);
    }
  }

  /** Binary responses (e.g. the trace viewer's event buffers). */
  async getArrayBuffer(route: string, params: Params = [], signal?: AbortSignal): Promise<ArrayBuffer> {
    const resp = await this.fetchOk(route, params, signal);
    return resp.arrayBuffer();
  }

  async postJson(route: string, body: unknown, signal?: AbortSignal): Promise<unknown> {
    const url = this.url(route);
    let resp: Response;
    try {
      resp = await fetch(url, {
        method: "POST",
        signal,
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify(body),
      });
    } catch (e) {
      if (e instanceof DOMException && e.name === "AbortError") throw e;
      throw new ApiError(`could not reach the tbprof server (${String(e)})`, 0, route);
    }
    if (!resp.ok) throw await this.errorOf(resp, route);
    return (await resp.json()) as unknown;
  }

  /**
   * A page of the run list, newest first: never the whole list, which is megabytes for a
   * logdir of 20,000 runs. `q` keeps runs whose name holds every term (the backend searches
   * all runs, not only those loaded); `refresh` rescans the logdir (rate-limited there).
   */
  async runs(query: RunsQuery, signal?: AbortSignal): Promise<RunsResponse> {
    const params: [string, string][] = [
      ["offset", String(query.offset)],
      ["limit", String(query.limit)],
    ];
    if (query.q.trim() !== "") params.push(["q", query.q.trim()]);
    if (query.refresh) params.push(["refresh", "1"]);
    return decodeRuns(await this.getJson("runs", params, signal));
  }

  /** One run by name, whether or not it is on a loaded page (a deep link); null when the logdir has none. */
  async run(name: string, signal?: AbortSignal): Promise<RunInfo | null> {
    try {
      return decodeRuns(await this.getJson("runs", [["run", name]], signal)).runs[0] ?? null;
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return null;
      throw e;
    }
  }

  async tools(run: string, signal?: AbortSignal): Promise<ToolInfo[]> {
    return decodeTools(await this.getJson("tools", [["run", run]], signal));
  }

  /** Hosts of a run converted so far: polled while an all-hosts page waits for a pod. */
  async progress(run: string, signal?: AbortSignal): Promise<Progress> {
    return decodeProgress(await this.getJson("progress", [["run", run]], signal));
  }

  async settings(signal?: AbortSignal): Promise<Settings> {
    return decodeSettings(await this.getJson("settings", [], signal));
  }

  /**
   * A tool's result. `rows` caps every table at its first rows in default order (the table
   * widget pages through the rest with `table`), so a 100 k-row op table costs nothing here.
   */
  async data(req: DataRequest, rows: number | null, signal?: AbortSignal): Promise<ToolResult> {
    const params = requestParams(req);
    if (rows !== null) params.push(["rows", String(rows)]);
    return decodeToolResult(await this.getJson("data", params, signal));
  }

  /** One table of a tool result, sorted, filtered and paged by the backend. */
  async table(req: DataRequest, table: string, q: TableQuery, signal?: AbortSignal): Promise<TableData> {
    const params = [...requestParams(req), ["table", table] as [string, string], ...tableQueryParams(q)];
    const body = await this.getJson("table", params, signal);
    return decodeTable(body, `table ${table}`);
  }

  /** The backend's CSV of a whole table (filter and sort applied, no paging). */
  csvUrl(req: DataRequest, table: string, q: TableQuery): string {
    return this.url("csv", [...requestParams(req), ["table", table], ...tableQueryParams(q, false)]).href;
  }
}
