import { describe, expect, it } from "vitest";
import type { GroupMeta, TrackMeta } from "../model/frame";
import { GROUP_H, hitY, layoutTracks, ROW_H, stickyGroup, TRACK_PAD } from "./layout";

const track = (id: number, group: number, maxDepth = 0): TrackMeta => ({
  id, group, name: `t${id}`, kind: "slices", plane: group, line: id, eventCount: 1, maxDepth, unit: "", derived: false,
});
const group = (id: number, tracks: number[]): GroupMeta => ({ id, name: `g${id}`, kind: "host", plane: id, tracks });

// Two groups of two one-row tracks: each track is ROW_H + 2 * TRACK_PAD = 22 px high.
const TRACK = ROW_H + 2 * TRACK_PAD;
const layout = layoutTracks([group(0, [0, 1]), group(1, [2, 3])], [track(0, 0), track(1, 0), track(2, 1), track(3, 1)], new Set());

describe("layout", () => {
  it("stacks a header and its tracks per group; folded groups keep only the header", () => {
    expect(layout.groups.map((g) => g.y)).toEqual([0, GROUP_H + 2 * TRACK]);
    expect(layout.height).toBe(2 * GROUP_H + 4 * TRACK);
    const folded = layoutTracks([group(0, [0, 1]), group(1, [2, 3])], [track(0, 0), track(1, 0), track(2, 1), track(3, 1)], new Set([0]));
    expect(folded.groups[1]?.y).toBe(GROUP_H);
    expect(folded.byTrack.has(0)).toBe(false);
  });

  it("hit-tests headers and rows", () => {
    expect(hitY(layout, 5).kind).toBe("group");
    const hit = hitY(layout, GROUP_H + TRACK + TRACK_PAD + 1);
    expect(hit.kind === "track" ? [hit.row.track.id, hit.depth] : null).toEqual([1, 0]);
  });

  it("pins the header of the group being scrolled through", () => {
    expect(stickyGroup(layout, 0)).toBeNull(); // its own header is at the top
    expect(stickyGroup(layout, 10)).toEqual({ group: layout.groups[0], offset: 0 });
    // The next header (at 66) pushes the pinned one up as it arrives under the ruler.
    const nextY = layout.groups[1]?.y ?? 0;
    expect(stickyGroup(layout, nextY - GROUP_H + 5)?.offset).toBe(-5);
    expect(stickyGroup(layout, nextY)).toBeNull();
    expect(stickyGroup(layout, nextY + 1)).toEqual({ group: layout.groups[1], offset: 0 });
  });
});
