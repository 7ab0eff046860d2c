// The trace viewer: owns the view (time window, vertical scroll, folded groups), the loaded
// frames, the selection and the search, and redraws on the next animation frame after any
// change. Data comes window by window from the backend (model/fetch_policy.ts).

import { ApiError, type Api } from "../data/api";
import { h } from "../widgets/dom";
import { isDark, watchTheme } from "../widgets/theme";
import { DetailsPanel } from "./details_panel";
import { attachControls, type ControlTarget } from "./interaction/controls";
import { keyHelpPanel } from "./interaction/key_help";
import {
  type EventDetails, fetchEvent, fetchRange, fetchSearch, fetchWindow, type LinkedEvent, type Target,
} from "./model/api";
import { type Frame, openingWindow } from "./model/frame";
import { describePick, frameAt, type Pick, pickIn } from "./model/picking";
import { nameMatcher, type SearchState } from "./model/search_paging";
import { statusText } from "./model/status_text";
import { parseSelection, parseWindow, selectionParam } from "./model/view_params";
import { Viewport } from "./model/viewport";
import { PanelSplitter } from "./panel_splitter";
import { parseOverlay } from "./model/overlay";
import { typedResult } from "../data/decode";
import { type Arrow, type EventRef, type Overlay, Renderer } from "./render/draw";
import { depthY, GROUP_H, hitY, LABEL_W, type Layout, layoutTracks, ROW_H, RULER_H, stickyGroup } from "./render/layout";
import { SearchBox } from "./search_box";
import { WindowLoader } from "./window_loader";

const DRAW_SAMPLES = 600;

export interface ViewerOptions {
  api: Api;
  target: Target;
  /** Reads and writes page state in the URL ("c.<key>"). */
  param(key: string): string | null;
  setParams(updates: Readonly<Record<string, string | null>>): void;
  /** A link that opens another tool's page with these options (the graph viewer of an HLO op). */
  toolLink?: (tool: string, options: Readonly<Record<string, string>>, label: string) => HTMLElement;
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

export class TraceViewer implements ControlTarget {
  readonly el: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  readonly scroller: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly status: HTMLElement;
  private readonly search: SearchBox;
  private readonly keyHelp: HTMLElement;
  private readonly keyHelpButton: HTMLButtonElement;
  private readonly panel: DetailsPanel;
  // Null only while the details panel is built (it reports its first, empty content then).
  private splitter: PanelSplitter | null = null;
  private readonly tooltip: HTMLElement;
  private readonly renderer: Renderer;
  private readonly lifetime = new AbortController();
  private view: Viewport | null = null;
  private layout: Layout = { groups: [], tracks: [], byTrack: new Map(), height: 0 };
  private readonly collapsed = new Set<number>();
  private selected: Selected | null = null;
  private arrows: Arrow[] = [];
  /** The critical path drawn over the trace (c.overlay=critical_path), once loaded. */
  private overlay: Overlay | null = null;
  private overlayStatus: "none" | "loading" | "ready" | "error" = "none";
  private range: { startPs: number; endPs: number } | null = null;
  private rangeAnchor: { ps: number; cy: number; allTracks: boolean } | null = null;
  private rangeCy: [number, number] = [0, 0];
  private hoverTrack: number | null = null;
  private drawQueued = false;
  private readonly loader: WindowLoader;
  private urlTimer: number | null = null;
  private detailsCtl: AbortController | null = null;
  private busy = false;
  /** Flow and launch arrows of the selected event drawn (toolbar checkbox, c.flows=0 when off). */
  private showFlows: boolean;
  private matcher: { state: SearchState; page: unknown; test: (name: string) => boolean } | null = null;
  readonly debug: TraceDebug;

  constructor(private readonly opts: ViewerOptions) {
    this.loader = new WindowLoader({
      fetch: (req, signal) => fetchWindow(this.opts.api, this.opts.target, req, signal),
      loaded: () => {
        this.updateStatus();
        this.requestDraw();
      },
      failed: (message) => {
        this.status.textContent = message;
      },
    });
    this.canvas = h("canvas", { class: "tbp-tv-canvas", "data-testid": "trace-canvas", tabindex: 0 });
    this.spacer = h("div", { class: "tbp-tv-spacer" });
    this.scroller = h("div", { class: "tbp-tv-scroller" }, this.canvas, this.spacer);
    this.status = h("span", { class: "tbp-tv-status tbp-muted", "data-testid": "trace-status" }, "Loading…");
    this.search = new SearchBox({
      fetchPage: (q, offset, limit) => fetchSearch(this.opts.api, this.opts.target, q, offset, limit, this.lifetime.signal),
      goTo: (m) => this.selectEvent(m.plane, m.row, true),
      changed: () => this.requestDraw(),
      setQueryParam: (q) => this.opts.setParams({ q }),
    });
    const button = (label: string, title: string, fn: () => void, testid: string): HTMLButtonElement =>
      h("button", { type: "button", class: "tbp-btn", title, "data-testid": testid, onclick: fn }, label);
    this.keyHelp = keyHelpPanel(() => this.closeKeyHelp());
    this.keyHelpButton = button("?", "Keys and mouse (?)", () => this.toggleKeyHelp(), "key-help-button");
    this.keyHelpButton.setAttribute("aria-expanded", "false");
    this.showFlows = opts.param("flows") !== "0";
    const flows = h("input", { type: "checkbox", "data-testid": "flows-toggle" });
    flows.checked = this.showFlows;
    flows.addEventListener("change", () => {
      this.showFlows = flows.checked;
      this.opts.setParams({ flows: flows.checked ? null : "0" });
      this.requestDraw();
    });
    const toolbar = h("div", { class: "tbp-tv-toolbar" },
      this.search.el,
      h("span", { class: "tbp-spacer" }),
      h("label", { class: "tbp-tv-flows", title: "Arrows from the selected event to the events it launched or flows to" },
        flows, " Flow arrows"),
      button("Fit", "Show the whole profile (0)", () => this.fitAll(), "fit"),
      button("Zoom to selection", "Zoom to the selected event or range (F)", () => this.zoomToSelection(), "zoom-selection"),
      this.keyHelpButton);
    this.panel = new DetailsPanel({
      select: (e) => void this.selectEvent(e.plane, e.row, true),
      zoomTo: (a, b) => this.zoomTo(a, b),
      toolLink: this.opts.toolLink,
      shown: (has) => {
        this.splitter?.contentChanged(has);
      },
    });
    this.tooltip = h("div", { class: "tbp-tv-tooltip", hidden: true, "data-testid": "trace-tooltip" });
    this.splitter = new PanelSplitter({
      scroller: this.scroller, panel: this.panel.el,
      param: (k) => this.opts.param(k), setParams: (u) => this.opts.setParams(u),
      resized: () => this.resized(),
    }, this.lifetime.signal);
    this.el = h("div", { class: "tbp-tv", "data-testid": "trace-viewer" }, toolbar, this.keyHelp, this.status, this.scroller,
      this.splitter.el, this.panel.el, this.tooltip);
    this.renderer = new Renderer(this.canvas);
    this.scroller.addEventListener("scroll", () => this.requestDraw(), { signal: this.lifetime.signal });
    attachControls(this, this.lifetime.signal);
    const unwatch = watchTheme(() => this.requestDraw());
    this.lifetime.signal.addEventListener("abort", unwatch);
    const ro = new ResizeObserver(() => this.resize());
    ro.observe(this.scroller);
    window.addEventListener("resize", () => this.resize(), { signal: this.lifetime.signal });
    this.lifetime.signal.addEventListener("abort", () => ro.disconnect());
    const loader = this.loader;
    this.debug = { drawMs: [], get fetches() { return loader.fetches; }, viewer: this };
    window.__tbprofTrace = this.debug;
  }

  dispose(): void {
    this.lifetime.abort();
    // A draw queued before the page was left would write this viewer's window into the next
    // page's URL 400 ms later (a trace viewer opened from a link would then show the old window).
    if (this.urlTimer !== null) window.clearTimeout(this.urlTimer);
    this.urlTimer = null;
    this.loader.dispose();
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
    this.loader.start(first);
    this.view = new Viewport(first.spanPs);
    this.view.widthPx = width;
    this.relayout();
    // The URL's window, else where the devices ran (not the profiler's start and stop around it).
    const win = parseWindow(this.opts.param("start"), this.opts.param("end")) ?? openingWindow(first);
    if (win) this.view.setWindow(win.startPs, win.endPs);
    this.updateStatus();
    this.requestDraw();
    if (this.opts.param("overlay") === "critical_path") void this.loadOverlay();
    const sel = parseSelection(this.opts.param("sel"));
    if (sel?.kind === "derived") void this.selectDerived(sel.track, sel.index);
    else if (sel?.kind === "event") void this.selectEvent(sel.plane, sel.row, false);
    const q = this.opts.param("q");
    if (q) {
      // Restore the search without moving to a match: the URL's selection stays selected.
      void this.search.restore(q, this.opts.param("sel") === null);
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

  /** The name tag beside the selected bar in the last drawn frame (null: none drawn). */
  selectionTag(): { text: string; x: number; y: number } | null {
    return this.selected ? this.renderer.selectionTag : null;
  }

  /** The selected time range, if any. */
  rangeSelection(): { startPs: number; endPs: number } | null {
    return this.range;
  }

  /** The selected event's plane and row, if any. */
  selection(): { plane: number; row: number } | null {
    return this.selected ? { plane: this.selected.plane, row: this.selected.row } : null;
  }

  /** The process groups in drawing order (tests read them: a PyTorch run's ranks, rank by rank). */
  groupNames(): string[] {
    return this.layout.groups.map((g) => g.group.name);
  }

  timelineWidth(): number {
    return Math.max(this.scroller.clientWidth - LABEL_W, 1);
  }

  /** Tracks shown whole in the timeline now (the browser tests check that ~20 fit at 1280×800). */
  visibleTrackCount(): number {
    const top = this.scroller.scrollTop;
    const bottom = top + this.scroller.clientHeight - RULER_H;
    return this.layout.tracks.filter((t) => t.y >= top && t.y + t.h <= bottom).length;
  }

  private resize(): void {
    this.splitter?.apply();
  }

  /** The splitter set new heights. */
  private resized(): void {
    if (this.view) this.view.widthPx = this.timelineWidth();
    this.relayoutSpacer();
    this.requestDraw();
  }

  toggleKeyHelp(): void {
    this.keyHelp.hidden = !this.keyHelp.hidden;
    this.keyHelpButton.setAttribute("aria-expanded", String(!this.keyHelp.hidden));
    this.resize();
  }

  closeKeyHelp(): boolean {
    if (this.keyHelp.hidden) return false;
    this.toggleKeyHelp();
    return true;
  }

  private relayout(): void {
    const f = this.loader.base;
    if (!f) return;
    this.layout = layoutTracks(f.groups, f.tracks, this.collapsed);
    this.relayoutSpacer();
  }

  /** The spacer gives the scroller the layout's height (the canvas is sticky on top of it). */
  private relayoutSpacer(): void {
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
    if (!view || this.lifetime.signal.aborted) return;
    const w = this.scroller.clientWidth;
    const hgt = this.scroller.clientHeight;
    view.widthPx = Math.max(w - LABEL_W, 1);
    this.renderer.resize(w, hgt);
    const t0 = performance.now();
    this.renderer.draw({
      frame: this.loader.frame, base: this.loader.base, view, layout: this.layout, scrollY: this.scroller.scrollTop,
      widthCss: w, heightCss: hgt, dark: isDark(), selected: this.selected, range: this.range,
      arrows: this.showFlows ? this.arrows : [], hoverTrack: this.hoverTrack, highlight: this.highlight(),
      marks: this.matcher ? (this.search.current()?.page.matches ?? []) : [],
      overlay: this.overlay,
    });
    const ms = performance.now() - t0;
    this.debug.drawMs.push(ms);
    if (this.debug.drawMs.length > DRAW_SAMPLES) this.debug.drawMs.shift();
    this.loader.follow(view);
    this.scheduleUrl();
  }

  /** The search's name test, the same function while the search and its loaded page stay. */
  private highlight(): ((name: string) => boolean) | null {
    const s = this.search.current();
    if (!s || s.page.total === 0) {
      this.matcher = null;
      return null;
    }
    if (this.matcher?.state !== s || this.matcher.page !== s.page) this.matcher = { state: s, page: s.page, test: nameMatcher(s) };
    return this.matcher.test;
  }

  /** Arrows drawn now (browser tests: the flow toggle). */
  drawnArrowCount(): number {
    return this.showFlows ? this.arrows.length : 0;
  }

  /** The overlay's state, its size and what the last frame drew of it (browser tests). */
  overlayInfo(): { status: string; events: number; arrows: number; drawnEvents: number; drawnArrows: number } {
    return {
      status: this.overlayStatus, events: this.overlay?.events.length ?? 0, arrows: this.overlay?.arrows.length ?? 0,
      drawnEvents: this.renderer.overlayDrawn.events, drawnArrows: this.renderer.overlayDrawn.arrows,
    };
  }

  /**
   * Asks the critical_path tool for this host's path (its options from c.cp_annotation,
   * c.cp_instance, c.cp_step, c.cp_times, c.cp_hta_compat) and draws its events outlined, joined by arrows.
   */
  private async loadOverlay(): Promise<void> {
    this.overlayStatus = "loading";
    const options: Record<string, string> = {};
    for (const k of ["annotation", "instance", "step", "times", "hta_compat"]) {
      const v = this.opts.param(`cp_${k}`);
      if (v !== null && v !== "") options[k] = v;
    }
    try {
      const result = await this.opts.api.data({ run: this.opts.target.run, host: this.opts.target.host, tool: "critical_path", options },
        1, this.lifetime.signal);
      this.overlay = parseOverlay(typedResult("critical_path", result).raw.overlay, this.loader.base?.tracks ?? []);
      this.overlayStatus = "ready";
    } catch (e) {
      if (this.lifetime.signal.aborted) return;
      this.overlayStatus = "error";
      this.status.textContent = `Critical path overlay unavailable: ${e instanceof Error ? e.message : String(e)}`;
    }
    this.requestDraw();
  }

  /** Whether the timeline fades what the search does not match. */
  highlighting(): boolean {
    return this.highlight() !== null;
  }

  private updateStatus(): void {
    if (this.loader.frame) this.status.textContent = statusText(this.loader.frame.counts);
  }

  private scheduleUrl(): void {
    if (this.urlTimer !== null || this.lifetime.signal.aborted) return;
    this.urlTimer = window.setTimeout(() => {
      this.urlTimer = null;
      const v = this.view;
      if (!v || this.busy) return;
      this.opts.setParams({ start: String(Math.round(v.startPs)), end: String(Math.round(v.endPs)) });
    }, 400);
  }

  zoomAt(x: number, factor: number): void {
    this.view?.zoomAt(x, factor);
    this.viewMoved();
  }

  pan(dxPx: number): void {
    this.view?.panPx(dxPx);
    this.viewMoved();
  }

  scrollBy(dy: number): void {
    if (dy) this.scroller.scrollTop += dy;
    this.viewMoved();
  }

  /**
   * The timeline moved under a still pointer (keys, wheel, a search jump): the hover tooltip
   * describes what was there before, so it goes until the pointer moves again.
   */
  private viewMoved(): void {
    this.tooltip.hidden = true;
    this.requestDraw();
  }

  interacting(on: boolean): void {
    this.busy = on;
    if (!on) this.scheduleUrl();
  }

  fitAll(): void {
    this.view?.fitAll();
    this.viewMoved();
  }

  zoomTo(startPs: number, endPs: number): void {
    this.view?.show(startPs, endPs, 0.05);
    this.viewMoved();
  }

  zoomToSelection(): void {
    if (this.range) this.zoomTo(this.range.startPs, this.range.endPs);
    else if (this.selected) this.zoomTo(this.selected.startPs, this.selected.startPs + Math.max(this.selected.durPs, 1000));
  }

  clearSelection(): void {
    this.selected = null;
    this.arrows = [];
    this.range = null;
    this.panel.showEmpty();
    this.opts.setParams({ sel: null });
    this.requestDraw();
  }

  hover(at: { x: number; cy: number; clientX: number; clientY: number } | null): void {
    let track: number | null = null;
    let tip = "";
    if (at !== null) {
      const hit = hitY(this.layout, at.cy);
      if (hit.kind === "track") track = hit.row.track.id;
      if (at.x >= 0) tip = describePick(this.pick(at.x, at.cy));
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

  /** What is drawn at timeline x / content y: an event, a density box or a counter sample. */
  private pick(x: number, contentY: number): Pick | null {
    const hit = hitY(this.layout, contentY);
    const view = this.view;
    if (hit.kind !== "track" || !view) return null;
    const ps = view.psOf(x);
    const f = frameAt(this.loader.frame, this.loader.base, ps);
    if (!f) return null;
    return pickIn(f, { track: hit.row.track.id, trackKind: hit.row.track.kind, depth: hit.depth, ps, tolerancePs: 2 * view.psPerPx });
  }

  // --- picking ---------------------------------------------------------------------------
  click(x: number, contentY: number, labelArea: boolean): void {
    // A click on the pinned header folds that group, not the track scrolled under it.
    const pin = stickyGroup(this.layout, this.scroller.scrollTop);
    const screenY = contentY - this.scroller.scrollTop;
    const hit = pin && screenY >= pin.offset && screenY < pin.offset + GROUP_H
      ? { kind: "group" as const, group: pin.group } : hitY(this.layout, contentY);
    if (hit.kind === "group") {
      const id = hit.group.group.id;
      if (this.collapsed.has(id)) this.collapsed.delete(id);
      else this.collapsed.add(id);
      this.relayout();
      // Folded from its pinned header: show the folded header where the user was looking.
      if (pin?.group === hit.group) this.scroller.scrollTop = hit.group.y;
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
      this.panel.showCounter(hit.row.track.name, describePick(p));
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
    this.selected = { track: e.track, startPs: e.startPs, durPs: e.durPs, depth: e.depth, plane: e.plane, row, name: e.name };
    this.arrows = this.arrowsOf(d);
    this.panel.showEvent(d);
    this.opts.setParams({
      sel: selectionParam(plane === null ? { kind: "derived", track: e.track, index: row } : { kind: "event", plane, row }),
    });
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
    const track = this.loader.base?.tracks.find((t) => t.id === e.track);
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
    this.viewMoved();
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
}
