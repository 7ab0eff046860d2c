// The trace viewer's search over the whole trace, as plain state: the backend answers pages
// of matches (trace_search: offset, limit, total), the viewer steps through them one by one,
// wrapping at either end, and fetches the page that holds the next match when it is not
// loaded. DOM-free, so vitest covers the arithmetic at page edges.

import { formatNumber } from "../../base/format";
import type { LinkedEvent, SearchPage } from "./api";

/** Matches per request: one request per 100 steps through the matches. */
export const SEARCH_PAGE_SIZE = 100;

export interface SearchState {
  query: string;
  page: SearchPage;
  /** The current match (0-based over all matches), -1 before the first step (restored from the URL). */
  index: number;
}

/**
 * The match after stepping `direction` (+1 / -1) from the current one, wrapping around; null
 * when there is nothing to step to. Before the first step, +1 goes to the first match and -1
 * to the last.
 */
export function stepIndex(s: SearchState, direction: number): number | null {
  const total = s.page.total;
  if (total <= 0) return null;
  const from = s.index < 0 && direction < 0 ? 0 : s.index;
  return (((from + direction) % total) + total) % total;
}

/** Whether match `index` is on the loaded page. */
export function onPage(page: SearchPage, index: number): boolean {
  return index >= page.offset && index < page.offset + page.matches.length;
}

/** The offset of the page that holds match `index` (pages start at multiples of the size). */
export function pageOffset(index: number, pageSize = SEARCH_PAGE_SIZE): number {
  return Math.floor(index / pageSize) * pageSize;
}

/** Match `index` if its page is loaded. */
export function matchAt(page: SearchPage, index: number): LinkedEvent | null {
  return onPage(page, index) ? (page.matches[index - page.offset] ?? null) : null;
}

/** What the count beside the search box says. */
export function countText(s: SearchState | null): string {
  if (!s) return "";
  if (s.page.total === 0) return "no matches";
  if (s.index < 0) return `${formatNumber(s.page.total)} matches`;
  return `${formatNumber(s.index + 1)} of ${formatNumber(s.page.total)}`;
}

/** The loaded matches on one track, for highlighting them on the timeline. */
export function matchesOnTrack(page: SearchPage | null, track: number): LinkedEvent[] {
  return page ? page.matches.filter((m) => m.track === track) : [];
}

/**
 * Which event names the timeline shows as matches while a search is active. The backend
 * matches names, display names and string stats (case-insensitive); the frame only has names,
 * so an event counts when its name contains the query or is the name of a loaded match (which
 * covers matches by a stat, for the page of matches at hand).
 */
export function nameMatcher(s: SearchState): (name: string) => boolean {
  const needle = s.query.toLowerCase();
  const names = new Set(s.page.matches.map((m) => m.name));
  return (name) => names.has(name) || name.toLowerCase().includes(needle);
}
