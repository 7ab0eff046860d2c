// Hit-testing: what is drawn at a time on one row of a track: an event, a density box or a
// counter sample. DOM-free (the viewer turns the mouse position into a track, a depth and a
// time first), so vitest covers it with a real frame.

import { formatDurationPs, formatNumber } from "../../base/format";
import type { CounterRange, Frame } from "./frame";

export type PickKind = "event" | "box" | "counter";

/** Something drawn on the timeline: `index` is into the frame's event, box or sample columns. */
export interface Pick {
  kind: PickKind;
  frame: Frame;
  track: number;
  index: number;
}

/** Where to look: a track, its kind, the nesting depth under the pointer and the time there. */
export interface PickQuery {
  track: number;
  trackKind: "slices" | "counter";
  depth: number;
  ps: number;
  /** How far (in ps) a pointer may miss a thin event and still pick it: two pixels' worth. */
  tolerancePs: number;
}

/** The frame that draws time `ps`: the detail frame where it has data, else the whole-span one. */
export function frameAt(detail: Frame | null, base: Frame | null, ps: number): Frame | null {
  return detail && ps >= detail.startPs && ps <= detail.endPs ? detail : base;
}

/** Index (into the counter range) of the sample in force at `ps`: the last one at or before it. */
export function counterSampleAt(f: Frame, r: CounterRange, ps: number): number | null {
  let lo = 0;
  let hi = r.sampleCount;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((f.counterTime[r.sampleOffset + mid] ?? 0) <= ps) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 ? lo - 1 : null;
}

/**
 * The event nearest to `ps` on the query's depth (within the tolerance; one under the pointer
 * wins with distance 0), else the density box covering `ps`, else null. Events win over boxes
 * because a box is drawn under the events that were too small to send one by one.
 */
export function pickIn(f: Frame, q: PickQuery): Pick | null {
  if (q.trackKind === "counter") {
    const c = f.counters.get(q.track);
    if (!c || c.sampleCount === 0) return null;
    const i = counterSampleAt(f, c, q.ps);
    return i === null ? null : { kind: "counter", frame: f, track: q.track, index: i };
  }
  const r = f.slices.get(q.track);
  if (!r) return null;
  let best = -1;
  let bestDist = Infinity;
  for (let i = r.eventOffset; i < r.eventOffset + r.eventCount; i++) {
    if ((f.eventDepth[i] ?? 0) !== q.depth) continue;
    const s = f.eventStart[i] ?? 0;
    const e = s + (f.eventDur[i] ?? 0);
    const dist = q.ps < s ? s - q.ps : q.ps > e ? q.ps - e : 0;
    if (dist <= q.tolerancePs && dist < bestDist) {
      best = i;
      bestDist = dist;
    }
  }
  if (best >= 0) return { kind: "event", frame: f, track: q.track, index: best };
  for (let i = r.boxOffset; i < r.boxOffset + r.boxCount; i++) {
    if ((f.boxDepth[i] ?? 0) !== q.depth) continue;
    const s = f.boxStart[i] ?? 0;
    if (q.ps >= s - q.tolerancePs && q.ps <= s + f.resolutionPs + q.tolerancePs) {
      return { kind: "box", frame: f, track: q.track, index: i };
    }
  }
  return null;
}

/** What the hover tooltip says about a pick. */
export function describePick(p: Pick | null): string {
  if (!p) return "";
  const f = p.frame;
  if (p.kind === "event") {
    return `${f.strings[f.eventName[p.index] ?? 0] ?? ""} — ${formatDurationPs(f.eventDur[p.index] ?? 0)}`;
  }
  if (p.kind === "box") {
    return `${formatNumber(f.boxCount[p.index] ?? 0)} events merged (${Math.round((f.boxBusy[p.index] ?? 0) * 100)} % busy), ` +
      `longest: ${f.strings[f.boxName[p.index] ?? 0] ?? ""}`;
  }
  const r = f.counters.get(p.track);
  if (!r) return "";
  return r.series.map((s) => `${s.name}: ${formatNumber(f.counterLast[s.offset + p.index] ?? 0)}`).join(" · ") +
    ` @ ${formatDurationPs(f.counterTime[r.sampleOffset + p.index] ?? 0, 7)}`;
}

/** The name an event pick or a box pick shows (a box: its longest event). */
export function pickName(p: Pick): string {
  const f = p.frame;
  if (p.kind === "event") return f.strings[f.eventName[p.index] ?? 0] ?? "";
  if (p.kind === "box") return f.strings[f.boxName[p.index] ?? 0] ?? "";
  return "";
}
