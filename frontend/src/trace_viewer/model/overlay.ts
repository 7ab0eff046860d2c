// The critical path overlay's data (the critical_path tool's "overlay" field) as events and
// arrows of the trace viewer's tracks. DOM-free.

import type { Arrow, EventRef, Overlay } from "../render/draw";
import type { TrackMeta } from "./frame";

function ints(v: unknown, n: number): number[] | null {
  if (!Array.isArray(v) || v.length !== n) return null;
  return v.every((x) => typeof x === "number" && Number.isFinite(x)) ? (v as number[]) : null;
}

/**
 * `overlay.events`: [plane, row, line, start_ps, dur_ps, depth] per event; `overlay.flows`:
 * [from event, to event, from_ps, to_ps] per arrow. An event on no track of this trace (or a
 * malformed entry) is left out, with the arrows that touch it.
 */
export function parseOverlay(raw: unknown, tracks: readonly TrackMeta[]): Overlay {
  const byLine = new Map<string, number>();
  for (const t of tracks) if (!t.derived) byLine.set(`${t.plane}:${t.line}`, t.id);
  const obj = (raw && typeof raw === "object" ? raw : {}) as Record<string, unknown>;
  const events: (EventRef | null)[] = (Array.isArray(obj.events) ? obj.events : []).map((e: unknown) => {
    const v = ints(e, 6);
    if (!v) return null;
    const [plane, , line, startPs, durPs, depth] = v as [number, number, number, number, number, number];
    const track = byLine.get(`${plane}:${line}`);
    return track === undefined ? null : { track, startPs, durPs, depth };
  });
  const arrows: Arrow[] = [];
  for (const f of Array.isArray(obj.flows) ? obj.flows : []) {
    const v = ints(f, 4);
    if (!v) continue;
    const [a, b, fromPs, toPs] = v as [number, number, number, number];
    const from = events[a];
    const to = events[b];
    if (from && to) arrows.push({ from, to, fromPs, toPs });
  }
  return { events: events.filter((e): e is EventRef => e !== null), arrows };
}
