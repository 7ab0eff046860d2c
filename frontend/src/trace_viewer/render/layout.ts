// Vertical layout: a header row per group (process / device plane), collapsible, then its
// tracks; a slice track is one row per nesting depth, a counter track a fixed height.

import type { GroupMeta, TrackMeta } from "../model/frame";

export const RULER_H = 26;
export const GROUP_H = 22;
export const ROW_H = 16;
export const TRACK_PAD = 3;
export const COUNTER_H = 42;
export const LABEL_W = 230;

export interface TrackRow {
  track: TrackMeta;
  y: number; // content y (0 = just below the ruler, before scrolling)
  h: number;
}

export interface GroupRow {
  group: GroupMeta;
  y: number;
  collapsed: boolean;
}

export interface Layout {
  groups: GroupRow[];
  tracks: TrackRow[];
  byTrack: Map<number, TrackRow>;
  height: number;
}

export function trackHeight(t: TrackMeta): number {
  return t.kind === "counter" ? COUNTER_H : (t.maxDepth + 1) * ROW_H + 2 * TRACK_PAD;
}

export function layoutTracks(groups: GroupMeta[], tracks: TrackMeta[], collapsed: ReadonlySet<number>): Layout {
  const byId = new Map(tracks.map((t) => [t.id, t]));
  const out: Layout = { groups: [], tracks: [], byTrack: new Map(), height: 0 };
  let y = 0;
  for (const g of groups) {
    const isCollapsed = collapsed.has(g.id);
    out.groups.push({ group: g, y, collapsed: isCollapsed });
    y += GROUP_H;
    if (isCollapsed) continue;
    for (const id of g.tracks) {
      const t = byId.get(id);
      if (!t) continue;
      const row = { track: t, y, h: trackHeight(t) };
      out.tracks.push(row);
      out.byTrack.set(id, row);
      y += row.h;
    }
  }
  out.height = y;
  return out;
}

export type Hit =
  | { kind: "group"; group: GroupRow }
  | { kind: "track"; row: TrackRow; depth: number }
  | { kind: "none" };

/** What lies at content y. */
export function hitY(layout: Layout, y: number): Hit {
  for (const g of layout.groups) if (y >= g.y && y < g.y + GROUP_H) return { kind: "group", group: g };
  for (const row of layout.tracks) {
    if (y >= row.y && y < row.y + row.h) {
      const depth = Math.floor((y - row.y - TRACK_PAD) / ROW_H);
      return { kind: "track", row, depth };
    }
  }
  return { kind: "none" };
}

/** y of the top of depth `depth` in a slice track row. */
export function depthY(row: TrackRow, depth: number): number {
  return row.y + TRACK_PAD + depth * ROW_H;
}

/**
 * The group whose header stays pinned under the ruler while its tracks scroll past (sticky
 * process headers: a track is never read without its process): the last group whose header has scrolled above the top, drawn at
 * `offset` (0, or less while the next group's header pushes it up). Null when a header is
 * already at the top or nothing is scrolled.
 */
export function stickyGroup(layout: Layout, scrollY: number): { group: GroupRow; offset: number } | null {
  let current: GroupRow | null = null;
  let next: GroupRow | null = null;
  for (const g of layout.groups) {
    if (g.y < scrollY) current = g;
    else {
      next = g;
      break;
    }
  }
  if (current === null) return null;
  const offset = next === null ? 0 : Math.min(0, next.y - scrollY - GROUP_H);
  return offset <= -GROUP_H ? null : { group: current, offset };
}
