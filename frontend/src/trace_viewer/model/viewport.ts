// The visible time window and its mapping to pixels; zoom and pan as chrome://tracing does
// (zoom keeps the time under the cursor fixed). DOM-free, so vitest covers it.

/** The narrowest window: 100 ps over the whole width (a picosecond grid is the data's limit). */
export const MIN_SPAN_PS = 100;

export class Viewport {
  startPs = 0;
  endPs = 1;
  /** Pixels of the timeline area (canvas width minus the track label column). */
  widthPx = 1;

  constructor(
    /** The profile's span: [0, spanPs) holds every event. */
    public spanPs: number,
  ) {
    this.endPs = Math.max(spanPs, MIN_SPAN_PS);
  }

  get durationPs(): number {
    return this.endPs - this.startPs;
  }

  get psPerPx(): number {
    return this.durationPs / Math.max(this.widthPx, 1);
  }

  xOf(ps: number): number {
    return ((ps - this.startPs) / this.durationPs) * this.widthPx;
  }

  psOf(x: number): number {
    return this.startPs + (x / Math.max(this.widthPx, 1)) * this.durationPs;
  }

  /** Sets the window, keeping it at least MIN_SPAN_PS wide and around the profile (a 10 % margin). */
  setWindow(startPs: number, endPs: number): void {
    const margin = this.spanPs * 0.1;
    let dur = Math.max(endPs - startPs, MIN_SPAN_PS);
    dur = Math.min(dur, this.spanPs + 2 * margin);
    let start = startPs + (endPs - startPs - dur) / 2;
    start = Math.min(Math.max(start, -margin), this.spanPs + margin - dur);
    this.startPs = start;
    this.endPs = start + dur;
  }

  /** Zooms by `factor` (> 1 zooms in) keeping the time under x fixed. */
  zoomAt(x: number, factor: number): void {
    const anchor = this.psOf(x);
    const dur = this.durationPs / factor;
    const frac = x / Math.max(this.widthPx, 1);
    this.setWindow(anchor - frac * dur, anchor - frac * dur + dur);
  }

  /** Pans by dx pixels (positive moves the view to later times). */
  panPx(dx: number): void {
    const d = dx * this.psPerPx;
    this.setWindow(this.startPs + d, this.endPs + d);
  }

  fitAll(): void {
    this.setWindow(0, this.spanPs);
  }

  /** Shows [startPs, endPs) with `pad` of its duration on each side. */
  show(startPs: number, endPs: number, pad = 0.1): void {
    const dur = Math.max(endPs - startPs, MIN_SPAN_PS);
    this.setWindow(startPs - dur * pad, endPs + dur * pad);
  }

  /** Centres `ps` keeping the zoom. */
  centre(ps: number): void {
    const half = this.durationPs / 2;
    this.setWindow(ps - half, ps + half);
  }
}

const TICK_STEPS = [1, 2, 5];

/** A "nice" tick interval (1, 2 or 5 × 10^k ps) giving ticks at least `minPx` apart. */
export function tickInterval(psPerPx: number, minPx = 90): number {
  const raw = psPerPx * minPx;
  let scale = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
  for (;;) {
    for (const s of TICK_STEPS) if (s * scale >= raw) return s * scale;
    scale *= 10;
  }
}
