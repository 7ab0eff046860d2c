// When to ask the backend for another window, and which one (Perfetto's approach): fetch
// three times the visible span at the screen's resolution, so panning draws from memory;
// refetch when the view leaves that window or is zoomed in so far that its density boxes
// would be wider than 1.5 pixels. The server rounds the resolution down to a power of two
// and its boxes sit on a global grid; the request edges are rounded to a grid of 64 buckets
// so that small pans reuse a cached answer.

export interface WindowRequest {
  /** null: the whole span (the same request as the first one, so the server's cache answers). */
  startPs: number | null;
  endPs: number | null;
  widthPx: number;
}

export interface LoadedWindow {
  startPs: number;
  endPs: number;
  resolutionPs: number;
}

export interface ViewWindow {
  startPs: number;
  endPs: number;
  widthPx: number;
}

const COARSEST_BOX_PX = 1.5;
const PAD = 1; // visible spans added on each side

export function pow2Floor(x: number): number {
  return x < 1 ? 1 : Math.pow(2, Math.floor(Math.log2(x)));
}

export function covers(loaded: LoadedWindow | null, view: ViewWindow, spanPs: number): boolean {
  if (loaded === null) return false;
  const psPerPx = (view.endPs - view.startPs) / Math.max(view.widthPx, 1);
  const needStart = Math.max(view.startPs, 0);
  const needEnd = Math.min(view.endPs, spanPs);
  return loaded.startPs <= needStart && loaded.endPs >= needEnd && loaded.resolutionPs <= COARSEST_BOX_PX * psPerPx;
}

export function paddedRequest(view: ViewWindow, spanPs: number): WindowRequest {
  const dur = view.endPs - view.startPs;
  const psPerPx = dur / Math.max(view.widthPx, 1);
  const grid = pow2Floor(psPerPx) * 64;
  let start = Math.floor((view.startPs - PAD * dur) / grid) * grid;
  let end = Math.ceil((view.endPs + PAD * dur) / grid) * grid;
  start = Math.max(start, 0);
  end = Math.min(end, spanPs);
  const widthPx = Math.max(1, Math.round((view.widthPx * (end - start)) / dur));
  if (start <= 0 && end >= spanPs) {
    // The whole profile: ask exactly as the first view did (same width) when the zoom matches.
    return { startPs: null, endPs: null, widthPx };
  }
  return { startPs: start, endPs: end, widthPx };
}
