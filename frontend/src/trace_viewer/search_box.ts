// The toolbar's search over the whole trace: a text box, previous / next, and the count.
// Paging arithmetic lives in model/search_paging.ts; this holds the DOM and the requests.

import { h } from "../widgets/dom";
import type { LinkedEvent, SearchPage } from "./model/api";
import { countText, matchAt, onPage, pageOffset, SEARCH_PAGE_SIZE, type SearchState, stepIndex } from "./model/search_paging";

export interface SearchHost {
  fetchPage(query: string, offset: number, limit: number): Promise<SearchPage>;
  /** Selects and reveals a match. */
  goTo(match: LinkedEvent): Promise<void>;
  /** The search changed (new matches loaded or cleared): redraw the highlights. */
  changed(): void;
  setQueryParam(q: string | null): void;
}

export class SearchBox {
  readonly input: HTMLInputElement;
  readonly el: HTMLElement;
  private readonly count: HTMLElement;
  private state: SearchState | null = null;
  /** Bumped by every new query, so an older answer arriving late is dropped. */
  private generation = 0;

  constructor(private readonly host: SearchHost) {
    this.input = h("input", {
      type: "search", class: "tbp-tv-search", placeholder: "Search names, ops, kernels (whole trace)",
      "aria-label": "Search events", "data-testid": "trace-search",
    });
    this.count = h("span", { class: "tbp-tv-count tbp-muted", "data-testid": "search-count" });
    const button = (label: string, title: string, direction: number, testid: string): HTMLButtonElement =>
      h("button", { type: "button", class: "tbp-btn", title, "data-testid": testid, onclick: () => void this.step(direction) }, label);
    this.el = h("span", { class: "tbp-tv-searchbox" }, this.input,
      button("◀", "Previous match (shift+Enter)", -1, "search-prev"), button("▶", "Next match (Enter)", 1, "search-next"), this.count);
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") void this.run(this.input.value.trim(), e.shiftKey ? -1 : 1);
      if (e.key === "Escape" && this.input.value) {
        this.input.value = "";
        void this.run("", 0);
        e.stopPropagation();
      }
    });
    // Clearing the box (its × button or deleting the text) clears the highlights at once.
    this.input.addEventListener("input", () => {
      if (this.input.value.trim() === "" && this.state) void this.run("", 0);
    });
  }

  /** The query whose matches are loaded, and the loaded page (for highlighting). */
  current(): SearchState | null {
    return this.state;
  }

  /** Restores a search from the URL without moving to a match when `navigate` is false. */
  async restore(query: string, navigate: boolean): Promise<void> {
    this.input.value = query;
    await this.run(query, 0, navigate);
  }

  async run(query: string, direction: number, navigate = true): Promise<void> {
    const gen = ++this.generation;
    if (!query) {
      this.state = null;
      this.count.textContent = "";
      this.host.setQueryParam(null);
      this.host.changed();
      return;
    }
    if (this.state && this.state.query === query && direction !== 0) {
      await this.step(direction);
      return;
    }
    this.count.textContent = "searching…";
    try {
      const page = await this.host.fetchPage(query, 0, SEARCH_PAGE_SIZE);
      if (gen !== this.generation) return;
      this.state = { query, page, index: -1 };
      this.host.setQueryParam(query);
      this.host.changed();
      this.count.textContent = countText(this.state);
      // Forward starts at the first device match: a kernel's name is on its CPU launch too,
      // earlier in time, and the kernel is what was searched for.
      if (navigate && page.total > 0) await this.goto(direction < 0 ? page.total - 1 : (page.firstDeviceOffset ?? 0));
    } catch (e) {
      if (gen === this.generation && !(e instanceof DOMException && e.name === "AbortError")) {
        this.count.textContent = e instanceof Error ? e.message : String(e);
      }
    }
  }

  async step(direction: number): Promise<void> {
    const s = this.state;
    if (!s || s.query !== this.input.value.trim()) {
      await this.run(this.input.value.trim(), direction || 1);
      return;
    }
    const next = stepIndex(s, direction);
    if (next !== null) await this.goto(next);
  }

  private async goto(index: number): Promise<void> {
    const s = this.state;
    if (!s) return;
    if (!onPage(s.page, index)) {
      const gen = this.generation;
      const page = await this.host.fetchPage(s.query, pageOffset(index), SEARCH_PAGE_SIZE);
      if (gen !== this.generation) return;
      s.page = page;
      this.host.changed();
    }
    s.index = index;
    this.count.textContent = countText(s);
    const m = matchAt(s.page, index);
    if (m) await this.host.goTo(m);
  }
}
