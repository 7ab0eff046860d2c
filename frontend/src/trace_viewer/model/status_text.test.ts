import { describe, expect, it } from "vitest";
import { statusText } from "./status_text";

describe("status line", () => {
  it("says what is drawn and what is merged, in words", () => {
    // A window where most events are too small to draw one by one.
    const text = statusText({ inWindow: 18662, returned: 2010, merged: 16652, boxes: 5386 });
    expect(text).toMatch(/^2,010 events drawn, 16,652 small ones merged into 5,386 density boxes/);
    expect(text).not.toContain("/box");
  });
  it("has nothing merged when zoomed in far enough", () => {
    expect(statusText({ inWindow: 1, returned: 1, merged: 0, boxes: 0 })).toBe("1 event drawn (every event in view, none dropped)");
  });
});
