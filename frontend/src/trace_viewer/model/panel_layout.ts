// How the page's height is shared between the timeline and the details panel under it. The
// user sizes the panel by dragging the bar between them and may fold it away; the timeline
// gets the rest (at 1280×800 about 20 tracks must stay visible). DOM-free.

/** The timeline never gets shorter than this (the ruler and a few tracks). */
export const MIN_TIMELINE_PX = 200;
export const MIN_PANEL_PX = 60;
export const MAX_PANEL_PX = 900;
/** The drag bar between timeline and panel, and the gap below the panel. */
export const SPLITTER_PX = 10;
export const BOTTOM_GAP_PX = 12;

export interface PanelSizing {
  /** The window's inner height. */
  viewportPx: number;
  /** Where the timeline starts (its top in the window; page headers and toolbar above it). */
  topPx: number;
  /** The panel height the user chose, or null for the default. */
  panelPx: number | null;
  folded: boolean;
}

/** The default panel: a fifth of the window, at least 140 px, at most 320 px. */
export function defaultPanelPx(viewportPx: number): number {
  return Math.round(Math.min(320, Math.max(140, viewportPx * 0.2)));
}

/** The largest panel that leaves the timeline its minimum. */
export function maxPanelPx(viewportPx: number, topPx: number): number {
  return Math.max(MIN_PANEL_PX, Math.min(MAX_PANEL_PX, viewportPx - Math.max(topPx, 0) - MIN_TIMELINE_PX - SPLITTER_PX - BOTTOM_GAP_PX));
}

export function clampPanelPx(px: number, viewportPx: number, topPx: number): number {
  return Math.round(Math.min(Math.max(px, MIN_PANEL_PX), maxPanelPx(viewportPx, topPx)));
}

/** Heights of the timeline and the panel (0 when folded). */
export function splitHeights(s: PanelSizing): { timelinePx: number; panelPx: number } {
  const panelPx = s.folded ? 0 : clampPanelPx(s.panelPx ?? defaultPanelPx(s.viewportPx), s.viewportPx, s.topPx);
  const timelinePx = Math.max(MIN_TIMELINE_PX, s.viewportPx - Math.max(s.topPx, 0) - panelPx - SPLITTER_PX - BOTTOM_GAP_PX);
  return { timelinePx: Math.round(timelinePx), panelPx };
}

/** The panel height after dragging the bar from `fromY` to `toY` (up makes the panel taller). */
export function draggedPanelPx(startPanelPx: number, fromY: number, toY: number, viewportPx: number, topPx: number): number {
  return clampPanelPx(startPanelPx + (fromY - toY), viewportPx, topPx);
}
