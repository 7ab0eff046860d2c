// An expandable tree as a table: one row per visible node, indented, with a toggle. Only the
// rows of expanded nodes exist in the DOM, so a 10 k-node op tree costs what is open.

import { clear, h } from "./dom";

export interface TreeColumn<T> {
  label: string;
  numeric?: boolean;
  /** Cell content for a node (text or an element such as a bar). */
  cell: (node: T) => string | Node;
}

export interface TreeTableOptions<T> {
  root: T;
  children: (node: T) => readonly T[];
  name: (node: T) => string;
  /** Title (hover text) of a node's name cell. */
  title?: (node: T) => string;
  columns: readonly TreeColumn<T>[];
  /** Levels open at first (1: the root's children are visible). */
  openDepth?: number;
  /** At most this many children per node are listed ("… N more" after them). */
  maxChildren?: number;
  /** A click on a row (not its toggle) selects the node. */
  onSelect?: (node: T) => void;
}

export class TreeTable<T> {
  readonly el: HTMLElement;
  private readonly tbody: HTMLTableSectionElement;
  private readonly open = new Set<string>();
  private selected: string | null = null;

  constructor(private readonly o: TreeTableOptions<T>) {
    this.tbody = h("tbody");
    this.el = h(
      "div",
      { class: "tbp-table-scroll tbp-tree" },
      h(
        "table",
        { class: "tbp-table" },
        h("thead", {}, h("tr", {}, h("th", {}, "Name"), ...o.columns.map((c) => h("th", { class: c.numeric ? "tbp-num" : "" }, c.label)))),
        this.tbody,
      ),
    );
    const seed = (node: T, path: string, depth: number): void => {
      if (depth >= (o.openDepth ?? 1)) return;
      this.open.add(path);
      o.children(node).forEach((c, i) => seed(c, `${path}/${i}`, depth + 1));
    };
    seed(o.root, "", 0);
    this.render();
  }

  expandAll(limit = 2000): void {
    let n = 0;
    const walk = (node: T, path: string): void => {
      if (n++ > limit) return;
      this.open.add(path);
      this.o.children(node).forEach((c, i) => walk(c, `${path}/${i}`));
    };
    walk(this.o.root, "");
    this.render();
  }

  collapseAll(): void {
    this.open.clear();
    this.open.add("");
    this.render();
  }

  private render(): void {
    const frag = document.createDocumentFragment();
    const max = this.o.maxChildren ?? 200;
    const walk = (node: T, path: string, depth: number): void => {
      const kids = this.o.children(node);
      const shown = kids.slice(0, max);
      shown.forEach((child, i) => {
        const childPath = `${path}/${i}`;
        const grand = this.o.children(child).length;
        const isOpen = this.open.has(childPath);
        const toggle = h("button", { type: "button", class: "tbp-toggle", "aria-expanded": grand ? String(isOpen) : null, disabled: grand === 0, "aria-label": grand ? (isOpen ? "collapse" : "expand") : null }, grand ? (isOpen ? "▾" : "▸") : "·");
        toggle.addEventListener("click", () => {
          if (this.open.has(childPath)) this.open.delete(childPath);
          else this.open.add(childPath);
          this.render();
        });
        const nameCell = h("td", { class: "tbp-tree-name", style: `padding-left:${8 + depth * 16}px`, title: this.o.title?.(child) ?? null }, toggle, " ", this.o.name(child));
        const row = h("tr", { "data-depth": depth, "data-path": childPath, class: childPath === this.selected ? "tbp-selected" : null },
          nameCell, ...this.o.columns.map((c) => h("td", { class: c.numeric ? "tbp-num" : "" }, c.cell(child))));
        const select = this.o.onSelect;
        if (select) {
          row.addEventListener("click", (e) => {
            if ((e.target as HTMLElement).closest(".tbp-toggle")) return;
            this.selected = childPath;
            for (const r of Array.from(this.tbody.querySelectorAll("tr.tbp-selected"))) r.classList.remove("tbp-selected");
            row.classList.add("tbp-selected");
            select(child);
          });
        }
        frag.appendChild(row);
        if (isOpen && grand) walk(child, childPath, depth + 1);
      });
      if (kids.length > shown.length) {
        frag.appendChild(h("tr", {}, h("td", { colspan: this.o.columns.length + 1, class: "tbp-muted", style: `padding-left:${24 + depth * 16}px` }, `… ${kids.length - shown.length} more`)));
      }
    };
    walk(this.o.root, "", 0);
    clear(this.tbody);
    this.tbody.appendChild(frag);
  }
}
