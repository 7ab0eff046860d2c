// Keeps the frames the timeline draws: the first (whole-span) frame and the detail frame of
// the current view. When the view leaves what the detail frame covers (fetch_policy.ts), it
// asks for a padded window after a short pause, drops answers that a newer request made
// stale, and falls back to the first frame when the view zooms back out to it.

import { covers, paddedRequest, type WindowRequest } from "./model/fetch_policy";
import type { Frame } from "./model/frame";
import type { Viewport } from "./model/viewport";

/** Wheel zooms fire many events: wait this long after the last before asking. */
const FETCH_DEBOUNCE_MS = 60;

export interface LoaderHost {
  fetch(req: WindowRequest, signal: AbortSignal): Promise<Frame>;
  /** A new detail frame is in place (or the first frame again). */
  loaded(): void;
  failed(message: string): void;
}

export class WindowLoader {
  /** The first, whole-span frame: drawn wherever the detail frame has no data. */
  base: Frame | null = null;
  /** The frame of the current view. */
  frame: Frame | null = null;
  /** Answers received (tests and benchmarks count them). */
  fetches = 0;
  private timer: number | null = null;
  private pending: { key: string; ctl: AbortController } | null = null;

  constructor(private readonly host: LoaderHost) {}

  /** Sets the first frame (it is also the first detail frame). */
  start(first: Frame): void {
    this.base = first;
    this.frame = first;
    this.fetches++;
  }

  /** Asks for a window when the view needs one (call after every redraw). */
  follow(view: Viewport): void {
    const want = { startPs: view.startPs, endPs: view.endPs, widthPx: view.widthPx };
    if (covers(this.frame, want, view.spanPs)) return;
    if (this.base && this.base !== this.frame && covers(this.base, want, view.spanPs)) {
      // Zoomed back out to what the first frame shows: use it.
      this.frame = this.base;
      this.host.loaded();
      return;
    }
    if (this.timer !== null) window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => {
      this.timer = null;
      void this.load(paddedRequest({ startPs: view.startPs, endPs: view.endPs, widthPx: view.widthPx }, view.spanPs));
    }, FETCH_DEBOUNCE_MS);
  }

  dispose(): void {
    if (this.timer !== null) window.clearTimeout(this.timer);
    this.pending?.ctl.abort();
  }

  private async load(req: WindowRequest): Promise<void> {
    const key = JSON.stringify(req);
    if (this.pending?.key === key) return;
    this.pending?.ctl.abort();
    const ctl = new AbortController();
    this.pending = { key, ctl };
    try {
      const f = await this.host.fetch(req, ctl.signal);
      this.fetches++;
      if (!this.isCurrent(ctl)) return;
      this.frame = f;
      this.host.loaded();
    } catch (e) {
      if (!(e instanceof DOMException && e.name === "AbortError")) {
        this.host.failed(`Could not load the window: ${e instanceof Error ? e.message : String(e)}`);
      }
    } finally {
      if (this.isCurrent(ctl)) this.pending = null;
    }
  }

  private isCurrent(ctl: AbortController): boolean {
    return this.pending?.ctl === ctl;
  }
}
