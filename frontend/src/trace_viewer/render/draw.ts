// Canvas 2D drawing of the timeline: ruler, group headers, track labels, events, density
// boxes, counters, the selection, the range selection and flow arrows.
//
// Cost is bounded by what the server sends (at most a few events per pixel and depth), and
// the loops below keep canvas calls few: events are collected into one path per colour and
// density boxes into one path per shade (after joining neighbours of the same depth and
// shade into runs), each filled once; labels are drawn only on events wider than 34 px.

import { formatDurationPs } from "../../base/format";
import { colorOf, densityColor, densityLevel, SERIES_COLORS, textOn } from "../model/colors";
import type { Frame } from "../model/frame";
import { tickInterval, type Viewport } from "../model/viewport";
import { depthY, GROUP_H, type GroupRow, LABEL_W, type Layout, ROW_H, RULER_H, stickyGroup, TRACK_PAD, type TrackRow } from "./layout";

export interface EventRef {
  track: number;
  startPs: number;
  durPs: number;
  depth: number;
  /** The event's name: the selection draws it beside a bar too narrow to carry it. */
  name?: string;
}

export interface Arrow {
  from: EventRef;
  to: EventRef;
  /** Where the arrow leaves and lands (ps); default: the end of `from`, the start of `to`. */
  fromPs?: number;
  toPs?: number;
}

/** Events drawn outlined and joined by arrows over the trace (the critical path overlay). */
export interface Overlay {
  events: readonly EventRef[];
  arrows: readonly Arrow[];
}

export interface DrawState {
  frame: Frame | null;
  /** The first (whole-span) frame: drawn where the detail frame has no data yet. */
  base: Frame | null;
  view: Viewport;
  layout: Layout;
  scrollY: number;
  widthCss: number;
  heightCss: number;
  dark: boolean;
  selected: EventRef | null;
  range: { startPs: number; endPs: number } | null;
  arrows: Arrow[];
  hoverTrack: number | null;
  /** While a search is active: which event names match (the rest is drawn faded). */
  highlight: ((name: string) => boolean) | null;
  /** The loaded search matches: marked even when too small to see among the faded rest. */
  marks: readonly EventRef[];
  overlay?: Overlay | null;
}

/** The overlay's colour: apart from the accent (selection, search, flows) and the event palette. */
const OVERLAY_COLOR = "#d6336c";

/** Opacity of what does not match the search: still there, but out of the way. */
const FADED_ALPHA = 0.18;

interface Theme {
  bg: string;
  bg2: string;
  bg3: string;
  fg: string;
  fg2: string;
  border: string;
  accent: string;
}

const LIGHT: Theme = { bg: "#ffffff", bg2: "#f5f6f8", bg3: "#e9ecf1", fg: "#1f2328", fg2: "#59636e", border: "#d6dae0", accent: "#f57c00" };
const DARK: Theme = { bg: "#1e1f22", bg2: "#26282c", bg3: "#303338", fg: "#e6e6e6", fg2: "#a4abb4", border: "#3d4148", accent: "#ffa040" };
const FONT = "11px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
const LABEL_MIN_PX = 34;

export class Renderer {
  private readonly ctx: CanvasRenderingContext2D;
  private readonly colorCache = new Map<string, string>();
  private readonly widthCache = new Map<string, number>();
  /** Per frame string: 1 when it matches the search (computed once per frame and search). */
  private matchCache: { strings: string[]; test: (name: string) => boolean; flags: Uint8Array } | null = null;
  private charPx = 6;
  /** The name tag drawn beside the selected bar in the last frame (browser tests read it). */
  selectionTag: { text: string; x: number; y: number } | null = null;
  /** Overlay events and arrows on screen in the last drawn frame (browser tests read them). */
  overlayDrawn = { events: 0, arrows: 0 };

  constructor(readonly canvas: HTMLCanvasElement) {
    const ctx = canvas.getContext("2d", { alpha: false });
    if (!ctx) throw new Error("this browser has no canvas 2D context");
    this.ctx = ctx;
  }

  resize(widthCss: number, heightCss: number): void {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(widthCss * dpr));
    const h = Math.max(1, Math.round(heightCss * dpr));
    if (this.canvas.width !== w || this.canvas.height !== h) {
      this.canvas.width = w;
      this.canvas.height = h;
      this.canvas.style.width = `${widthCss}px`;
      this.canvas.style.height = `${heightCss}px`;
    }
  }

  private color(name: string): string {
    let c = this.colorCache.get(name);
    if (c === undefined) {
      c = colorOf(name);
      this.colorCache.set(name, c);
    }
    return c;
  }

  private textWidth(s: string): number {
    let w = this.widthCache.get(s);
    if (w === undefined) {
      w = this.ctx.measureText(s).width;
      if (this.widthCache.size > 20000) this.widthCache.clear();
      this.widthCache.set(s, w);
    }
    return w;
  }

  private matchFlags(f: Frame, test: (name: string) => boolean): Uint8Array {
    const c = this.matchCache;
    if (c && c.strings === f.strings && c.test === test) return c.flags;
    const flags = new Uint8Array(f.strings.length);
    f.strings.forEach((name, i) => {
      if (test(name)) flags[i] = 1;
    });
    this.matchCache = { strings: f.strings, test, flags };
    return flags;
  }

  /** `s` cut to fit `maxPx` (with an ellipsis), or "" when not even 2 characters fit. */
  fit(s: string, maxPx: number): string {
    const full = this.textWidth(s);
    if (full <= maxPx) return s;
    const chars = Math.floor((maxPx / full) * s.length) - 1;
    return chars >= 2 ? `${s.slice(0, chars)}…` : "";
  }

  draw(st: DrawState): void {
    const ctx = this.ctx;
    const dpr = window.devicePixelRatio || 1;
    const theme = st.dark ? DARK : LIGHT;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    this.charPx = this.textWidth("abcdefghij") / 10;
    ctx.fillStyle = theme.bg;
    ctx.fillRect(0, 0, st.widthCss, st.heightCss);

    // Tracks area, clipped below the ruler and right of the labels.
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, RULER_H, st.widthCss - LABEL_W, st.heightCss - RULER_H);
    ctx.clip();
    const top = RULER_H - st.scrollY;
    for (const row of st.layout.tracks) {
      const y = top + row.y;
      if (y + row.h < RULER_H || y > st.heightCss) continue;
      if (row.track.id === st.hoverTrack) {
        ctx.fillStyle = theme.bg2;
        ctx.fillRect(LABEL_W, y, st.widthCss - LABEL_W, row.h);
      }
      this.drawTrack(st, row, y);
      ctx.fillStyle = theme.border;
      ctx.fillRect(LABEL_W, y + row.h - 0.5, st.widthCss - LABEL_W, 0.5);
    }
    if (st.marks.length) this.drawMarks(st, theme);
    this.overlayDrawn = { events: 0, arrows: 0 };
    if (st.overlay) this.drawOverlay(st, st.overlay);
    if (st.selected) this.drawSelection(st, st.selected, theme);
    for (const a of st.arrows) this.drawArrow(st, a, theme.accent);
    ctx.restore();

    this.drawHeaders(st, theme);
    this.drawRuler(st, theme);
    if (st.range) this.drawRange(st, st.range, theme);
  }

  private drawTrack(st: DrawState, row: TrackRow, y: number): void {
    const { frame, base, view } = st;
    const x0 = LABEL_W;
    const x1 = st.widthCss;
    // Where the detail frame has data, it is drawn; elsewhere the whole-span frame (coarser).
    const dStart = frame ? LABEL_W + view.xOf(frame.startPs) : x1;
    const dEnd = frame ? LABEL_W + view.xOf(frame.endPs) : x1;
    if (base && base !== frame) {
      if (dStart > x0) this.drawTrackFrame(st, base, row, y, x0, Math.min(dStart, x1));
      if (dEnd < x1) this.drawTrackFrame(st, base, row, y, Math.max(dEnd, x0), x1);
    }
    if (frame) this.drawTrackFrame(st, frame, row, y, Math.max(dStart, x0), Math.min(dEnd, x1));
  }

  private drawTrackFrame(st: DrawState, f: Frame, row: TrackRow, y: number, cx0: number, cx1: number): void {
    if (cx1 <= cx0) return;
    if (row.track.kind === "counter") {
      this.drawCounter(st, f, row, y, cx0, cx1);
      return;
    }
    const r = f.slices.get(row.track.id);
    if (!r) return;
    const ctx = this.ctx;
    const vs = st.view.startPs;
    const k = st.view.widthPx / st.view.durationPs;
    const res = f.resolutionPs;
    const yTop = y + TRACK_PAD;

    // Density boxes as runs, one path per shade: a few fill() calls instead of one per box.
    const shades: (Path2D | null)[] = [null, null, null, null];
    let runX0 = 0;
    let runX1 = -1e9;
    let runDepth = -1;
    let runLevel = -1;
    const flush = (): void => {
      if (runDepth < 0) return;
      const path = shades[runLevel] ?? (shades[runLevel] = new Path2D());
      path.rect(runX0, yTop + runDepth * ROW_H + 2, Math.max(runX1 - runX0, 1), ROW_H - 5);
      runDepth = -1;
    };
    const boxEnd = r.boxOffset + r.boxCount;
    for (let i = r.boxOffset; i < boxEnd; i++) {
      const bx0 = LABEL_W + ((f.boxStart[i] ?? 0) - vs) * k;
      const bx1 = bx0 + res * k;
      if (bx1 < cx0 || bx0 > cx1) continue;
      const depth = f.boxDepth[i] ?? 0;
      const level = densityLevel(f.boxBusy[i] ?? 0);
      const a = Math.max(bx0, cx0);
      const b = Math.min(bx1, cx1);
      if (depth === runDepth && level === runLevel && a <= runX1 + 1) {
        if (b > runX1) runX1 = b;
      } else {
        flush();
        runX0 = a;
        runX1 = b;
        runDepth = depth;
        runLevel = level;
      }
    }
    flush();
    // While searching, boxes fade too: they merge events that may or may not match.
    if (st.highlight) ctx.globalAlpha = FADED_ALPHA;
    shades.forEach((path, level) => {
      if (!path) return;
      ctx.fillStyle = densityColor(level, st.dark);
      ctx.fill(path);
    });
    ctx.globalAlpha = 1;

    // Events, one path per colour.
    const strings = f.strings;
    const byColor = new Map<string, Path2D>();
    const faded = new Map<string, Path2D>();
    const matches = st.highlight ? this.matchFlags(f, st.highlight) : null;
    const labels: number[] = [];
    const evEnd = r.eventOffset + r.eventCount;
    for (let i = r.eventOffset; i < evEnd; i++) {
      const s = f.eventStart[i] ?? 0;
      let ex0 = LABEL_W + (s - vs) * k;
      let ex1 = ex0 + (f.eventDur[i] ?? 0) * k;
      if (ex1 < cx0 || ex0 > cx1) continue;
      if (ex0 < cx0) ex0 = cx0;
      if (ex1 > cx1) ex1 = cx1;
      const w = ex1 - ex0 < 1 ? 1 : ex1 - ex0;
      const nameId = f.eventName[i] ?? 0;
      const color = this.color(strings[nameId] ?? "");
      const on = matches === null || matches[nameId] === 1;
      const paths = on ? byColor : faded;
      let path = paths.get(color);
      if (!path) {
        path = new Path2D();
        paths.set(color, path);
      }
      path.rect(ex0, yTop + (f.eventDepth[i] ?? 0) * ROW_H, w, ROW_H - 1);
      if (on && w >= LABEL_MIN_PX) labels.push(i, ex0, w);
    }
    ctx.globalAlpha = FADED_ALPHA;
    for (const [color, path] of faded) {
      ctx.fillStyle = color;
      ctx.fill(path);
    }
    ctx.globalAlpha = 1;
    for (const [color, path] of byColor) {
      ctx.fillStyle = color;
      ctx.fill(path);
    }
    for (let j = 0; j < labels.length; j += 3) {
      const i = labels[j] ?? 0;
      const ex0 = labels[j + 1] ?? 0;
      const w = labels[j + 2] ?? 0;
      const name = strings[f.eventName[i] ?? 0] ?? "";
      const text = w / this.charPx > name.length + 1 ? name : this.fit(name, w - 6);
      if (!text) continue;
      ctx.fillStyle = textOn(this.color(name));
      ctx.fillText(text, ex0 + 3, yTop + (f.eventDepth[i] ?? 0) * ROW_H + ROW_H / 2);
    }
  }

  private drawCounter(st: DrawState, f: Frame, row: TrackRow, y: number, cx0: number, cx1: number): void {
    const r = f.counters.get(row.track.id);
    if (!r || r.sampleCount === 0) return;
    const ctx = this.ctx;
    const vs = st.view.startPs;
    const k = st.view.widthPx / st.view.durationPs;
    const h = row.h - 2 * TRACK_PAD;
    const base = y + row.h - TRACK_PAD;
    ctx.save();
    // A search matches slices by name; while one is active, counters fade with the rest.
    const alpha = st.highlight ? FADED_ALPHA : 1;
    ctx.beginPath();
    ctx.rect(cx0, y, cx1 - cx0, row.h);
    ctx.clip();
    r.series.forEach((s, si) => {
      let max = 0;
      for (let i = 0; i < r.sampleCount; i++) max = Math.max(max, f.counterMax[s.offset + i] ?? 0);
      if (max <= 0) return;
      const color = SERIES_COLORS[si % SERIES_COLORS.length] ?? "#888";
      ctx.beginPath();
      ctx.moveTo(cx0, base);
      let prevY = base;
      for (let i = 0; i < r.sampleCount; i++) {
        const x = LABEL_W + ((f.counterTime[r.sampleOffset + i] ?? 0) - vs) * k;
        const v = f.counterMax[s.offset + i] ?? 0;
        const yv = base - (v / max) * h;
        ctx.lineTo(Math.max(x, cx0), prevY);
        ctx.lineTo(Math.max(x, cx0), yv);
        prevY = yv;
        if (x > cx1) break;
      }
      ctx.lineTo(cx1, prevY);
      ctx.lineTo(cx1, base);
      ctx.closePath();
      ctx.globalAlpha = 0.35 * alpha;
      ctx.fillStyle = color;
      ctx.fill();
      ctx.globalAlpha = alpha;
      ctx.strokeStyle = color;
      ctx.lineWidth = 1;
      ctx.stroke();
    });
    ctx.restore();
  }

  private eventBox(st: DrawState, e: EventRef): { x0: number; x1: number; y: number } | null {
    const row = st.layout.byTrack.get(e.track);
    if (!row) return null;
    const x0 = LABEL_W + st.view.xOf(e.startPs);
    const x1 = Math.max(LABEL_W + st.view.xOf(e.startPs + e.durPs), x0 + 1);
    return { x0, x1, y: RULER_H - st.scrollY + depthY(row, Math.min(e.depth, row.track.maxDepth)) };
  }

  private drawMarks(st: DrawState, theme: Theme): void {
    const ctx = this.ctx;
    ctx.fillStyle = theme.accent;
    for (const m of st.marks) {
      const b = this.eventBox(st, m);
      if (!b || b.x1 < LABEL_W || b.x0 > st.widthCss) continue;
      // At least 3 px wide, in the accent colour, under the event's own colour when it is wide.
      const w = Math.max(b.x1 - b.x0, 3);
      ctx.fillRect(b.x0 - (w - (b.x1 - b.x0)) / 2, b.y - 1, w, ROW_H + 1);
    }
  }

  private drawSelection(st: DrawState, e: EventRef, theme: Theme): void {
    this.selectionTag = null;
    const b = this.eventBox(st, e);
    if (!b) return;
    const ctx = this.ctx;
    ctx.lineWidth = 2;
    ctx.strokeStyle = theme.accent;
    ctx.strokeRect(b.x0 - 1, b.y - 1, b.x1 - b.x0 + 2, ROW_H + 1);
    // A selected bar (a search match) a few pixels wide says nothing about what it is: its name
    // on a tag beside it, on the side with room.
    if (e.name && b.x1 - b.x0 < LABEL_MIN_PX * 2) {
      ctx.font = FONT;
      const text = e.name.length > 60 ? `${e.name.slice(0, 59)}…` : e.name;
      const w = ctx.measureText(text).width + 8;
      const right = b.x1 + 4 + w <= LABEL_W + st.view.widthPx;
      const x = right ? b.x1 + 4 : Math.max(LABEL_W, b.x0 - 4 - w);
      ctx.fillStyle = theme.bg;
      ctx.fillRect(x, b.y, w, ROW_H);
      ctx.strokeStyle = theme.accent;
      ctx.lineWidth = 1;
      ctx.strokeRect(x + 0.5, b.y + 0.5, w - 1, ROW_H - 1);
      ctx.fillStyle = theme.fg;
      ctx.textBaseline = "middle";
      ctx.fillText(text, x + 4, b.y + ROW_H / 2);
      this.selectionTag = { text, x, y: b.y };
    }
  }

  private drawOverlay(st: DrawState, o: Overlay): void {
    const ctx = this.ctx;
    ctx.lineWidth = 2;
    ctx.strokeStyle = OVERLAY_COLOR;
    for (const e of o.events) {
      const b = this.eventBox(st, e);
      if (!b || b.x1 < LABEL_W || b.x0 > st.widthCss || b.y + ROW_H < RULER_H || b.y > st.heightCss) continue;
      ctx.strokeRect(b.x0 - 1, b.y - 1, Math.max(b.x1 - b.x0, 1) + 2, ROW_H + 1);
      this.overlayDrawn.events++;
    }
    for (const a of o.arrows) if (this.drawArrow(st, a, OVERLAY_COLOR)) this.overlayDrawn.arrows++;
  }

  /** Draws an arrow; false when one of its ends is on no laid-out track. */
  private drawArrow(st: DrawState, a: Arrow, color: string): boolean {
    const from = this.eventBox(st, a.from);
    const to = this.eventBox(st, a.to);
    if (!from || !to) return false;
    const ctx = this.ctx;
    const sx = a.fromPs !== undefined ? LABEL_W + st.view.xOf(a.fromPs) : from.x1;
    const sy = from.y + ROW_H / 2;
    const tx = a.toPs !== undefined ? LABEL_W + st.view.xOf(a.toPs) : to.x0;
    const ty = to.y + ROW_H / 2;
    const bend = Math.max(Math.abs(tx - sx) / 2, 20);
    ctx.strokeStyle = color;
    ctx.fillStyle = color;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    ctx.moveTo(sx, sy);
    ctx.bezierCurveTo(sx + bend, sy, tx - bend, ty, tx, ty);
    ctx.stroke();
    ctx.beginPath();
    ctx.moveTo(tx, ty);
    ctx.lineTo(tx - 7, ty - 4);
    ctx.lineTo(tx - 7, ty + 4);
    ctx.closePath();
    ctx.fill();
    return true;
  }

  private drawHeaders(st: DrawState, theme: Theme): void {
    const ctx = this.ctx;
    const top = RULER_H - st.scrollY;
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, RULER_H, st.widthCss, st.heightCss - RULER_H);
    ctx.clip();
    // Label column.
    ctx.fillStyle = theme.bg2;
    ctx.fillRect(0, RULER_H, LABEL_W, st.heightCss - RULER_H);
    for (const row of st.layout.tracks) {
      const y = top + row.y;
      if (y + row.h < RULER_H || y > st.heightCss) continue;
      ctx.fillStyle = theme.fg;
      ctx.fillText(this.fit(row.track.name, LABEL_W - 22), 16, y + Math.min(row.h, ROW_H + 2 * TRACK_PAD) / 2);
      ctx.fillStyle = theme.border;
      ctx.fillRect(0, y + row.h - 0.5, LABEL_W, 0.5);
    }
    for (const g of st.layout.groups) {
      const y = top + g.y;
      if (y + GROUP_H < RULER_H || y > st.heightCss) continue;
      this.drawGroupHeader(g, y, st, theme);
    }
    // The header of the group being scrolled through stays under the ruler.
    const pin = stickyGroup(st.layout, st.scrollY);
    if (pin) {
      this.drawGroupHeader(pin.group, RULER_H + pin.offset, st, theme);
      ctx.fillStyle = theme.border;
      ctx.fillRect(0, RULER_H + pin.offset + GROUP_H - 1, st.widthCss, 1);
    }
    ctx.fillStyle = theme.border;
    ctx.fillRect(LABEL_W - 1, RULER_H, 1, st.heightCss - RULER_H);
    ctx.restore();
  }

  private drawGroupHeader(g: GroupRow, y: number, st: DrawState, theme: Theme): void {
    const ctx = this.ctx;
    ctx.fillStyle = theme.bg3;
    ctx.fillRect(0, y, st.widthCss, GROUP_H);
    ctx.fillStyle = theme.fg;
    ctx.font = `600 ${FONT}`;
    const arrow = g.collapsed ? "▸" : "▾";
    ctx.fillText(`${arrow} ${g.group.name}`, 4, y + GROUP_H / 2);
    ctx.font = FONT;
  }

  private drawRuler(st: DrawState, theme: Theme): void {
    const ctx = this.ctx;
    ctx.fillStyle = theme.bg2;
    ctx.fillRect(0, 0, st.widthCss, RULER_H);
    ctx.fillStyle = theme.border;
    ctx.fillRect(0, RULER_H - 1, st.widthCss, 1);
    const step = tickInterval(st.view.psPerPx);
    const first = Math.ceil(st.view.startPs / step) * step;
    ctx.fillStyle = theme.fg2;
    ctx.textBaseline = "middle";
    for (let t = first; t <= st.view.endPs; t += step) {
      const x = LABEL_W + st.view.xOf(t);
      ctx.fillRect(x, RULER_H - 7, 1, 6);
      ctx.fillText(formatDurationPs(t, 6), x + 3, RULER_H / 2 - 2);
    }
    ctx.fillStyle = theme.fg;
    ctx.fillText(`${formatDurationPs(st.view.durationPs, 4)} shown`, 8, RULER_H / 2);
  }

  private drawRange(st: DrawState, r: { startPs: number; endPs: number }, theme: Theme): void {
    const ctx = this.ctx;
    const x0 = Math.max(LABEL_W + st.view.xOf(r.startPs), LABEL_W);
    const x1 = Math.min(LABEL_W + st.view.xOf(r.endPs), st.widthCss);
    if (x1 <= x0) return;
    ctx.globalAlpha = 0.15;
    ctx.fillStyle = theme.accent;
    ctx.fillRect(x0, RULER_H, x1 - x0, st.heightCss - RULER_H);
    ctx.globalAlpha = 1;
    ctx.fillStyle = theme.accent;
    ctx.fillRect(x0, 0, 1, st.heightCss);
    ctx.fillRect(x1, 0, 1, st.heightCss);
    const label = formatDurationPs(r.endPs - r.startPs, 5);
    const w = this.textWidth(label) + 8;
    const lx = Math.min(Math.max((x0 + x1) / 2 - w / 2, LABEL_W), st.widthCss - w);
    ctx.fillStyle = theme.accent;
    ctx.fillRect(lx, 2, w, RULER_H - 6);
    ctx.fillStyle = "#ffffff";
    ctx.fillText(label, lx + 4, RULER_H / 2 - 1);
  }
}
