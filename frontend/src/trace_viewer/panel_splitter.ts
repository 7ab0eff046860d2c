// The bar between the timeline and the details panel: drag it to size the panel, click its
// button to fold the panel away. Heights are computed by model/panel_layout.ts; the chosen
// size and the fold are page state in the URL (c.panel, c.fold).

import { h } from "../widgets/dom";
import { draggedPanelPx, splitHeights } from "./model/panel_layout";

export interface SplitterHost {
  /** The timeline's scroller (its top is where the shared height starts). */
  readonly scroller: HTMLElement;
  readonly panel: HTMLElement;
  param(key: string): string | null;
  setParams(updates: Readonly<Record<string, string | null>>): void;
  /** Heights changed: the canvas must follow. */
  resized(): void;
}

export class PanelSplitter {
  readonly el: HTMLElement;
  private readonly toggle: HTMLButtonElement;
  private panelPx: number | null;
  private folded: boolean;
  /** No fold chosen by the user (no "fold" in the URL): folded while the panel is empty. */
  private auto: boolean;

  constructor(private readonly host: SplitterHost, signal: AbortSignal) {
    const saved = Number(host.param("panel"));
    this.panelPx = host.param("panel") !== null && Number.isFinite(saved) && saved > 0 ? saved : null;
    // Folded until something is selected, unless the user chose (c.fold=1 folded, 0 open).
    this.auto = host.param("fold") === null;
    this.folded = this.auto || host.param("fold") === "1";
    this.toggle = h("button", {
      type: "button", class: "tbp-tv-fold", "data-testid": "details-toggle",
      onclick: () => this.setFolded(!this.folded),
    });
    const grip = h("div", {
      class: "tbp-tv-grip", "data-testid": "details-resize", role: "separator", "aria-orientation": "horizontal",
      "aria-label": "Resize the details panel", title: "Drag to resize the details panel",
    });
    this.el = h("div", { class: "tbp-tv-splitter" }, grip, this.toggle);
    grip.addEventListener("mousedown", (e) => {
      if (e.button !== 0) return;
      e.preventDefault();
      const fromY = e.clientY;
      const start = this.folded ? 0 : this.host.panel.getBoundingClientRect().height;
      this.folded = false;
      this.auto = false;
      const move = (ev: MouseEvent): void => {
        this.panelPx = draggedPanelPx(start, fromY, ev.clientY, window.innerHeight, this.top());
        this.apply();
      };
      const up = (): void => {
        window.removeEventListener("mousemove", move);
        window.removeEventListener("mouseup", up);
        this.save();
      };
      window.addEventListener("mousemove", move, { signal });
      window.addEventListener("mouseup", up, { signal });
    }, { signal });
    this.apply();
  }

  private top(): number {
    return this.host.scroller.getBoundingClientRect().top;
  }

  setFolded(folded: boolean): void {
    this.folded = folded;
    this.auto = false;
    this.apply();
    this.save();
  }

  /**
   * The panel's content changed. Something to show: unfold (its details must be seen). Nothing:
   * fold again, unless the user chose a fold (an empty panel only takes the timeline's room).
   */
  contentChanged(hasContent: boolean): void {
    if (!this.auto || this.folded === !hasContent) return;
    this.folded = !hasContent;
    this.apply();
  }

  isFolded(): boolean {
    return this.folded;
  }

  /** Sets both heights from the window's size (called on resize too). */
  apply(): void {
    const { timelinePx, panelPx } = splitHeights({
      viewportPx: window.innerHeight, topPx: this.top(), panelPx: this.panelPx, folded: this.folded,
    });
    this.host.scroller.style.height = `${timelinePx}px`;
    this.host.panel.style.height = `${panelPx}px`;
    this.host.panel.hidden = this.folded;
    this.toggle.textContent = this.folded ? "▴ Show details" : "▾ Hide details";
    this.toggle.setAttribute("aria-expanded", String(!this.folded));
    this.host.resized();
  }

  private save(): void {
    this.host.setParams({
      panel: this.panelPx === null ? null : String(Math.round(this.panelPx)),
      fold: this.auto ? null : this.folded ? "1" : "0",
    });
  }
}
