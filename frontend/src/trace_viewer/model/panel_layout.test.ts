import { describe, expect, it } from "vitest";
import { BOTTOM_GAP_PX, defaultPanelPx, draggedPanelPx, MIN_PANEL_PX, MIN_TIMELINE_PX, SPLITTER_PX, splitHeights } from "./panel_layout";

describe("timeline and details panel heights", () => {
  it("gives the panel a fifth of an 800 px window by default and the timeline the rest", () => {
    expect(defaultPanelPx(800)).toBe(160);
    const { timelinePx, panelPx } = splitHeights({ viewportPx: 800, topPx: 150, panelPx: null, folded: false });
    expect(panelPx).toBe(160);
    expect(timelinePx).toBe(800 - 150 - 160 - SPLITTER_PX - BOTTOM_GAP_PX);
  });

  it("gives the timeline the panel's room when the panel is folded", () => {
    const open = splitHeights({ viewportPx: 800, topPx: 150, panelPx: 300, folded: false });
    const folded = splitHeights({ viewportPx: 800, topPx: 150, panelPx: 300, folded: true });
    expect(folded.panelPx).toBe(0);
    expect(folded.timelinePx - open.timelinePx).toBe(300);
  });

  it("keeps both usable whatever the user asks", () => {
    expect(splitHeights({ viewportPx: 800, topPx: 150, panelPx: 5, folded: false }).panelPx).toBe(MIN_PANEL_PX);
    const big = splitHeights({ viewportPx: 800, topPx: 150, panelPx: 5000, folded: false });
    expect(big.timelinePx).toBe(MIN_TIMELINE_PX);
    // A tiny window: the timeline keeps its minimum even if the page scrolls.
    expect(splitHeights({ viewportPx: 300, topPx: 150, panelPx: null, folded: false }).timelinePx).toBe(MIN_TIMELINE_PX);
  });

  it("grows the panel by what the bar is dragged up", () => {
    expect(draggedPanelPx(160, 500, 400, 800, 150)).toBe(260);
    expect(draggedPanelPx(160, 500, 560, 800, 150)).toBe(100);
    expect(draggedPanelPx(160, 500, 0, 800, 150)).toBe(800 - 150 - MIN_TIMELINE_PX - SPLITTER_PX - BOTTOM_GAP_PX);
  });
});
