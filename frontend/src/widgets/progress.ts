// "converting hosts: k / N" under a loading message while the backend converts a pod.

import type { Progress } from "../data/types";
import { h } from "./dom";

/** How often a waiting page asks ``GET progress`` (a pod's hosts convert in tens of ms each). */
export const PROGRESS_POLL_MS = 300;

/** The line to show, or null when there is nothing to report (one host, or all converted). */
export function progressText(p: Progress): string | null {
  if (p.hostsTotal < 2 || p.hostsConverted >= p.hostsTotal) return null;
  return `converting hosts: ${p.hostsConverted} / ${p.hostsTotal}`;
}

/**
 * Polls `poll` every PROGRESS_POLL_MS and writes its progress into `box` (a loading message),
 * until `signal` aborts or `box` leaves the page (the answer arrived and replaced it). A failed
 * poll only ends the polling: the page's own request reports errors.
 */
export function watchProgress(box: HTMLElement, poll: (signal: AbortSignal) => Promise<Progress>, signal: AbortSignal): void {
  const line = h("p", { class: "tbp-progress", "aria-live": "polite" });
  line.hidden = true;
  box.appendChild(line);
  // A function, not a condition: the page may have moved on during the await.
  const over = (): boolean => signal.aborted || !box.isConnected;
  const tick = async (): Promise<void> => {
    if (over()) return;
    let p: Progress;
    try {
      p = await poll(signal);
    } catch {
      return;
    }
    if (over()) return;
    const text = progressText(p);
    line.hidden = text === null;
    line.textContent = text ?? "";
    window.setTimeout(() => void tick(), PROGRESS_POLL_MS);
  };
  window.setTimeout(() => void tick(), PROGRESS_POLL_MS);
}
