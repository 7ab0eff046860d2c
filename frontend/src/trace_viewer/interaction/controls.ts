// Mouse and keyboard, as in Perfetto and XProf:
//   wheel            scroll tracks vertically  ctrl/⌘+wheel  zoom at the cursor (a pinch too)
//   horizontal wheel, shift+wheel  pan         drag          pan
//   drag on ruler / shift+drag                 select a time range
//   click            select an event (or a density box); click a group header to fold it
//   W / S            zoom in / out             A / D         pan left / right
//   F                zoom to the selection     0             show everything
//   Esc              clear the selection       ?             the key help panel
//
// The keys listen on the frame's window, so the timeline must own the keyboard focus. Inside
// TensorBoard the plugin is an iframe: a mousedown whose default is prevented (to stop text
// selection while dragging) does not move the focus into the frame, and the keys would go to
// TensorBoard's document. So a click or a wheel on the canvas focuses it explicitly.

import { LABEL_W, RULER_H } from "../render/layout";

export interface ControlTarget {
  readonly canvas: HTMLCanvasElement;
  readonly scroller: HTMLElement;
  /** Timeline x (0 at the left of the tracks area) and content y of a mouse event. */
  zoomAt(x: number, factor: number): void;
  pan(dxPx: number): void;
  scrollBy(dy: number): void;
  click(x: number, contentY: number, labelArea: boolean): void;
  /** `allTracks`: the drag started on the ruler (a time range over every track). */
  rangeStart(x: number, contentY: number, allTracks: boolean): void;
  rangeMove(x: number, contentY: number): void;
  rangeEnd(): void;
  /** The pointer over the tracks (timeline x, content y, page coordinates), or null when it left. */
  hover(at: { x: number; cy: number; clientX: number; clientY: number } | null): void;
  zoomToSelection(): void;
  fitAll(): void;
  clearSelection(): void;
  toggleKeyHelp(): void;
  /** Closes the key help panel; false when it was not open. */
  closeKeyHelp(): boolean;
  timelineWidth(): number;
  interacting(on: boolean): void;
}

const DRAG_THRESHOLD_PX = 3;

export type WheelAction = { kind: "zoom"; factor: number } | { kind: "scroll"; dy: number } | { kind: "pan"; dx: number } | null;

export interface WheelInput {
  deltaX: number;
  deltaY: number;
  deltaMode: number;
  ctrlKey: boolean;
  metaKey: boolean;
  shiftKey: boolean;
}

/**
 * What a wheel event does. The plain wheel scrolls the tracks: with 60+ tracks a wheel that
 * zoomed would leave no way to scroll them. Ctrl/⌘ + wheel zooms (Perfetto's and XProf's
 * convention; a trackpad pinch arrives as ctrl + wheel); shift + wheel and a horizontal wheel pan.
 */
export function wheelAction(e: WheelInput): WheelAction {
  const scale = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
  const dx = e.deltaX * scale;
  const dy = e.deltaY * scale;
  if (e.ctrlKey || e.metaKey) return dy !== 0 ? { kind: "zoom", factor: Math.exp(-dy * 0.002) } : null;
  if (e.shiftKey) return dy || dx ? { kind: "pan", dx: dy || dx } : null;
  if (Math.abs(dx) > Math.abs(dy)) return { kind: "pan", dx };
  return dy !== 0 ? { kind: "scroll", dy } : null;
}
const KEY_ZOOM = 1.25;
const KEY_PAN_FRACTION = 0.1;

export function attachControls(t: ControlTarget, signal: AbortSignal): void {
  const { canvas } = t;
  const pos = (e: MouseEvent): { x: number; y: number; cy: number } => {
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left;
    const y = e.clientY - r.top;
    return { x, y, cy: y - RULER_H + t.scroller.scrollTop };
  };
  let mouseX = -1;
  // preventScroll: focusing must not jump the page (or TensorBoard's frame) to the canvas.
  const takeFocus = (): void => {
    if (document.activeElement !== canvas) canvas.focus({ preventScroll: true });
  };

  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    takeFocus();
    const p = pos(e);
    const a = wheelAction(e);
    if (a?.kind === "zoom") t.zoomAt(Math.max(p.x - LABEL_W, 0), a.factor);
    else if (a?.kind === "pan") t.pan(a.dx);
    else if (a?.kind === "scroll") t.scrollBy(a.dy);
  }, { passive: false, signal });

  canvas.addEventListener("mousedown", (e) => {
    if (e.button !== 0) return;
    takeFocus();
    const start = pos(e);
    const ranging = start.y < RULER_H || e.shiftKey;
    let lastX = start.x;
    let moved = false;
    if (ranging && start.x >= LABEL_W) t.rangeStart(start.x - LABEL_W, start.cy, start.y < RULER_H);
    t.interacting(true);
    const move = (ev: MouseEvent): void => {
      const p = pos(ev);
      if (!moved && Math.abs(p.x - start.x) + Math.abs(p.y - start.y) < DRAG_THRESHOLD_PX) return;
      moved = true;
      if (ranging) {
        t.rangeMove(Math.max(p.x - LABEL_W, 0), p.cy);
      } else {
        t.pan(lastX - p.x);
        t.scrollBy(0);
      }
      lastX = p.x;
    };
    const up = (): void => {
      window.removeEventListener("mousemove", move);
      window.removeEventListener("mouseup", up);
      t.interacting(false);
      if (ranging && moved) t.rangeEnd();
      else if (!moved) t.click(start.x - LABEL_W, start.cy, start.x < LABEL_W);
    };
    window.addEventListener("mousemove", move, { signal });
    window.addEventListener("mouseup", up, { signal });
    e.preventDefault();
  }, { signal });

  canvas.addEventListener("mousemove", (e) => {
    const p = pos(e);
    mouseX = p.x;
    t.hover(p.y >= RULER_H ? { x: p.x - LABEL_W, cy: p.cy, clientX: e.clientX, clientY: e.clientY } : null);
  }, { signal });
  // Hovering hands the keys to the timeline too, but only within a frame that already has
  // the focus and when no text field or control is focused: never steal from a typing user.
  canvas.addEventListener("mouseenter", () => {
    const active = document.activeElement;
    if (document.hasFocus() && (active === null || active === document.body)) takeFocus();
  }, { signal });
  canvas.addEventListener("mouseleave", () => {
    mouseX = -1;
    t.hover(null);
  }, { signal });

  window.addEventListener("keydown", (e) => {
    const target = e.target as HTMLElement | null;
    if (target && (["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || target.isContentEditable)) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "?") {
      t.toggleKeyHelp();
      e.preventDefault();
      return;
    }
    const w = t.timelineWidth();
    const anchor = mouseX >= LABEL_W ? mouseX - LABEL_W : w / 2;
    switch (e.key.toLowerCase()) {
      case "w": t.zoomAt(anchor, KEY_ZOOM); break;
      case "s": t.zoomAt(anchor, 1 / KEY_ZOOM); break;
      case "a": t.pan(-w * KEY_PAN_FRACTION); break;
      case "d": t.pan(w * KEY_PAN_FRACTION); break;
      case "f": t.zoomToSelection(); break;
      case "0": t.fitAll(); break;
      case "escape": if (!t.closeKeyHelp()) t.clearSelection(); break;
      default: return;
    }
    e.preventDefault();
  }, { signal });
}
