// The URL-backed view state (see base/url_state.ts for the keys and encodings).
//
// The frame's own hash is the source of truth. Inside TensorBoard it is also mirrored into
// TensorBoard's hash as "p.tbprof.<key>", and read from there when the frame starts without
// one: that is how a TensorBoard link or a browser reload restores the view.
//
// Inside TensorBoard the history entries belong to TensorBoard's window: a tool/run/host
// change pushes an entry there (the frame only replaces its own, so Back needs one press, not
// two), and the frame follows TensorBoard's hashchange/popstate, so Back/Forward and a tbprof
// link pasted into a tab already on TensorBoard change the view, not only the address.

import {
  fromTensorBoardHash,
  parseHash,
  serializeState,
  subState,
  toTensorBoardHash,
  type ViewState,
  withUpdates,
} from "../base/url_state";

export const PLUGIN_NAME = "tbprof";

type Listener = () => void;

/** TensorBoard's window when this page is its plugin frame (same origin), else null. */
export function tensorBoardWindow(): Window | null {
  try {
    if (window.parent === window) return null;
    const parent = window.parent;
    // Accessing the parent's document throws when it is cross-origin.
    return parent.document.querySelector("tb-webapp") !== null ? parent : null;
  } catch {
    return null;
  }
}

export interface UpdateOptions {
  /** A new history entry (run/tool changes) instead of replacing the current one. */
  push?: boolean;
  /** Do not notify listeners (the caller already shows the new state). */
  silent?: boolean;
}

export class StateStore {
  private state: Map<string, string>;
  private readonly listeners = new Set<Listener>();
  private readonly tb: Window | null;

  constructor() {
    this.tb = tensorBoardWindow();
    const own = parseHash(window.location.hash);
    this.state = own.size === 0 && this.tb ? fromTensorBoardHash(this.tb.location.hash, PLUGIN_NAME) : own;
    // Read from TensorBoard's hash: the frame's own hash holds it too, as after every change.
    if (own.size === 0 && this.state.size > 0) this.writeOwn(false);
    window.addEventListener("hashchange", () => this.reload());
    window.addEventListener("popstate", () => this.reload());
    if (this.tb) this.followTensorBoard(this.tb);
  }

  get insideTensorBoard(): boolean {
    return this.tb !== null;
  }

  get(key: string): string | null {
    return this.state.get(key) ?? null;
  }

  /** Keys under `prefix` ("t.ops." -> {"sort": ...}). */
  sub(prefix: string): Map<string, string> {
    return subState(this.state, prefix);
  }

  snapshot(): ViewState {
    return new Map(this.state);
  }

  onChange(fn: Listener): void {
    this.listeners.add(fn);
  }

  update(updates: Readonly<Record<string, string | null | undefined>>, opts: UpdateOptions = {}): void {
    const next = withUpdates(this.state, updates);
    if (serializeState(next) === serializeState(this.state)) return;
    this.state = next;
    this.write(opts.push === true);
    if (!opts.silent) this.emit();
  }

  /** A full URL of this page showing `state` (for <a href> of in-app links). */
  hrefFor(state: ViewState): string {
    const u = new URL(window.location.href);
    u.hash = serializeState(state);
    return u.href;
  }

  private reload(): void {
    const own = parseHash(window.location.hash);
    if (serializeState(own) === serializeState(this.state)) return;
    this.state = own;
    this.mirror();
    this.emit();
  }

  /** TensorBoard's Back/Forward or an edited address: the view follows TensorBoard's hash. */
  private followTensorBoard(tb: Window): void {
    const onParent = (): void => {
      let hash: string;
      try {
        hash = tb.location.hash;
      } catch {
        return;
      }
      // Another dashboard's tab ("#timeseries"): TensorBoard hides this frame; keep the view.
      const tab = (hash.startsWith("#") ? hash.slice(1) : hash).split("&")[0] ?? "";
      if (tab !== "" && tab !== PLUGIN_NAME) return;
      const theirs = fromTensorBoardHash(hash, PLUGIN_NAME);
      if (serializeState(theirs) === serializeState(this.state)) return;
      this.state = theirs;
      this.writeOwn(false);
      this.emit();
    };
    tb.addEventListener("hashchange", onParent);
    tb.addEventListener("popstate", onParent);
    // The frame can go before TensorBoard does (a dashboard switch or a reload of the frame).
    window.addEventListener("pagehide", () => {
      try {
        tb.removeEventListener("hashchange", onParent);
        tb.removeEventListener("popstate", onParent);
      } catch {
        // TensorBoard went away first.
      }
    });
  }

  private write(push: boolean): void {
    // Inside TensorBoard the entry is pushed in TensorBoard's window only (see the header).
    this.writeOwn(push && !this.tb);
    this.mirror(push);
  }

  private writeOwn(push: boolean): void {
    // An absolute URL: inside TensorBoard the frame has <base href="plugin/tbprof/">, which
    // would turn a bare "#..." into another path.
    const u = new URL(window.location.href);
    u.hash = serializeState(this.state);
    if (push) window.history.pushState(null, "", u.href);
    else window.history.replaceState(window.history.state, "", u.href);
  }

  private mirror(push = false): void {
    if (!this.tb) return;
    try {
      const u = new URL(this.tb.location.href);
      u.hash = toTensorBoardHash(this.tb.location.hash, PLUGIN_NAME, this.state);
      // pushState/replaceState fire no hashchange, so TensorBoard does not re-route on our
      // updates (and our own listener does not see them either).
      if (push) this.tb.history.pushState(this.tb.history.state, "", u.href);
      else this.tb.history.replaceState(this.tb.history.state, "", u.href);
    } catch {
      // TensorBoard went away or changed origin: the frame's own hash still holds the state.
    }
  }

  private emit(): void {
    for (const fn of this.listeners) fn();
  }
}
