// Which events open in the graph viewer: device events of an XLA op (hlo_op + program_id stats).
import { describe, expect, it } from "vitest";
import { hloOpOf, stepLabel, valueText } from "./details_panel";

describe("hloOpOf", () => {
  it("takes the op and program of an XLA device event", () => {
    const stats = [{ name: "hlo_op", value: "fusion.3" }, { name: "program_id", value: 13929 }, { name: "x", value: 1 }];
    expect(hloOpOf(stats)).toEqual({ op: "fusion.3", programId: "13929" });
  });
  it("is null for events that are not an XLA op", () => {
    expect(hloOpOf([{ name: "program_id", value: 1 }])).toBeNull();
    expect(hloOpOf([{ name: "hlo_op", value: "" }, { name: "program_id", value: 1 }])).toBeNull();
    expect(hloOpOf([{ name: "hlo_op", value: "add" }])).toBeNull();
  });
});

describe("valueText", () => {
  it("keeps identifiers' digits bare and groups other numbers (#29 §5)", () => {
    expect(valueText(3042, "correlation_id")).toBe("3042");
    expect(valueText(13929, "program_id")).toBe("13929");
    expect(valueText(7, "id")).toBe("7");
    expect(valueText(88, "External id")).toBe("88");
    expect(valueText(3042, "bytes")).toBe("3,042");
    expect(valueText(3042, "grid")).toBe("3,042");
  });
});

describe("stepLabel", () => {
  it("names a step marker's step number, nothing for other events", () => {
    expect(stepLabel([{ name: "step_num", value: 4 }, { name: "_r", value: 1 }])).toBe("step 4");
    expect(stepLabel([{ name: "correlation_id", value: 4 }])).toBeNull();
  });
});
