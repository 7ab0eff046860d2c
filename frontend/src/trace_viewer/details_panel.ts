// The panel under the timeline: one event's details (stats, decoded kernel launch, linked
// events as links), a density box's summary, or a range selection's per-name totals.

import { formatDurationPs, formatNumber, formatPercent } from "../base/format";
import { clear, h } from "../widgets/dom";
import type { EventDetails, LinkedEvent, RangeSummary } from "./model/api";
import { colorOf } from "./model/colors";

const RELATIONS: readonly [string, string][] = [
  ["launched_by", "Launched by (CPU, same correlation id)"],
  ["launches", "Launches (GPU, same correlation id)"],
  ["same_launch", "Same launch (CUDA graph)"],
  ["kernels", "Kernels of this op"],
  ["flow_from", "Flow from"],
  ["flow_to", "Flow to"],
  ["step", "Step"],
  ["parent", "Parent"],
];

export interface PanelActions {
  select(e: LinkedEvent): void;
  zoomTo(startPs: number, endPs: number): void;
  toolLink?: (tool: string, options: Readonly<Record<string, string>>, label: string) => HTMLElement;
  /** The panel has something to show (the page unfolds it) or nothing any more (it may fold). */
  shown?: (hasContent: boolean) => void;
}

/** The HLO op and program of a device event (its ``hlo_op`` and ``program_id`` stats), if any. */
export function hloOpOf(stats: readonly { name: string; value: unknown }[]): { op: string; programId: string } | null {
  const op = stats.find((s) => s.name === "hlo_op")?.value;
  const program = stats.find((s) => s.name === "program_id")?.value;
  if (typeof op !== "string" || op === "" || (typeof program !== "number" && typeof program !== "string")) return null;
  return { op, programId: String(program) };
}

function kv(rows: [string, string | Node][]): HTMLElement {
  return h("table", { class: "tbp-tv-kv" }, rows.map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v))));
}

/**
 * "step 4" for a step marker (its step_num stat), as the Steps track and the overview name the
 * step ("train 4"), where "train" alone would not say which; null for other events.
 */
export function stepLabel(stats: readonly { name: string; value: unknown }[]): string | null {
  const n = stats.find((s) => s.name === "step_num")?.value;
  return typeof n === "number" && Number.isInteger(n) ? `step ${String(n)}` : null;
}

const ID_KEY = /(^|[_\s])id$|_ids?$|^id$/i;

function isIdKey(key: string): boolean {
  return ID_KEY.test(key.trim());
}

/** A stat value as text; identifiers ("correlation_id", "id", "run id") keep their digits bare. */
export function valueText(v: unknown, key = ""): string {
  if (typeof v === "number" && Number.isInteger(v) && isIdKey(key)) return String(v);
  if (typeof v === "number") return formatNumber(v, 8);
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}

export class DetailsPanel {
  readonly el: HTMLElement;

  constructor(private readonly actions: PanelActions) {
    this.el = h("section", { class: "tbp-tv-details", "data-testid": "trace-details" });
    this.showEmpty();
  }

  /** Nothing selected: the hint, and the page may fold the panel away. */
  showEmpty(): void {
    clear(this.el);
    this.el.appendChild(h("p", { class: "tbp-muted" }, "Click an event to see its details; drag on the time ruler (or shift-drag) to select a range."));
    this.actions.shown?.(false);
  }

  private linkButton(e: LinkedEvent): HTMLElement {
    return h("button", {
      type: "button", class: "tbp-tv-link", "data-plane": e.plane, "data-row": e.row,
      title: `${e.name} at ${formatDurationPs(e.startPs, 7)}`,
      onclick: () => this.actions.select(e),
    }, h("span", { class: "tbp-tv-swatch", style: `background:${colorOf(e.name)}` }), e.name,
    h("span", { class: "tbp-muted" }, ` ${formatDurationPs(e.durPs)} @ ${formatDurationPs(e.startPs, 7)}`));
  }

  showLoading(what: string): void {
    this.actions.shown?.(true);
    clear(this.el);
    this.el.appendChild(h("p", { class: "tbp-muted" }, `Loading ${what}…`));
  }

  showError(message: string): void {
    this.actions.shown?.(true);
    clear(this.el);
    this.el.appendChild(h("p", { class: "tbp-error" }, message));
  }

  showEvent(d: EventDetails): void {
    this.actions.shown?.(true);
    clear(this.el);
    const e = d.event;
    const head = h("div", { class: "tbp-tv-head" },
      h("span", { class: "tbp-tv-swatch", style: `background:${colorOf(e.name)}` }),
      h("strong", { class: "tbp-tv-name", "data-testid": "event-name" }, e.name),
      stepLabel(d.stats) !== null ? h("span", { class: "tbp-tv-step", "data-testid": "event-step" }, stepLabel(d.stats)) : null,
      h("button", { type: "button", class: "tbp-btn", onclick: () => this.actions.zoomTo(e.startPs, e.endPs) },
        "Zoom to event"));
    const info = kv([
      ["Track", `${e.planeName} › ${e.lineName}`],
      ["Start", formatDurationPs(e.startPs, 9)],
      ["Duration", formatDurationPs(e.durPs, 6)],
      ["End", formatDurationPs(e.endPs, 9)],
      ...(e.displayName ? [["Display name", e.displayName] as [string, string]] : []),
    ]);
    const cols = h("div", { class: "tbp-tv-cols" });
    const left = h("div", {}, head, info);
    const hlo = hloOpOf(d.stats);
    if (hlo !== null && this.actions.toolLink) {
      // An XLA op's event opens the HLO graph around that op (the graph viewer tool).
      left.appendChild(h("p", { "data-testid": "graph-link" },
        this.actions.toolLink("graph_viewer", { node: hlo.op, module: hlo.programId }, `Show ${hlo.op} in the graph viewer`)));
    }
    const kernel = d.decoded.kernel;
    if (typeof kernel === "object" && kernel !== null) {
      const k = kernel as Record<string, unknown>;
      const dims = (v: unknown): string => (Array.isArray(v) ? v.join(" × ") : "");
      left.appendChild(h("h3", {}, "Kernel launch"));
      left.appendChild(kv([
        ["Grid", dims(k.grid)],
        ["Block", dims(k.block)],
        ["Registers / thread", valueText(k.registers_per_thread)],
        ["Shared memory", k.shared_memory_bytes === null ? "–" : `${valueText(k.shared_memory_bytes)} B` +
          (typeof k.static_shared_memory_bytes === "number"
            ? ` (static ${valueText(k.static_shared_memory_bytes)}, dynamic ${valueText(k.dynamic_shared_memory_bytes)})` : "")],
        ["Occupancy", typeof k.occupancy_pct === "number" ? formatPercent(k.occupancy_pct) : "–"],
      ]));
    }
    for (const key of ["memcpy_details", "memset_details"]) {
      const m = d.decoded[key];
      if (typeof m === "object" && m !== null) {
        left.appendChild(h("h3", {}, key === "memcpy_details" ? "Memcpy" : "Memset"));
        left.appendChild(kv(Object.entries(m as Record<string, unknown>).map(([a, b]) => [a, valueText(b, a)])));
      }
    }
    const linksEl = h("div", { class: "tbp-tv-links", "data-testid": "event-links" });
    for (const [rel, label] of RELATIONS) {
      const list = d.links.get(rel);
      if (!list || list.length === 0) continue;
      const total = d.totals.get(rel) ?? list.length;
      linksEl.appendChild(h("h3", {}, label, total > list.length ? h("span", { class: "tbp-muted" }, ` (first ${list.length} of ${total})`) : null));
      linksEl.appendChild(h("div", { class: "tbp-tv-linklist", "data-relation": rel }, list.map((x) => this.linkButton(x))));
    }
    if (d.stepWindow) {
      const w = d.stepWindow;
      linksEl.appendChild(h("h3", {}, "Events in this step"));
      linksEl.appendChild(h("button", { type: "button", class: "tbp-btn", onclick: () => this.actions.zoomTo(w.startPs, w.endPs) }, "Zoom to step"));
      linksEl.appendChild(kv(d.stepEvents.map((s) => [s.name, formatNumber(s.count)])));
    }
    left.appendChild(linksEl);
    const stats = h("div", {}, h("h3", {}, `Stats (${d.stats.length})`),
      h("table", { class: "tbp-tv-stats", "data-testid": "event-stats" },
        d.stats.map((s) => h("tr", { title: s.source === "metadata" ? "from the event's metadata" : null },
          h("th", {}, s.name), h("td", {}, valueText(s.value, s.name))))));
    cols.append(left, stats);
    this.el.appendChild(cols);
  }

  showBox(name: string, count: number, busy: number, startPs: number, endPs: number): void {
    this.actions.shown?.(true);
    clear(this.el);
    this.el.appendChild(h("div", { class: "tbp-tv-head" }, h("strong", {}, `${formatNumber(count)} events merged`)));
    this.el.appendChild(kv([
      ["Time", `${formatDurationPs(startPs, 9)} – ${formatDurationPs(endPs, 9)}`],
      ["Busy", formatPercent(busy * 100)],
      ["Longest", name],
    ]));
    this.el.appendChild(h("p", { class: "tbp-muted" },
      "Events shorter than a pixel are drawn as density boxes (darker = busier). Zoom in to see each one."));
    this.el.appendChild(h("button", { type: "button", class: "tbp-btn", onclick: () => this.actions.zoomTo(startPs, endPs) }, "Zoom in"));
  }

  showCounter(track: string, text: string): void {
    this.actions.shown?.(true);
    clear(this.el);
    this.el.appendChild(h("div", { class: "tbp-tv-head" }, h("strong", {}, track)));
    this.el.appendChild(h("p", {}, text));
  }

  showRange(r: RangeSummary): void {
    this.actions.shown?.(true);
    clear(this.el);
    const dur = r.endPs - r.startPs;
    this.el.appendChild(h("div", { class: "tbp-tv-head", "data-testid": "range-summary" },
      h("strong", {}, `Selection: ${formatDurationPs(dur, 6)}`),
      h("span", { class: "tbp-muted" }, ` ${formatDurationPs(r.startPs, 9)} – ${formatDurationPs(r.endPs, 9)} · ` +
        `${formatNumber(r.eventCount)} events, ${formatNumber(r.nameCount)} names`),
      h("button", { type: "button", class: "tbp-btn", onclick: () => this.actions.zoomTo(r.startPs, r.endPs) }, "Zoom to selection")));
    const share = (ps: number): string => formatPercent((100 * ps) / Math.max(dur, 1));
    const shareTitle = "the part of the selection during which it ran (overlapping events counted once): at most 100 %";
    this.el.appendChild(h("div", { class: "tbp-tv-range-wrap" }, h("table", { class: "tbp-tv-stats tbp-tv-range" },
      h("tr", {}, h("th", {}, "Name"), h("th", {}, "Count"),
        h("th", { title: "summed over every selected track (thread, stream, rank) it ran on: can exceed the selection" }, "Total (clipped)"),
        h("th", { title: shareTitle }, r.ranks.length > 0 ? "% of selection (any rank)" : "% of selection"),
        ...r.ranks.map((rank) => h("th", { title: `${shareTitle}, on ${rank}`, "data-rank": rank }, `% ${rank}`))),
      r.names.map((n) => h("tr", { "data-name": n.name },
        h("td", {}, h("span", { class: "tbp-tv-swatch", style: `background:${colorOf(n.name)}` }), n.name),
        h("td", { "data-count": String(n.count) }, formatNumber(n.count)),
        h("td", { "data-total-ps": String(n.totalPs) }, formatDurationPs(n.totalPs)),
        h("td", { "data-share": "", "data-covered-ps": String(n.coveredPs) }, share(n.coveredPs)),
        ...n.byRank.map((b, k) => h("td", {
          "data-rank": r.ranks[k] ?? "", "data-total-ps": String(b.totalPs), "data-covered-ps": String(b.coveredPs),
          title: `${formatDurationPs(b.totalPs)} on ${r.ranks[k] ?? ""} (summed over its tracks)`,
        }, b.totalPs > 0 ? share(b.coveredPs) : "–")))))));
    this.el.appendChild(h("p", { class: "tbp-muted" },
      "Total adds up every track the name ran on, so it can exceed the selection; % of selection is the part " +
      "of the selection during which the name ran at all" +
      (r.ranks.length > 0 ? ", over every rank and on each rank alone." : ".")));
  }
}
