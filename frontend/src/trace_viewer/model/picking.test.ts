// Hit-testing on a small hand-made frame (exact cases) and on a real `trace` answer
// (custom_loop, testdata/): every event sent is picked at its own middle.
import { describe, expect, it } from "vitest";
import { decodeJsonFrame, type Frame } from "./frame";
import { counterSampleAt, describePick, frameAt, pickIn, pickName } from "./picking";
import real from "./testdata/custom_loop_frame_json.json";

/**
 * One slice track (id 0): events A [100, 200) and B [200, 260) at depth 0, C [120, 180) at
 * depth 1, and one density box at depth 0 from 1000 (resolution 64 ps: [1000, 1064]).
 * One counter track (id 1) with samples at 0, 500 and 900 ps.
 */
function tiny(): Frame {
  return decodeJsonFrame({
    span_ps: 2000,
    window: { start_ps: 0, end_ps: 2000, width_px: 100, resolution_ps: 64 },
    counts: { in_window: 9, returned: 3, merged: 6, boxes: 1 },
    strings: ["A", "B", "C", "merged longest"],
    groups: [{ id: 0, name: "g", kind: "host", plane: 0, tracks: [0, 1] }],
    tracks: [
      { id: 0, group: 0, name: "t", kind: "slices", plane: 0, line: 0, event_count: 9, max_depth: 1,
        events: [0, 3], boxes: [0, 1], in_window: 9, merged: 6 },
      { id: 1, group: 0, name: "mem", kind: "counter", plane: 0, line: -1, event_count: 3, max_depth: 0,
        series: [{ name: "bytes", offset: 0 }], samples: [0, 3], decimated: false, in_window: 3 },
    ],
    columns: {
      event_start_ps: [100, 200, 120], event_dur_ps: [100, 60, 60], event_name: [0, 1, 2], event_row: [10, 11, 12],
      event_depth: [0, 0, 1],
      box_start_ps: [1000], box_count: [6], box_busy: [0.5], box_name: [3], box_depth: [0],
      counter_time_ps: [0, 500, 900], counter_min: [1, 2, 3], counter_max: [1, 2, 3], counter_last: [1, 2, 3],
    },
  });
}

const q = (ps: number, depth = 0, tolerancePs = 0, track = 0) =>
  ({ track, trackKind: track === 1 ? "counter" as const : "slices" as const, depth, ps, tolerancePs });

describe("picking", () => {
  const f = tiny();

  it("picks the event under the pointer on the pointer's depth", () => {
    expect(pickIn(f, q(150))).toMatchObject({ kind: "event", index: 0 });
    expect(pickIn(f, q(150, 1))).toMatchObject({ kind: "event", index: 2 });
    expect(pickIn(f, q(230))).toMatchObject({ kind: "event", index: 1 });
    expect(pickName(pickIn(f, q(230)) ?? { kind: "counter", frame: f, track: 0, index: 0 })).toBe("B");
  });

  it("picks a thin miss within the tolerance, the nearer event first", () => {
    expect(pickIn(f, q(270))).toBeNull(); // 10 ps right of B's end, no tolerance
    expect(pickIn(f, q(270, 0, 10))).toMatchObject({ kind: "event", index: 1 });
    // 90 ps: A starts 10 ps away; C (depth 1) is not on this depth.
    expect(pickIn(f, q(90, 0, 20))).toMatchObject({ kind: "event", index: 0 });
    expect(pickIn(f, q(90, 1, 20))).toBeNull();
  });

  it("falls back to the density box covering the time, events win over boxes", () => {
    // The box covers [1000, 1000 + resolution 64].
    expect(pickIn(f, q(1000))).toMatchObject({ kind: "box", index: 0 });
    expect(pickIn(f, q(1064))).toMatchObject({ kind: "box", index: 0 });
    expect(pickIn(f, q(1065))).toBeNull();
    expect(pickIn(f, q(1000, 1))).toBeNull();
    expect(describePick(pickIn(f, q(1010)))).toBe("6 events merged (50 % busy), longest: merged longest");
  });

  it("picks the counter sample in force: the last at or before the time", () => {
    const c = f.counters.get(1);
    if (!c) throw new Error("no counter");
    expect(counterSampleAt(f, c, -1)).toBeNull();
    expect(counterSampleAt(f, c, 0)).toBe(0);
    expect(counterSampleAt(f, c, 499)).toBe(0);
    expect(counterSampleAt(f, c, 500)).toBe(1);
    expect(counterSampleAt(f, c, 5000)).toBe(2);
    expect(pickIn(f, q(700, 0, 0, 1))).toMatchObject({ kind: "counter", index: 1 });
    expect(describePick(pickIn(f, q(700, 0, 0, 1)))).toContain("bytes: 2");
  });

  it("uses the detail frame only inside its window", () => {
    const base = tiny();
    const detail = { ...tiny(), startPs: 100, endPs: 300 };
    expect(frameAt(detail, base, 200)).toBe(detail);
    expect(frameAt(detail, base, 301)).toBe(base);
    expect(frameAt(null, base, 200)).toBe(base);
  });

  it("picks every event of a real frame at its own middle", () => {
    const r = decodeJsonFrame(real);
    let checked = 0;
    for (const t of r.tracks) {
      const s = r.slices.get(t.id);
      if (!s) continue;
      for (let i = s.eventOffset; i < s.eventOffset + s.eventCount; i++) {
        const mid = (r.eventStart[i] ?? 0) + (r.eventDur[i] ?? 0) / 2;
        const p = pickIn(r, { track: t.id, trackKind: "slices", depth: r.eventDepth[i] ?? 0, ps: mid, tolerancePs: 0 });
        expect(p?.kind).toBe("event");
        // Events of one depth may touch but never overlap: the one picked contains the middle.
        const j = p?.index ?? -1;
        expect(r.eventStart[j] ?? Infinity).toBeLessThanOrEqual(mid);
        expect((r.eventStart[j] ?? 0) + (r.eventDur[j] ?? 0)).toBeGreaterThanOrEqual(mid);
        checked++;
      }
    }
    expect(checked).toBe(r.counts.returned);
  });
});
