// Pure helpers of the memory viewer page (tested without a browser).

import type { HeapBuffer } from "../../data/schema.gen";

/** What the orders read of a buffer live at the peak. */
export type OrderedBuffer = Pick<HeapBuffer, "logical_buffer_id" | "size_bytes" | "unpadded_size_bytes">;

export type BufferOrder = "program" | "size" | "padding";

/**
 * Indices into the buffers live at the peak in the chosen order: program order is the list's
 * own order (allocation order); size and padding orders come from the backend (XProf's "by
 * size" and "by padding size" lists), and are recomputed here only if it sent none.
 */
export function bufferOrder(live: readonly OrderedBuffer[], order: BufferOrder, bySize: readonly number[], byPadding: readonly number[]): number[] {
  const all = live.map((_, i) => i);
  const valid = (idx: readonly number[]): boolean => idx.length === live.length && new Set(idx).size === live.length && idx.every((i) => i >= 0 && i < live.length);
  const size = (i: number): number => live[i]?.size_bytes ?? 0;
  const padding = (i: number): number => {
    const b = live[i];
    if (!b) return 0;
    const s = b.size_bytes;
    const u = b.unpadded_size_bytes;
    return b.logical_buffer_id >= 0 && s > 0 && u > 0 ? s - u : 0;
  };
  if (order === "size") return valid(bySize) ? [...bySize] : [...all].sort((a, b) => size(b) - size(a));
  if (order === "padding") {
    if (valid(byPadding)) return [...byPadding];
    return [...all].sort((a, b) => size(b) - size(a)).sort((a, b) => padding(b) - padding(a));
  }
  return all;
}

export interface Block {
  /** Logical buffer id; -1 for an allocation's container block. */
  id: number;
  name: string;
  offset: number;
  size: number;
  start: number;
  end: number;
}

export interface Rect extends Block {
  container: boolean;
  x: number;
  y: number;
  w: number;
  h: number;
}

/**
 * The allocation timeline's blocks in a width x height box: x = heap simulator step, y =
 * offset (0 at the bottom, as XProf's timeline). Every block keeps at least 1 unit so a
 * one-step or tiny buffer stays visible.
 */
export function timelineRects(blocks: readonly Block[], width: number, height: number): Rect[] {
  const steps = Math.max(1, ...blocks.map((b) => b.end));
  const bytes = Math.max(1, ...blocks.map((b) => b.offset + b.size));
  const sx = width / steps;
  const sy = height / bytes;
  return blocks.map((b) => {
    const w = Math.max(1, (b.end - b.start) * sx);
    const hgt = Math.max(1, b.size * sy);
    return { ...b, container: b.id < 0, x: b.start * sx, y: height - (b.offset + b.size) * sy, w, h: hgt };
  });
}
