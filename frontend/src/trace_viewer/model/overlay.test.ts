import { describe, expect, it } from "vitest";
import type { TrackMeta } from "./frame";
import { parseOverlay } from "./overlay";

function track(id: number, plane: number, line: number, derived = false): TrackMeta {
  return { id, group: 0, name: `t${id}`, kind: "slices", plane, line, eventCount: 1, maxDepth: 3, unit: "", derived };
}

describe("critical path overlay", () => {
  const tracks = [track(0, 1, 0), track(1, 2, 0), track(2, 2, 1), track(3, 2, 1, true)];

  it("places each event on its line's track and joins the arrows by index", () => {
    const o = parseOverlay({
      events: [[1, 10, 0, 100, 50, 2], [2, 4, 1, 120, 30, 0]],
      flows: [[0, 1, 100, 120]],
    }, tracks);
    expect(o.events).toEqual([{ track: 0, startPs: 100, durPs: 50, depth: 2 }, { track: 2, startPs: 120, durPs: 30, depth: 0 }]);
    expect(o.arrows).toEqual([{ from: o.events[0], to: o.events[1], fromPs: 100, toPs: 120 }]);
  });

  it("leaves out events on no track, malformed entries and their arrows", () => {
    const o = parseOverlay({
      events: [[9, 1, 0, 0, 1, 0], [1, 2, 0, 5, 1, 0], ["x", 1, 0, 0, 1, 0], [2, 3]],
      flows: [[0, 1, 0, 5], [1, 1, 5, 5], [7, 1, 0, 0], "bad"],
    }, tracks);
    expect(o.events).toEqual([{ track: 0, startPs: 5, durPs: 1, depth: 0 }]);
    expect(o.arrows).toHaveLength(1);
    expect(parseOverlay(null, tracks)).toEqual({ events: [], arrows: [] });
  });
});
