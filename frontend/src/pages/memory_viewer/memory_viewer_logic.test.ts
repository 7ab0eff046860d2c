import { describe, expect, it } from "vitest";
import { bufferOrder, timelineRects } from "./memory_viewer_logic";

const live = [
  { logical_buffer_id: 1, size_bytes: 100, unpadded_size_bytes: 100 }, // no padding
  { logical_buffer_id: 2, size_bytes: 300, unpadded_size_bytes: 200 }, // 100 padding
  { logical_buffer_id: 3, size_bytes: 200, unpadded_size_bytes: 50 }, // 150 padding
  { logical_buffer_id: -1, size_bytes: 40, unpadded_size_bytes: 0 }, // merged small buffers
];

describe("bufferOrder", () => {
  it("keeps program order and takes the backend's size and padding orders", () => {
    expect(bufferOrder(live, "program", [], [])).toEqual([0, 1, 2, 3]);
    expect(bufferOrder(live, "size", [1, 2, 0, 3], [])).toEqual([1, 2, 0, 3]);
    expect(bufferOrder(live, "padding", [], [2, 1, 0, 3])).toEqual([2, 1, 0, 3]);
  });

  it("computes the orders when the backend sent none or a broken one", () => {
    // Sizes 300 > 200 > 100 > 40.
    expect(bufferOrder(live, "size", [], [])).toEqual([1, 2, 0, 3]);
    // Padding 150 > 100 > 0 = 0 (ties by size: 100 before the small row's 40).
    expect(bufferOrder(live, "padding", [0, 0, 1, 2], [])).toEqual([2, 1, 0, 3]);
  });
});

describe("timelineRects", () => {
  it("scales steps to x and offsets to y with offset 0 at the bottom", () => {
    const rects = timelineRects([
      { id: -1, name: "Temporary", offset: 0, size: 1000, start: 0, end: 10 },
      { id: 7, name: "fusion", offset: 500, size: 500, start: 2, end: 6 },
    ], 100, 200);
    expect(rects[0]).toMatchObject({ container: true, x: 0, y: 0, w: 100, h: 200 });
    // Steps 2..6 of 10 over 100 units: x 20, width 40; bytes 500..1000 of 1000 over 200: top half.
    expect(rects[1]).toMatchObject({ container: false, x: 20, y: 0, w: 40, h: 100 });
  });
});
