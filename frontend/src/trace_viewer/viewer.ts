// The trace viewer: owns the view (time window, vertical scroll, folded groups), the loaded
// frames, the selection and the search, and redraws on the next animation frame after any
// change. Data comes window by window from the backend (model/fetch_policy.ts).

import { formatDurationPs, formatNumber } from "../base/format";
import { ApiError, type Api } from "../data/api";
import { h } from "../widgets/dom";
import { isDark, watchTheme } from "../widgets/theme";
import { DetailsPanel } from "./details_panel";
import { attachControls, type ControlTarget } from "./interaction/controls";
import {
  type EventDetails, fetchEvent, fetchRange, fetchSearch, fetchWindow, type LinkedEvent, type SearchPage, type Target,
} from "./model/api";
import { covers, paddedRequest, type WindowRequest } from "./model/fetch_policy";
import type { Frame } from "./model/frame";
import { Viewport } from "./model/viewport";
import { type Arrow, type EventRef, Renderer } from "./render/draw";
import { depthY, hitY, LABEL_W, type Layout, layoutTracks, ROW_H, RULER_H } from "./render/layout";

const FETCH_DEBOUNCE_MS = 60;
const SEARCH_PAGE = 100;
const DRAW_SAMPLES = 600;

export interface ViewerOptions {
  api: Api;
  target: Target;
  /** Reads and writes page state in the URL ("c.<key>"). */
  param(key: string): string | null;
  setParams(updates: Readonly<Record<string, string | null>>): void;
}

export interface TraceDebug {
  /** Milliseconds each redraw took (the last DRAW_SAMPLES). */
  drawMs: number[];
  fetches: number;
  viewer: TraceViewer;
}

declare global {
  interface Window {
    __tbprofTrace?: TraceDebug;
  }
}

type Selected = EventRef & { plane: number; row: number };
type Pick = { kind: "event" | "box" | "counter"; frame: Frame; track: number; index: number };

export class TraceViewer implements ControlTarget {
  readonly el: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  readonly scroller: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly status: HTMLElement;
  private readonly searchInput: HTMLInputElement;
  private readonly searchCount: HTMLElement;
  private readonly panel: DetailsPanel;
  private readonly tooltip: HTMLElement;
  private readonly renderer: Renderer;
  private readonly lifetime = new AbortController();
  private view: Viewport | null = null;
  private frame: Frame | null = null;
  private base: Frame | null = null;
  private layout: Layout = { groups: [], tracks: [], byTrack: new Map(), height: 0 };
  private readonly collapsed = new Set<number>();
  private selected: Selected | null = null;
  private arrows: Arrow[] = [];
  private range: { startPs: number; endPs: number } | null = null;
  private rangeAnchor: { ps: number; cy: number; allTracks: boolean } | null = null;
  private rangeCy: [number, number] = [0, 0];
  private hoverTrack: number | null = null;
  private drawQueued = false;
  private fetchTimer: number | null = null;
  private fetching: { key: string; ctl: AbortController } | null = null;
  private urlTimer: number | null = null;
  private search: { query: string; page: SearchPage; index: number } | null = null;
  private detailsCtl: AbortController | null = null;
  private busy = false;
  readonly debug: TraceDebug;

  constructor(private readonly opts: ViewerOptions) {
    this.canvas = h("canvas", { class: "tbp-tv-canvas", "data-testid": "trace-canvas", tabindex: 0 });
    this.spacer = h("div", { class: "tbp-tv-spacer" });
    this.scroller = h("div", { class: "tbp-tv-scroller" }, this.canvas, this.spacer);
    this.status = h("span", { class: "tbp-tv-status tbp-muted", "data-testid": "trace-status" }, "Loading…");
    this.searchInput = h("input", {
      type: "search", class: "tbp-tv-search", placeholder: "Search names, ops, kernels (whole trace)",
      "aria-label": "Search events", "data-testid": "trace-search",
    });
    this.searchCount = h("span", { class: "tbp-tv-count tbp-muted", "data-testid": "search-count" });
    const button = (label: string, title: string, fn: () => void, testid: string): HTMLButtonElement =>
      h("button", { type: "button", class: "tbp-btn", title, "data-testid": testid, onclick: fn }, label);
    const toolbar = h("div", { class: "tbp-tv-toolbar" },
      this.searchInput,
      button("◀", "Previous match", () => void this.stepSearch(-1), "search-prev"),
      button("▶", "Next match", () => void this.stepSearch(1), "search-next"),
      this.searchCount,
      h("span", { class: "tbp-spacer" }),
      button("Fit", "Show the whole profile (0)", () => this.fitAll(), "fit"),
      button("Zoom to selection", "Zoom to the selected event or range (F)", () => this.zoomToSelection(), "zoom-selection"),
      h("span", {
        class: "tbp-tv-help tbp-muted",
        title: "wheel: zoom · shift+wheel: scroll · drag: pan · drag on the ruler or shift+drag: select a range · " +
          "W/S zoom · A/D pan · F zoom to selection · 0 fit · Esc clear",
      }, "Keys"));
    this.searchInput.addEventListener("keydown", (e) => {
      if (e.key === "Enter") void this.runSearch(this.searchInput.value.trim(), e.shiftKey ? -1 : 1);
    });
    this.panel = new DetailsPanel({
      select: (e) => void this.selectEvent(e.plane, e.row, true),
      zoomTo: (a, b) => this.zoomTo(a, b),
    });
    this.tooltip = h("div", { class: "tbp-tv-tooltip", hidden: true, "data-testid": "trace-tooltip" });
    this.el = h("div", { class: "tbp-tv", "data-testid": "trace-viewer" }, toolbar, this.status, this.scroller, this.panel.el,
      this.tooltip);
    this.renderer = new Renderer(this.canvas);
    this.scroller.addEventListener("scroll", () => this.requestDraw(), { signal: this.lifetime.signal });
    attachControls(this, this.lifetime.signal);
    const unwatch = watchTheme(() => this.requestDraw());
    this.lifetime.signal.addEventListener("abort", unwatch);
    const ro = new ResizeObserver(() => this.resize());
    ro.observe(this.scroller);
    window.addEventListener("resize", () => this.resize(), { signal: this.lifetime.signal });
    this.lifetime.signal.addEventListener("abort", () => ro.disconnect());
    this.debug = { drawMs: [], fetches: 0, viewer: this };
    window.__tbprofTrace = this.debug;
  }

  dispose(): void {
    this.lifetime.abort();
    this.fetching?.ctl.abort();
    this.detailsCtl?.abort();
    if (window.__tbprofTrace === this.debug) delete window.__tbprofTrace;
  }

  /** Loads the first (whole-span) frame, then restores the URL's window, selection and search. */
  async start(): Promise<void> {
    this.resize();
    const width = Math.max(this.timelineWidth(), 100);
    let first: Frame;
    try {
      first = await fetchWindow(this.opts.api, this.opts.target, { startPs: null, endPs: null, widthPx: width },
        this.lifetime.signal);
    } catch (e) {
      this.status.textContent = "";
      this.panel.showError(e instanceof ApiError ? e.message : String(e));
      throw e;
    }
    this.debug.fetches++;
    this.base = first;
    this.frame = first;
    this.view = new Viewport(first.spanPs);
    this.view.widthPx = width;
    this.relayout();
    const start = Number(this.opts.param("start"));
    const end = Number(this.opts.param("end"));
    if (this.opts.param("start") !== null && Number.isFinite(start) && Number.isFinite(end) && end > start) {
      this.view.setWindow(start, end);
    }
    this.updateStatus();
    this.requestDraw();
    const sel = this.opts.param("sel");
    if (sel) {
      const derived = sel.startsWith("d");
      const [p, r] = (derived ? sel.slice(1) : sel).split(":").map(Number);
      if (Number.isInteger(p) && Number.isInteger(r)) {
        if (derived) void this.selectDerived(p ?? 0, r ?? 0);
        else void this.selectEvent(p ?? 0, r ?? 0, false);
      }
    }
    const q = this.opts.param("q");
    if (q) {
      // Restore the search without moving to a match: the URL's selection stays selected.
      this.searchInput.value = q;
      void this.runSearch(q, 0, sel === null);
    }
  }

  // --- view ----------------------------------------------------------------------------
  /** The visible window (tests and benchmarks read it through window.__tbprofTrace). */
  visibleWindow(): { startPs: number; endPs: number } | null {
    return this.view ? { startPs: this.view.startPs, endPs: this.view.endPs } : null;
  }

  /** Where an event is drawn, in canvas CSS pixels (its middle), or null when off screen. */
  eventPosition(track: number, startPs: number, durPs: number, depth: number): { x: number; y: number } | null {
    const row = this.layout.byTrack.get(track);
    if (!row || !this.view) return null;
    const x0 = Math.max(this.view.xOf(startPs), 0);
    const x1 = Math.min(this.view.xOf(startPs + durPs), this.view.widthPx);
    const y = RULER_H + depthY(row, depth) + ROW_H / 2 - this.scroller.scrollTop;
    if (x1 < 0 || x0 > this.view.widthPx || y < RULER_H || y > this.scroller.clientHeight) return null;
    return { x: LABEL_W + (x0 + Math.max(x1, x0 + 1)) / 2, y };
  }

  /** The selected time range, if any. */
  rangeSelection(): { startPs: number; endPs: number } | null {
    return this.range;
  }

  /** The selected event's plane and row, if any. */
  selection(): { plane: number; row: number } | null {
    return this.selected ? { plane: this.selected.plane, row: this.selected.row } : null;
  }

  timelineWidth(): number {
    return Math.max(this.scroller.clientWidth - LABEL_W, 1);
  }

  private resize(): void {
    const top = this.scroller.getBoundingClientRect().top;
    const panelH = Math.min(320, Math.max(180, window.innerHeight * 0.3));
    const height = Math.max(260, window.innerHeight - Math.max(top, 0) - panelH - 12);
    this.scroller.style.height = `${Math.round(height)}px`;
    this.panel.el.style.height = `${Math.round(panelH)}px`;
    if (this.view) this.view.widthPx = this.timelineWidth();
    this.requestDraw();
  }

  private relayout(): void {
    const f = this.base;
    if (!f) return;
    this.layout = layoutTracks(f.groups, f.tracks, this.collapsed);
    this.spacer.style.height = `${Math.max(0, RULER_H + this.layout.height - this.scroller.clientHeight)}px`;
  }

  requestDraw(): void {
    if (this.drawQueued) return;
    this.drawQueued = true;
    requestAnimationFrame(() => {
      this.drawQueued = false;
      this.draw();
    });
  }

  private draw(): void {
    const view = this.view;
    if (!view) return;
    const w = this.scroller.clientWidth;
    const hgt = this.scroller.clientHeight;
    view.widthPx = Math.max(w - LABEL_W, 1);
    this.renderer.resize(w, hgt);
    const t0 = performance.now();
    this.renderer.draw({
      frame: this.frame, base: this.base, view, layout: this.layout, scrollY: this.scroller.scrollTop,
      widthCss: w, heightCss: hgt, dark: isDark(), selected: this.selected, range: this.range, arrows: this.arrows,
      hoverTrack: this.hoverTrack,
    });
    const ms = performance.now() - t0;
    this.debug.drawMs.push(ms);
    if (this.debug.drawMs.length > DRAW_SAMPLES) this.debug.drawMs.shift();
    this.maybeFetch();
    this.scheduleUrl();
  }

  private maybeFetch(): void {
    const view = this.view;
    if (!view) return;
    const want = { startPs: view.startPs, endPs: view.endPs, widthPx: view.widthPx };
    if (covers(this.frame, want, view.spanPs)) return;
    if (this.base && this.base !== this.frame && covers(this.base, want, view.spanPs)) {
      // Zoomed back out to what the first frame shows: use it.
      this.frame = this.base;
      this.updateStatus();
      this.requestDraw();
      return;
    }
    if (this.fetchTimer !== null) window.clearTimeout(this.fetchTimer);
    this.fetchTimer = window.setTimeout(() => {
      this.fetchTimer = null;
      const v = this.view;
      if (!v) return;
      void this.fetch(paddedRequest({ startPs: v.startPs, endPs: v.endPs, widthPx: v.widthPx }, v.spanPs));
    }, FETCH_DEBOUNCE_MS);
  }

  private async fetch(req: WindowRequest): Promise<void> {
    const key = JSON.stringify(req);
    if (this.fetching?.key === key) return;
    this.fetching?.ctl.abort();
    const ctl = new AbortController();
    this.fetching = { key, ctl };
    try {
      const f = await fetchWindow(this.opts.api, this.opts.target, req, ctl.signal);
      this.debug.fetches++;
      if (!this.isCurrent(ctl)) return;
      this.frame = f;
      this.updateStatus();
      this.requestDraw();
    } catch (e) {
      if (!(e instanceof DOMException && e.name === "AbortError")) {
        this.status.textContent = `Could not load the window: ${e instanceof Error ? e.message : String(e)}`;
      }
    } finally {
      if (this.isCurrent(ctl)) this.fetching = null;
    }
  }

  private isCurrent(ctl: AbortController): boolean {
    return this.fetching?.ctl === ctl;
  }

  private updateStatus(): void {
    const f = this.frame;
    if (!f) return;
    const c = f.counts;
    this.status.textContent =
      `Loaded ${formatDurationPs(f.startPs, 6)} – ${formatDurationPs(f.endPs, 6)} at ${formatDurationPs(f.resolutionPs)}/box: ` +
      `${formatNumber(c.inWindow)} events — ${formatNumber(c.returned)} drawn, ${formatNumber(c.merged)} merged into ` +
      `${formatNumber(c.boxes)} density boxes (none dropped)`;
  }

  private scheduleUrl(): void {
    if (this.urlTimer !== null) return;
    this.urlTimer = window.setTimeout(() => {
      this.urlTimer = null;
      const v = this.view;
      if (!v || this.busy) return;
      this.opts.setParams({ start: String(Math.round(v.startPs)), end: String(Math.round(v.endPs)) });
    }, 400);
  }

  zoomAt(x: number, factor: number): void {
    this.view?.zoomAt(x, factor);
    this.requestDraw();
  }

  pan(dxPx: number): void {
    this.view?.panPx(dxPx);
    this.requestDraw();
  }

  scrollBy(dy: number): void {
    if (dy) this.scroller.scrollTop += dy;
    this.requestDraw();
  }

  interacting(on: boolean): void {
    this.busy = on;
    if (!on) this.scheduleUrl();
  }

  fitAll(): void {
    this.view?.fitAll();
    this.requestDraw();
  }

  zoomTo(startPs: number, endPs: number): void {
    this.view?.show(startPs, endPs, 0.05);
    this.requestDraw();
  }

  zoomToSelection(): void {
    if (this.range) this.zoomTo(this.range.startPs, this.range.endPs);
    else if (this.selected) this.zoomTo(this.selected.startPs, this.selected.startPs + Math.max(this.selected.durPs, 1000));
  }

  clearSelection(): void {
    this.selected = null;
    this.arrows = [];
    this.range = null;
    this.opts.setParams({ sel: null });
    this.requestDraw();
  }

  hover(at: { x: number; cy: number; clientX: number; clientY: number } | null): void {
    let track: number | null = null;
    let tip = "";
    if (at !== null) {
      const hit = hitY(this.layout, at.cy);
      if (hit.kind === "track") track = hit.row.track.id;
      if (at.x >= 0) tip = this.describe(this.pick(at.x, at.cy));
    }
    if (tip && at) {
      this.tooltip.textContent = tip;
      this.tooltip.hidden = false;
      this.tooltip.style.left = `${Math.min(at.clientX + 14, window.innerWidth - 320)}px`;
      this.tooltip.style.top = `${at.clientY + 16}px`;
    } else {
      this.tooltip.hidden = true;
    }
    if (track !== this.hoverTrack) {
      this.hoverTrack = track;
      this.requestDraw();
    }
  }

  private describe(p: Pick | null): string {
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

  /** What is drawn at timeline x / content y: an event, a density box or a counter sample. */
  private pick(x: number, contentY: number): Pick | null {
    const hit = hitY(this.layout, contentY);
    const view = this.view;
    if (hit.kind !== "track" || !view) return null;
    const ps = view.psOf(x);
    const tol = 2 * view.psPerPx;
    const f = this.frame && ps >= this.frame.startPs && ps <= this.frame.endPs ? this.frame : this.base;
    if (!f) return null;
    const id = hit.row.track.id;
    if (hit.row.track.kind === "counter") {
      const c = f.counters.get(id);
      if (!c || c.sampleCount === 0) return null;
      // The sample in force at ps: the last one at or before it.
      let lo = 0;
      let hi = c.sampleCount;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if ((f.counterTime[c.sampleOffset + mid] ?? 0) <= ps) lo = mid + 1;
        else hi = mid;
      }
      return lo > 0 ? { kind: "counter", frame: f, track: id, index: lo - 1 } : null;
    }
    const r = f.slices.get(id);
    if (!r) return null;
    let best = -1;
    let bestDist = Infinity;
    for (let i = r.eventOffset; i < r.eventOffset + r.eventCount; i++) {
      if ((f.eventDepth[i] ?? 0) !== hit.depth) continue;
      const s = f.eventStart[i] ?? 0;
      const e = s + (f.eventDur[i] ?? 0);
      const dist = ps < s ? s - ps : ps > e ? ps - e : 0;
      if (dist <= tol && dist < bestDist) {
        best = i;
        bestDist = dist;
      }
    }
    if (best >= 0) return { kind: "event", frame: f, track: id, index: best };
    for (let i = r.boxOffset; i < r.boxOffset + r.boxCount; i++) {
      if ((f.boxDepth[i] ?? 0) !== hit.depth) continue;
      const s = f.boxStart[i] ?? 0;
      if (ps >= s - tol && ps <= s + f.resolutionPs + tol) return { kind: "box", frame: f, track: id, index: i };
    }
    return null;
  }

  // --- picking ---------------------------------------------------------------------------
  click(x: number, contentY: number, labelArea: boolean): void {
    const hit = hitY(this.layout, contentY);
    if (hit.kind === "group") {
      const id = hit.group.group.id;
      if (this.collapsed.has(id)) this.collapsed.delete(id);
      else this.collapsed.add(id);
      this.relayout();
      this.requestDraw();
      return;
    }
    if (hit.kind !== "track" || labelArea) return;
    const p = this.pick(x, contentY);
    if (!p) return;
    const f = p.frame;
    if (p.kind === "event") {
      if (hit.row.track.derived) void this.selectDerived(hit.row.track.id, f.eventRow[p.index] ?? 0);
      else void this.selectEvent(hit.row.track.plane, f.eventRow[p.index] ?? 0, false);
      return;
    }
    this.selected = null;
    this.arrows = [];
    if (p.kind === "box") {
      const s = f.boxStart[p.index] ?? 0;
      this.panel.showBox(f.strings[f.boxName[p.index] ?? 0] ?? "", f.boxCount[p.index] ?? 0, f.boxBusy[p.index] ?? 0,
        s, s + f.resolutionPs);
    } else {
      this.panel.showCounter(hit.row.track.name, this.describe(p));
    }
    this.requestDraw();
  }

  /** Selects an event of a derived line (XLA Modules / XLA Ops / Command Buffers) by its index. */
  async selectDerived(track: number, index: number): Promise<void> {
    await this.selectEvent(null, index, false, track);
  }

  async selectEvent(plane: number | null, row: number, reveal: boolean, track?: number): Promise<void> {
    this.detailsCtl?.abort();
    const ctl = new AbortController();
    this.detailsCtl = ctl;
    this.panel.showLoading("event details");
    let d: EventDetails;
    try {
      d = await fetchEvent(this.opts.api, this.opts.target, plane, row, ctl.signal, track);
    } catch (e) {
      if (!(e instanceof DOMException && e.name === "AbortError")) this.panel.showError(e instanceof Error ? e.message : String(e));
      return;
    }
    const e = d.event;
    this.selected = { track: e.track, startPs: e.startPs, durPs: e.durPs, depth: e.depth, plane: e.plane, row };
    this.arrows = this.arrowsOf(d);
    this.panel.showEvent(d);
    this.opts.setParams({ sel: plane === null ? `d${e.track}:${row}` : `${plane}:${row}` });
    if (reveal) this.reveal(e);
    this.requestDraw();
  }

  private arrowsOf(d: EventDetails): Arrow[] {
    const me: EventRef = { track: d.event.track, startPs: d.event.startPs, durPs: d.event.durPs, depth: d.event.depth };
    const ref = (x: LinkedEvent): EventRef => ({ track: x.track, startPs: x.startPs, durPs: x.durPs, depth: x.depth });
    const out: Arrow[] = [];
    for (const rel of ["launched_by", "flow_from"]) for (const x of d.links.get(rel) ?? []) out.push({ from: ref(x), to: me });
    for (const rel of ["launches", "flow_to"]) for (const x of d.links.get(rel) ?? []) out.push({ from: me, to: ref(x) });
    return out;
  }

  /** Brings an event into view: unfolds its group, scrolls to its track, pans or zooms to it. */
  private reveal(e: LinkedEvent): void {
    const view = this.view;
    if (!view) return;
    const track = this.base?.tracks.find((t) => t.id === e.track);
    if (track && this.collapsed.delete(track.group)) this.relayout();
    const row = this.layout.byTrack.get(e.track);
    if (row) {
      const top = this.scroller.scrollTop;
      const visibleH = this.scroller.clientHeight - RULER_H;
      if (row.y < top || row.y + Math.min(row.h, 60) > top + visibleH) this.scroller.scrollTop = Math.max(row.y - 40, 0);
    }
    const dur = Math.max(e.durPs, 1000);
    const widthPx = (dur / view.durationPs) * view.widthPx;
    const inside = e.startPs >= view.startPs && e.startPs + dur <= view.endPs;
    if (widthPx < 2) view.setWindow(e.startPs - 4.5 * dur, e.startPs + 5.5 * dur);
    else if (!inside) view.centre(e.startPs + dur / 2);
    this.requestDraw();
  }

  // --- range selection -------------------------------------------------------------------
  rangeStart(x: number, contentY: number, allTracks: boolean): void {
    if (!this.view) return;
    this.rangeAnchor = { ps: this.view.psOf(x), cy: contentY, allTracks };
    this.range = null;
  }

  rangeMove(x: number, contentY: number): void {
    if (!this.view || !this.rangeAnchor) return;
    const ps = this.view.psOf(x);
    this.range = { startPs: Math.min(ps, this.rangeAnchor.ps), endPs: Math.max(ps, this.rangeAnchor.ps) };
    this.rangeCy = [Math.min(contentY, this.rangeAnchor.cy), Math.max(contentY, this.rangeAnchor.cy)];
    this.requestDraw();
  }

  rangeEnd(): void {
    const r = this.range;
    const anchor = this.rangeAnchor;
    this.rangeAnchor = null;
    if (!r || !anchor || r.endPs - r.startPs <= 0) return;
    // A drag inside the tracks (shift+drag) selects the tracks it spans; on the ruler, all.
    let tracks: number[] | null = null;
    if (!anchor.allTracks) {
      const [y0, y1] = this.rangeCy;
      tracks = this.layout.tracks.filter((t) => t.y + t.h > y0 && t.y < y1 && t.track.kind === "slices")
        .map((t) => t.track.id);
      if (tracks.length === 0) tracks = null;
    }
    this.panel.showLoading("selection totals");
    fetchRange(this.opts.api, this.opts.target, r.startPs, r.endPs, tracks, this.lifetime.signal)
      .then((s) => this.panel.showRange(s))
      .catch((e: unknown) => this.panel.showError(e instanceof Error ? e.message : String(e)));
  }

  // --- search ----------------------------------------------------------------------------
  private async runSearch(query: string, direction: number, navigate = true): Promise<void> {
    if (!query) {
      this.search = null;
      this.searchCount.textContent = "";
      this.opts.setParams({ q: null });
      return;
    }
    if (this.search && this.search.query === query && direction !== 0) {
      await this.stepSearch(direction);
      return;
    }
    this.searchCount.textContent = "searching…";
    try {
      const page = await fetchSearch(this.opts.api, this.opts.target, query, 0, SEARCH_PAGE, this.lifetime.signal);
      this.search = { query, page, index: navigate ? 0 : -1 };
      this.opts.setParams({ q: query });
      if (page.total === 0) {
        this.searchCount.textContent = "no matches";
        return;
      }
      if (navigate) await this.gotoMatch(0);
      else this.searchCount.textContent = `${formatNumber(page.total)} matches`;
    } catch (e) {
      this.searchCount.textContent = e instanceof Error ? e.message : String(e);
    }
  }

  private async stepSearch(direction: number): Promise<void> {
    const s = this.search;
    if (!s) {
      await this.runSearch(this.searchInput.value.trim(), 0);
      return;
    }
    if (s.page.total === 0) return;
    const from = s.index < 0 && direction < 0 ? 0 : s.index;
    await this.gotoMatch((from + direction + s.page.total) % s.page.total);
  }

  private async gotoMatch(index: number): Promise<void> {
    const s = this.search;
    if (!s) return;
    if (index < s.page.offset || index >= s.page.offset + s.page.matches.length) {
      const offset = Math.floor(index / SEARCH_PAGE) * SEARCH_PAGE;
      s.page = await fetchSearch(this.opts.api, this.opts.target, s.query, offset, SEARCH_PAGE, this.lifetime.signal);
    }
    s.index = index;
    const m = s.page.matches[index - s.page.offset];
    this.searchCount.textContent = `${formatNumber(index + 1)} of ${formatNumber(s.page.total)}`;
    if (m) await this.selectEvent(m.plane, m.row, true);
  }
}
