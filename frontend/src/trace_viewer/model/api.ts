// The trace viewer's requests (routes trace, trace_search, trace_event, trace_range of
// docs/api.md) through the shared API client, with decoders for their JSON.

import type { Api, Params } from "../../data/api";
import { decodeFrame, type Frame } from "./frame";
import type { WindowRequest } from "./fetch_policy";

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const num = (v: unknown): number => (typeof v === "number" ? v : 0);
const str = (v: unknown): string => (typeof v === "string" ? v : "");

export interface LinkedEvent {
  plane: number;
  row: number;
  track: number;
  name: string;
  startPs: number;
  durPs: number;
  depth: number;
}

export interface SearchPage {
  query: string;
  total: number;
  offset: number;
  matches: LinkedEvent[];
  /** The first match on a device plane (a kernel, not its CPU launch), null when none. */
  firstDeviceOffset: number | null;
}

export interface StatEntry {
  name: string;
  value: unknown;
  source: string;
}

export interface EventDetails {
  event: LinkedEvent & { planeName: string; lineName: string; displayName: string | null; endPs: number };
  stats: StatEntry[];
  decoded: Json;
  /** relation -> events ("launched_by", "launches", "flow_from", "flow_to", "step", "parent", ...). */
  links: Map<string, LinkedEvent[]>;
  totals: Map<string, number>;
  stepEvents: { track: number; name: string; count: number }[];
  stepWindow: { startPs: number; endPs: number } | null;
}

export interface RangeSummary {
  startPs: number;
  endPs: number;
  eventCount: number;
  nameCount: number;
  /** A multi-rank run's ranks with selected tracks (timeline order); empty for one host. */
  ranks: string[];
  names: RangeName[];
}

/** totalPs: summed over every selected track (can exceed the range); coveredPs: the part of the
 * range during which the name ran anywhere (at most the range); byRank aligned with `ranks`. */
export interface RangeName {
  name: string;
  count: number;
  totalPs: number;
  coveredPs: number;
  byRank: { totalPs: number; coveredPs: number }[];
}

export interface Target {
  run: string;
  host: string | null;
}

function base(t: Target): [string, string][] {
  const p: [string, string][] = [["run", t.run]];
  if (t.host) p.push(["host", t.host]);
  return p;
}

export function decodeLinked(v: unknown): LinkedEvent {
  const o = isObj(v) ? v : {};
  return {
    plane: num(o.plane), row: num(o.row), track: num(o.track), name: str(o.name),
    startPs: num(o.start_ps), durPs: num(o.dur_ps), depth: num(o.depth),
  };
}

export async function fetchWindow(api: Api, t: Target, req: WindowRequest, signal?: AbortSignal): Promise<Frame> {
  const params: [string, string][] = [...base(t), ["width_px", String(req.widthPx)]];
  if (req.startPs !== null && req.endPs !== null) {
    params.push(["start_ps", String(Math.round(req.startPs))], ["end_ps", String(Math.round(req.endPs))]);
  }
  return decodeFrame(await api.getArrayBuffer("trace", params, signal));
}

export async function fetchSearch(api: Api, t: Target, query: string, offset: number, limit: number,
  signal?: AbortSignal, fromPs?: number): Promise<SearchPage> {
  const params: [string, string][] = [...base(t), ["q", query], ["offset", String(offset)], ["limit", String(limit)]];
  if (fromPs !== undefined) params.push(["from_ps", String(Math.round(fromPs))]);
  const body = await api.getJson("trace_search", params, signal);
  const o = isObj(body) ? body : {};
  return {
    query: str(o.query),
    total: num(o.total),
    offset: num(o.offset),
    matches: (Array.isArray(o.matches) ? o.matches : []).map(decodeLinked),
    firstDeviceOffset: typeof o.first_device_offset === "number" ? o.first_device_offset : null,
  };
}

/** An event by (plane, row), or a derived line's event by (track, index) when `plane` is null. */
export async function fetchEvent(api: Api, t: Target, plane: number | null, row: number,
  signal?: AbortSignal, track?: number): Promise<EventDetails> {
  const id: [string, string][] = plane === null
    ? [["track", String(track ?? 0)], ["index", String(row)]]
    : [["plane", String(plane)], ["row", String(row)]];
  const body = await api.getJson("trace_event", [...base(t), ...id], signal);
  const o = isObj(body) ? body : {};
  const ev = isObj(o.event) ? o.event : {};
  const linksRaw = isObj(o.links) ? o.links : {};
  const links = new Map<string, LinkedEvent[]>();
  const totals = new Map<string, number>();
  let stepEvents: EventDetails["stepEvents"] = [];
  let stepWindow: EventDetails["stepWindow"] = null;
  for (const [k, v] of Object.entries(linksRaw)) {
    if (k === "step_events" && Array.isArray(v)) {
      stepEvents = v.filter(isObj).map((e) => ({ track: num(e.track), name: str(e.name), count: num(e.count) }));
    } else if (k === "step_window" && isObj(v)) {
      stepWindow = { startPs: num(v.start_ps), endPs: num(v.end_ps) };
    } else if (k.endsWith("_total")) {
      totals.set(k.slice(0, -"_total".length), num(v));
    } else if (Array.isArray(v)) {
      links.set(k, v.map(decodeLinked));
    }
  }
  return {
    event: {
      ...decodeLinked(ev),
      planeName: str(ev.plane_name),
      lineName: str(ev.line_name),
      displayName: typeof ev.display_name === "string" ? ev.display_name : null,
      endPs: num(ev.end_ps),
    },
    stats: (Array.isArray(o.stats) ? o.stats : []).filter(isObj).map((s) => ({
      name: str(s.name), value: s.value, source: str(s.source),
    })),
    decoded: isObj(o.decoded) ? o.decoded : {},
    links,
    totals,
    stepEvents,
    stepWindow,
  };
}

export async function fetchRange(api: Api, t: Target, startPs: number, endPs: number, tracks: number[] | null,
  signal?: AbortSignal): Promise<RangeSummary> {
  const params: Params = [
    ...base(t), ["start_ps", String(Math.round(startPs))], ["end_ps", String(Math.round(endPs))], ["limit", "200"],
    ...(tracks ? [["tracks", tracks.join(",")] as [string, string]] : []),
  ];
  const body = await api.getJson("trace_range", params, signal);
  const o = isObj(body) ? body : {};
  return {
    startPs: num(o.start_ps), endPs: num(o.end_ps), eventCount: num(o.event_count), nameCount: num(o.name_count),
    ranks: (Array.isArray(o.ranks) ? o.ranks : []).map(str),
    names: (Array.isArray(o.names) ? o.names : []).filter(isObj).map((n) => ({
      name: str(n.name), count: num(n.count), totalPs: num(n.total_ps), coveredPs: num(n.covered_ps),
      byRank: (Array.isArray(n.by_rank) ? n.by_rank : []).filter(isObj).map((r) => ({
        totalPs: num(r.total_ps), coveredPs: num(r.covered_ps),
      })),
    })),
  };
}
