// The URL-backed view state (see base/url_state.ts for the keys and encodings).
//
// The frame's own hash is the source of truth. Inside TensorBoard it is also mirrored into
// TensorBoard's hash as "p.tbprof.<key>", and read from there when the frame starts without
// one: that is how a TensorBoard link or a browser reload restores the view.

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
    window.addEventListener("hashchange", () => this.reload());
    window.addEventListener("popstate", () => this.reload());
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
    this.write(opts.push === true && !this.tb);
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

  private write(push: boolean): void {
    // An absolute URL: inside TensorBoard the frame has <base href="plugin/tbprof/">, which
    // would turn a bare "#..." into another path.
    const u = new URL(window.location.href);
    u.hash = serializeState(this.state);
    if (push) window.history.pushState(null, "", u.href);
    else window.history.replaceState(window.history.state, "", u.href);
    this.mirror();
  }

  private mirror(): void {
    if (!this.tb) return;
    try {
      const u = new URL(this.tb.location.href);
      u.hash = toTensorBoardHash(this.tb.location.hash, PLUGIN_NAME, this.state);
      // replaceState fires no hashchange, so TensorBoard does not re-route on our updates.
      this.tb.history.replaceState(this.tb.history.state, "", u.href);
    } catch {
      // TensorBoard went away or changed origin: the frame's own hash still holds the state.
    }
  }

  private emit(): void {
    for (const fn of this.listeners) fn();
  }
}
