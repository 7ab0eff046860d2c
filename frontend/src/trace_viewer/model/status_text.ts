// The line under the toolbar: what the timeline draws, in words, not units like "µs/box".
// The server sends every event of the window that is at least a pixel wide and merges the
// smaller ones into density boxes, so nothing is dropped: the line says so with numbers.

import { formatNumber } from "../../base/format";

export interface FrameCounts {
  /** Events of the window (every track). */
  inWindow: number;
  /** Events sent one by one. */
  returned: number;
  /** Events merged into boxes. */
  merged: number;
  boxes: number;
}

export function statusText(c: FrameCounts): string {
  const drawn = `${formatNumber(c.returned)} ${c.returned === 1 ? "event" : "events"} drawn`;
  if (c.merged === 0) return `${drawn} (every event in view, none dropped)`;
  return `${drawn}, ${formatNumber(c.merged)} small ${c.merged === 1 ? "one" : "ones"} merged into ` +
    `${formatNumber(c.boxes)} density ${c.boxes === 1 ? "box" : "boxes"} (none dropped; zoom in to see them one by one)`;
}
