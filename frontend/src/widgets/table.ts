// The data table: sort by any column, a regex / comparison filter per column, units in the
// header, server-side paging, "Export CSV" of exactly the rows on screen and a link to the
// backend's CSV of the whole (filtered, sorted) table.
//
// Sorting, filtering and paging always go to the backend (the `table` route): its Python
// regex and sort order are the ones the CSV route uses, so what the table shows and what a
// CSV download holds never disagree, and a 100 k-row table never comes to the browser.
//
// Wide tables (table_columns.ts): key columns first where the page asks for it, the leading
// columns through the name stay when scrolling sideways, long names are cut with the full
// text in a tooltip, and a column chooser hides columns (kept in the URL). "Export CSV" keeps
// every column in the backend's order, like the full-table CSV.

import { toCsv } from "../base/csv";
import type { TableData, TableQuery } from "../data/types";
import { clear, downloadText, h } from "./dom";
import {
  cellText,
  filterPlaceholder,
  headerLabel,
  isDefaultView,
  nextSort,
  pageCount,
  rowRangeLabel,
  type TableView,
  toQuery,
  withFilter,
} from "./table_model";
import { keyFirstOrder, nameColumnIndex, shownOrder, stickyCount } from "./table_columns";

export interface DataTableOptions {
  /** The table's name in the tool result (also its data-table attribute). */
  name: string;
  title: string;
  /** The table as the tool result carried it: the first rows in default order. */
  initial: TableData;
  view: TableView;
  pageSize: number;
  fetchRows: (q: TableQuery, signal: AbortSignal) => Promise<TableData>;
  onViewChange: (view: TableView) => void;
  /** CSV file name for the shown rows, without ".csv". */
  csvName: string;
  /** The backend's CSV of the whole table under a query; none: no "Full table" link (a table
   * whose rows are all in the browser exports them itself). */
  fullCsvUrl?: (q: TableQuery) => string;
  /** Optional extra content per cell (e.g. links); gets the default text node. */
  decorateCell?: (td: HTMLTableCellElement, row: readonly unknown[], column: number) => void;
  description?: string;
  /** Show the name, occurrences, total and self time columns first (wide op and kernel tables). */
  keyColumnsFirst?: boolean;
  /** Text columns shown whole, wrapped over lines, instead of cut to one line. */
  wrapColumns?: readonly string[];
  /** Columns never shown (internal keys); still in the CSV downloads. */
  omitColumns?: readonly string[];
  /** Names of the columns the user hid, and where to keep a change (the URL). */
  hidden?: readonly string[];
  onHiddenChange?: (hidden: string[]) => void;
}

const FILTER_DEBOUNCE_MS = 350;

export class DataTable {
  readonly el: HTMLElement;
  private view: TableView;
  private data: TableData;
  private readonly tbody: HTMLTableSectionElement;
  private readonly headRow: HTMLTableRowElement;
  private readonly filterRow: HTMLTableRowElement;
  private readonly countEl: HTMLElement;
  private readonly statusEl: HTMLElement;
  private readonly pagerEl: HTMLElement;
  private readonly fullCsv: HTMLAnchorElement;
  private readonly chooser: HTMLDetailsElement;
  private hidden: string[];
  /** Shown columns (indices into data.columns) in display order, and how many stay put. */
  private shown: number[] = [];
  private sticky = 0;
  private stickyFrame = 0;
  private inflight: AbortController | null = null;
  private seq = 0;
  private filterTimer: ReturnType<typeof setTimeout> | null = null;
  private filterColumn: string | null = null;
  /** Resolves when the rows for the current view are on screen (tests, chained UI). */
  ready: Promise<void> = Promise.resolve();

  constructor(private readonly opts: DataTableOptions) {
    this.view = opts.view;
    this.data = opts.initial;
    this.hidden = [...(opts.hidden ?? [])];
    this.chooser = h("details", { class: "tbp-colchooser", "data-column-chooser": "" });
    this.countEl = h("span", { class: "tbp-table-count" });
    this.statusEl = h("div", { class: "tbp-table-status", role: "status" });
    this.pagerEl = h("div", { class: "tbp-pager" });
    this.fullCsv = h("a", { class: "tbp-link", title: "The whole table with this filter and sort, from the server" }, "Full table (CSV)");
    const exportBtn = h("button", { type: "button", class: "tbp-btn", title: "Download the rows shown below" }, "Export CSV");
    exportBtn.addEventListener("click", () => this.exportShown());
    this.headRow = h("tr");
    this.filterRow = h("tr", { class: "tbp-filter-row" });
    this.tbody = h("tbody");
    const table = h("table", { class: "tbp-table" }, h("thead", {}, this.headRow, this.filterRow), this.tbody);
    this.el = h(
      "section",
      { class: "tbp-table-widget", "data-table": opts.name },
      h(
        "div",
        { class: "tbp-table-head" },
        h("h3", {}, opts.title),
        this.countEl,
        h("span", { class: "tbp-spacer" }),
        this.chooser,
        exportBtn,
        this.fullCsv,
      ),
      opts.description ? h("p", { class: "tbp-muted" }, opts.description) : null,
      h("div", { class: "tbp-table-scroll" }, table),
      this.pagerEl,
      this.statusEl,
    );
    this.buildHeader();
    const initialCovers = opts.initial.rows.length >= Math.min(opts.pageSize, opts.initial.totalRows);
    if (isDefaultView(this.view) && initialCovers) {
      this.data = { ...opts.initial, rows: opts.initial.rows.slice(0, opts.pageSize) };
      this.renderBody();
    } else {
      this.renderBody();
      this.ready = this.load();
    }
  }

  get currentView(): TableView {
    return this.view;
  }

  /** The rows on screen, as the backend sent them (raw values, not display text). */
  get shownRows(): TableData {
    return this.data;
  }

  dispose(): void {
    cancelAnimationFrame(this.stickyFrame);
    this.inflight?.abort();
    if (this.filterTimer !== null) clearTimeout(this.filterTimer);
  }

  /** Display order and sticky columns for the current columns and hidden list. */
  /** Display order of every column that may show (omitted ones left out). */
  private columnOrder(): number[] {
    const cols = this.data.columns;
    const omit = new Set(this.opts.omitColumns ?? []);
    const order = this.opts.keyColumnsFirst ? keyFirstOrder(cols) : cols.map((_, i) => i);
    return order.filter((i) => !omit.has(cols[i]?.name ?? ""));
  }

  private computeColumns(): void {
    const cols = this.data.columns;
    const order = this.columnOrder();
    this.shown = shownOrder(cols, order, this.hidden);
    this.sticky = stickyCount(cols, this.shown);
  }

  private buildChooser(): void {
    clear(this.chooser);
    const cols = this.data.columns;
    const name = nameColumnIndex(cols);
    const order = this.columnOrder();
    const hiddenCount = order.length - this.shown.length;
    this.chooser.appendChild(h("summary", { class: "tbp-btn", title: "Choose the columns to show" },
      hiddenCount > 0 ? `Columns (${hiddenCount} hidden)` : "Columns"));
    const list = h("div", { class: "tbp-colchooser-list" });
    for (const i of order) {
      const col = cols[i];
      if (!col) continue;
      const box = h("input", { type: "checkbox", "data-column": col.name, disabled: i === name });
      box.checked = this.shown.includes(i);
      box.addEventListener("change", () => {
        const rest = this.hidden.filter((n) => n !== col.name);
        this.setHidden(box.checked ? rest : [...rest, col.name]);
      });
      list.appendChild(h("label", { title: col.description || null }, box, ` ${headerLabel(col)}`));
    }
    const all = h("button", { type: "button", class: "tbp-btn", disabled: hiddenCount === 0 }, "Show all");
    all.addEventListener("click", () => this.setHidden([]));
    list.prepend(all);
    this.chooser.append(list);
  }

  private setHidden(hidden: string[]): void {
    this.hidden = hidden;
    this.opts.onHiddenChange?.([...hidden]);
    const open = this.chooser.open;
    this.buildHeader();
    this.renderBody();
    this.chooser.open = open;
  }

  private buildHeader(): void {
    clear(this.headRow);
    clear(this.filterRow);
    this.computeColumns();
    this.buildChooser();
    for (const i of this.shown) {
      const col = this.data.columns[i];
      if (col === undefined) continue;
      const th = h(
        "th",
        {
          "data-col": col.name,
          class: col.kind === "str" ? "" : "tbp-num",
          title: [col.description, `column ${col.name}${col.unit ? `, unit ${col.unit}` : ""}`, "click to sort"]
            .filter(Boolean)
            .join("\n"),
          tabindex: 0,
        },
        h("span", { class: "tbp-th-label" }, headerLabel(col)),
        h("span", { class: "tbp-sort-mark" }),
      );
      const onSort = (): void => this.setView(nextSort(this.view, col));
      th.addEventListener("click", onSort);
      th.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          onSort();
        }
      });
      this.headRow.appendChild(th);
      const input = h("input", {
        type: "search",
        class: "tbp-filter",
        "data-filter": col.name,
        placeholder: filterPlaceholder(col),
        "aria-label": `filter ${col.label}`,
        value: this.view.filters[col.name] ?? "",
      });
      input.addEventListener("input", () => this.scheduleFilter(col.name, input.value));
      input.addEventListener("keydown", (e) => {
        if (e.key === "Enter") this.applyFilter(col.name, input.value);
      });
      this.filterRow.appendChild(h("th", {}, input));
    }
    this.updateSortMarks();
  }

  private updateSortMarks(): void {
    for (const th of Array.from(this.headRow.children) as HTMLElement[]) {
      const mark = th.querySelector(".tbp-sort-mark");
      const sorted = th.dataset.col === this.view.sort;
      const desc = this.view.desc ?? false;
      th.setAttribute("aria-sort", sorted ? (desc ? "descending" : "ascending") : "none");
      if (mark) mark.textContent = sorted ? (desc ? " ▼" : " ▲") : "";
    }
  }

  private scheduleFilter(column: string, expr: string): void {
    if (this.filterTimer !== null) clearTimeout(this.filterTimer);
    this.filterTimer = setTimeout(() => this.applyFilter(column, expr), FILTER_DEBOUNCE_MS);
  }

  private applyFilter(column: string, expr: string): void {
    if (this.filterTimer !== null) clearTimeout(this.filterTimer);
    this.filterTimer = null;
    if ((this.view.filters[column] ?? "") === expr.trim()) return;
    this.setView(withFilter(this.view, column, expr.trim()), column);
  }

  /** Marks (message) or clears (null) the filter input of `column` as invalid. */
  private markFilter(column: string | null, message: string | null): void {
    for (const input of Array.from(this.filterRow.querySelectorAll<HTMLInputElement>("input.tbp-filter"))) {
      const bad = message !== null && input.dataset.filter === column;
      input.classList.toggle("tbp-filter-invalid", bad);
      if (bad) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
      input.title = bad ? message : "";
      const th = input.parentElement;
      th?.querySelector(".tbp-filter-error")?.remove();
      if (bad) th?.appendChild(h("div", { class: "tbp-filter-error", role: "alert", "data-filter-error": column }, message));
    }
    this.tbody.classList.toggle("tbp-stale", message !== null);
  }

  /** `filterColumn`: the filter the user just changed (its input shows a failure). */
  private setView(view: TableView, filterColumn: string | null = null): void {
    this.filterColumn = filterColumn;
    this.view = view;
    this.updateSortMarks();
    this.opts.onViewChange(view);
    this.ready = this.load();
  }

  private async load(): Promise<void> {
    this.inflight?.abort();
    const ctl = new AbortController();
    this.inflight = ctl;
    const seq = ++this.seq;
    this.el.classList.add("tbp-loading");
    this.statusEl.textContent = "Loading…";
    this.statusEl.classList.remove("tbp-error");
    try {
      const data = await this.opts.fetchRows(toQuery(this.view, this.opts.pageSize), ctl.signal);
      if (seq !== this.seq) return;
      this.data = data;
      this.statusEl.textContent = "";
      this.markFilter(null, null);
      this.renderBody();
    } catch (e) {
      if (seq !== this.seq || (e instanceof DOMException && e.name === "AbortError")) return;
      const message = e instanceof Error ? e.message : String(e);
      if (this.filterColumn !== null) {
        // A bad filter (a regex that does not compile is the backend's 400): the message at the
        // input that caused it, not under the table, and the old rows greyed as stale.
        this.markFilter(this.filterColumn, message);
        this.statusEl.textContent = "The rows shown are from before this filter.";
      } else {
        this.statusEl.textContent = message;
        this.statusEl.classList.add("tbp-error");
      }
    } finally {
      if (seq === this.seq) this.el.classList.remove("tbp-loading");
    }
  }

  private renderBody(): void {
    const { columns, rows, totalRows, offset } = this.data;
    const name = nameColumnIndex(columns);
    const frag = document.createDocumentFragment();
    for (const row of rows) {
      const tr = document.createElement("tr");
      for (const i of this.shown) {
        const col = columns[i];
        if (col === undefined) continue;
        const value = row[i] ?? null;
        const td = document.createElement("td");
        td.textContent = cellText(value, col);
        td.dataset.v = JSON.stringify(value);
        if (col.kind !== "str") td.className = "tbp-num";
        else {
          // One line per row; the full text of a long name is in the tooltip.
          if (this.opts.wrapColumns?.includes(col.name)) {
            td.className = "tbp-wrap";
            if (typeof value === "string") td.title = value;
          } else {
            td.className = i === name ? "tbp-text tbp-name" : "tbp-text";
            if (typeof value === "string" && value.length > 24) td.title = value;
          }
        }
        if (value === null) td.classList.add("tbp-muted");
        this.opts.decorateCell?.(td, row, i);
        tr.appendChild(td);
      }
      frag.appendChild(tr);
    }
    clear(this.tbody);
    if (rows.length === 0) {
      const msg = Object.keys(this.view.filters).length > 0 ? "No rows match the filters." : "This table is empty.";
      frag.appendChild(h("tr", {}, h("td", { colspan: this.shown.length, class: "tbp-empty" }, msg)));
    }
    this.tbody.appendChild(frag);
    this.scheduleSticky();
    this.countEl.textContent = rowRangeLabel(offset, rows.length, totalRows);
    if (this.opts.fullCsvUrl) {
      this.fullCsv.href = this.opts.fullCsvUrl(toQuery(this.view, this.opts.pageSize));
      this.fullCsv.setAttribute("download", "");
    } else {
      this.fullCsv.hidden = true;
    }
    this.renderPager();
  }

  /**
   * Pins the leading columns: each gets `left` = its offset in the table, measured once the
   * row is laid out (widths depend on the text), so the columns before the name stay too.
   */
  private scheduleSticky(): void {
    cancelAnimationFrame(this.stickyFrame);
    this.stickyFrame = requestAnimationFrame(() => this.applySticky());
  }

  private applySticky(): void {
    // Summed widths, not offsetLeft: a pinned cell's offset moves with the scroll position.
    const heads = Array.from(this.headRow.children) as HTMLElement[];
    const lefts: number[] = [];
    let x = 0;
    for (const th of heads.slice(0, this.sticky)) {
      lefts.push(x);
      x += th.getBoundingClientRect().width;
    }
    const pin = (row: Element): void => {
      const cells = Array.from(row.children) as HTMLElement[];
      if (cells.length < this.sticky || cells[0]?.classList.contains("tbp-empty")) return;
      cells.forEach((cell, j) => {
        const on = j < this.sticky;
        cell.classList.toggle("tbp-sticky", on);
        cell.classList.toggle("tbp-sticky-last", on && j === this.sticky - 1);
        cell.style.left = on ? `${lefts[j] ?? 0}px` : "";
      });
    };
    pin(this.headRow);
    pin(this.filterRow);
    for (const tr of Array.from(this.tbody.children)) pin(tr);
  }

  private renderPager(): void {
    clear(this.pagerEl);
    const pages = pageCount(this.data.totalRows, this.opts.pageSize);
    if (pages <= 1) return;
    const page = Math.min(this.view.page, pages - 1);
    const go = (p: number): void => this.setView({ ...this.view, page: p });
    const prev = h("button", { type: "button", class: "tbp-btn", "data-page": "prev", disabled: page === 0 }, "‹ Prev");
    const next = h("button", { type: "button", class: "tbp-btn", "data-page": "next", disabled: page >= pages - 1 }, "Next ›");
    prev.addEventListener("click", () => go(page - 1));
    next.addEventListener("click", () => go(page + 1));
    this.pagerEl.append(prev, h("span", { class: "tbp-muted" }, ` page ${page + 1} of ${pages} `), next);
  }

  private exportShown(): void {
    const { columns, rows, offset } = this.data;
    const text = toCsv(columns, rows);
    const range = rows.length === this.data.totalRows ? "" : `_rows${offset + 1}-${offset + rows.length}`;
    downloadText(text, `${this.opts.csvName}${range}.csv`);
  }
}
