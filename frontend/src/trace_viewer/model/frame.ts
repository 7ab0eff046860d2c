// One answer of the `trace` route: a window of every track at one resolution, decoded from
// the binary frame (docs/api.md "trace") into typed arrays without copying a single number.
//
//   "TBTR" | uint32 LE header length H | header JSON (padded to 8) | 8-byte aligned columns
//
// Times are float64 picoseconds from the profile start (exact to 2^53 ps, 2.5 hours).

export interface GroupMeta {
  id: number;
  name: string;
  kind: string; // "device" | "host" | "process"
  plane: number;
  tracks: number[];
}

export interface TrackMeta {
  id: number;
  group: number;
  name: string;
  kind: "slices" | "counter";
  plane: number;
  line: number;
  eventCount: number;
  maxDepth: number;
  unit: string;
  /** A viewer-only line (XLA Modules / XLA Ops / Command Buffers): event rows index its own events. */
  derived: boolean;
}

/** A slice track's part of the columns: events [eventOffset, +eventCount), boxes likewise. */
export interface SliceRange {
  eventOffset: number;
  eventCount: number;
  boxOffset: number;
  boxCount: number;
  inWindow: number;
  merged: number;
}

export interface CounterRange {
  sampleOffset: number;
  sampleCount: number;
  decimated: boolean;
  series: { name: string; offset: number }[];
}

export interface Frame {
  startPs: number;
  endPs: number;
  widthPx: number;
  resolutionPs: number;
  spanPs: number;
  /** Where the devices ran ([start, end] ps; the whole span without devices), null from an older backend. */
  activePs: readonly [number, number] | null;
  host: string;
  counts: { inWindow: number; returned: number; merged: number; boxes: number };
  strings: string[];
  groups: GroupMeta[];
  tracks: TrackMeta[];
  slices: Map<number, SliceRange>;
  counters: Map<number, CounterRange>;
  eventStart: Float64Array;
  eventDur: Float64Array;
  eventName: Uint32Array;
  eventRow: Uint32Array;
  eventDepth: Uint16Array;
  boxStart: Float64Array;
  boxCount: Uint32Array;
  boxBusy: Float32Array;
  boxName: Uint32Array;
  boxDepth: Uint16Array;
  counterTime: Float64Array;
  counterMin: Float64Array;
  counterMax: Float64Array;
  counterLast: Float64Array;
}

export class FrameError extends Error {
  constructor(message: string) {
    super(`trace frame: ${message}`);
    this.name = "FrameError";
  }
}

type Json = Record<string, unknown>;

const isObj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const num = (v: unknown, what: string): number => {
  if (typeof v !== "number") throw new FrameError(`${what} is not a number`);
  return v;
};
const str = (v: unknown): string => (typeof v === "string" ? v : "");
const pair = (v: unknown, what: string): [number, number] => {
  if (!Array.isArray(v) || v.length !== 2) throw new FrameError(`${what} is not an [offset, count] pair`);
  return [num(v[0], what), num(v[1], what)];
};

const ARRAYS = {
  float64: Float64Array,
  float32: Float32Array,
  uint32: Uint32Array,
  uint16: Uint16Array,
} as const;
type ArrayKind = keyof typeof ARRAYS;

function activeRange(v: unknown): readonly [number, number] | null {
  if (!Array.isArray(v) || v.length !== 2) return null;
  const [a, b] = v as unknown[];
  return typeof a === "number" && typeof b === "number" && b > a ? [a, b] : null;
}

/**
 * The window the viewer opens on: the active range with a 2 % margin on each side, or null
 * (the whole span) when the active range is most of it anyway.
 */
export function openingWindow(frame: Pick<Frame, "activePs" | "spanPs">): { startPs: number; endPs: number } | null {
  if (!frame.activePs) return null;
  const [a, b] = frame.activePs;
  if (b - a >= 0.9 * frame.spanPs) return null;
  const pad = 0.02 * (b - a);
  return { startPs: Math.max(0, a - pad), endPs: Math.min(frame.spanPs, b + pad) };
}

export function decodeFrame(buf: ArrayBuffer): Frame {
  if (buf.byteLength < 8) throw new FrameError("too short");
  const bytes = new Uint8Array(buf);
  const magic = String.fromCharCode(bytes[0] ?? 0, bytes[1] ?? 0, bytes[2] ?? 0, bytes[3] ?? 0);
  if (magic !== "TBTR") throw new FrameError(`bad magic ${JSON.stringify(magic)}`);
  const headerLen = new DataView(buf).getUint32(4, true);
  if (8 + headerLen > buf.byteLength) throw new FrameError(`truncated: the header needs ${headerLen} bytes`);
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLen)));
  } catch (e) {
    throw new FrameError(`the header is not JSON (${String(e)})`);
  }
  if (!isObj(header)) throw new FrameError("header is not an object");
  const dataStart = 8 + headerLen;
  const columns = new Map<string, ArrayLike<number>>();
  for (const b of Array.isArray(header.buffers) ? header.buffers : []) {
    if (!isObj(b)) continue;
    const kind = str(b.dtype) as ArrayKind;
    const ctor = ARRAYS[kind] as (typeof ARRAYS)[ArrayKind] | undefined;
    if (ctor === undefined) throw new FrameError(`unknown dtype ${str(b.dtype)}`);
    const offset = dataStart + num(b.offset, "buffer offset");
    const length = num(b.length, "buffer length");
    if (offset + length * ctor.BYTES_PER_ELEMENT > buf.byteLength) throw new FrameError(`column ${str(b.name)} overruns`);
    columns.set(str(b.name), new ctor(buf, offset, length));
  }
  return fromHeader(header, columns);
}

/** The JSON encoding (format=json) decodes to the same Frame. */
export function decodeJsonFrame(body: unknown): Frame {
  if (!isObj(body) || !isObj(body.columns)) throw new FrameError("not a JSON trace frame");
  const cols = body.columns;
  const columns = new Map<string, ArrayLike<number>>();
  const kinds: Record<string, ArrayKind> = {
    event_start_ps: "float64", event_dur_ps: "float64", event_name: "uint32", event_row: "uint32",
    event_depth: "uint16", box_start_ps: "float64", box_count: "uint32", box_busy: "float32", box_name: "uint32",
    box_depth: "uint16", counter_time_ps: "float64", counter_min: "float64", counter_max: "float64",
    counter_last: "float64",
  };
  for (const [name, kind] of Object.entries(kinds)) {
    const values = cols[name];
    columns.set(name, ARRAYS[kind].from(Array.isArray(values) ? (values as number[]) : []));
  }
  return fromHeader(body, columns);
}

type Column = Float64Array | Float32Array | Uint32Array | Uint16Array;

function column<T extends Column>(columns: Map<string, ArrayLike<number>>, name: string, ctor: new (n: number) => T): T {
  const c = columns.get(name);
  if (c === undefined) return new ctor(0);
  if (!(c instanceof ctor)) throw new FrameError(`column ${name} has the wrong type`);
  return c;
}

function fromHeader(header: Json, columns: Map<string, ArrayLike<number>>): Frame {
  const win = isObj(header.window) ? header.window : {};
  const counts = isObj(header.counts) ? header.counts : {};
  const groups: GroupMeta[] = (Array.isArray(header.groups) ? header.groups : []).filter(isObj).map((g) => ({
    id: num(g.id, "group id"),
    name: str(g.name),
    kind: str(g.kind),
    plane: num(g.plane, "group plane"),
    tracks: (Array.isArray(g.tracks) ? g.tracks : []).map((t) => num(t, "group track")),
  }));
  const tracks: TrackMeta[] = [];
  const slices = new Map<number, SliceRange>();
  const counters = new Map<number, CounterRange>();
  for (const t of (Array.isArray(header.tracks) ? header.tracks : []).filter(isObj)) {
    const id = num(t.id, "track id");
    tracks.push({
      id,
      group: num(t.group, "track group"),
      name: str(t.name),
      kind: t.kind === "counter" ? "counter" : "slices",
      plane: num(t.plane, "track plane"),
      line: num(t.line, "track line"),
      eventCount: num(t.event_count, "event_count"),
      maxDepth: num(t.max_depth, "max_depth"),
      unit: str(t.unit),
      derived: t.derived === true,
    });
    if (t.events !== undefined) {
      const [eo, ec] = pair(t.events, "events");
      const [bo, bc] = pair(t.boxes, "boxes");
      slices.set(id, {
        eventOffset: eo, eventCount: ec, boxOffset: bo, boxCount: bc,
        inWindow: num(t.in_window, "in_window"), merged: num(t.merged, "merged"),
      });
    }
    if (t.samples !== undefined) {
      const [so, sc] = pair(t.samples, "samples");
      const series = (Array.isArray(t.series) ? t.series : [])
        .filter(isObj)
        .map((s) => ({ name: str(s.name), offset: num(s.offset, "series offset") }));
      counters.set(id, { sampleOffset: so, sampleCount: sc, decimated: t.decimated === true, series });
    }
  }
  return {
    startPs: num(win.start_ps, "window start"),
    endPs: num(win.end_ps, "window end"),
    widthPx: num(win.width_px, "width"),
    resolutionPs: num(win.resolution_ps, "resolution"),
    spanPs: num(header.span_ps, "span"),
    activePs: activeRange(header.active_ps),
    host: str(header.host),
    counts: {
      inWindow: num(counts.in_window, "in_window"),
      returned: num(counts.returned, "returned"),
      merged: num(counts.merged, "merged"),
      boxes: num(counts.boxes, "boxes"),
    },
    strings: (Array.isArray(header.strings) ? header.strings : []).map(str),
    groups,
    tracks,
    slices,
    counters,
    eventStart: column(columns, "event_start_ps", Float64Array),
    eventDur: column(columns, "event_dur_ps", Float64Array),
    eventName: column(columns, "event_name", Uint32Array),
    eventRow: column(columns, "event_row", Uint32Array),
    eventDepth: column(columns, "event_depth", Uint16Array),
    boxStart: column(columns, "box_start_ps", Float64Array),
    boxCount: column(columns, "box_count", Uint32Array),
    boxBusy: column(columns, "box_busy", Float32Array),
    boxName: column(columns, "box_name", Uint32Array),
    boxDepth: column(columns, "box_depth", Uint16Array),
    counterTime: column(columns, "counter_time_ps", Float64Array),
    counterMin: column(columns, "counter_min", Float64Array),
    counterMax: column(columns, "counter_max", Float64Array),
    counterLast: column(columns, "counter_last", Float64Array),
  };
}

/** Index of the event of `track` whose plane row is `row`, or -1 (not in this frame). */
export function findEvent(frame: Frame, trackId: number, row: number): number {
  const r = frame.slices.get(trackId);
  if (!r) return -1;
  for (let i = r.eventOffset; i < r.eventOffset + r.eventCount; i++) if (frame.eventRow[i] === row) return i;
  return -1;
}
