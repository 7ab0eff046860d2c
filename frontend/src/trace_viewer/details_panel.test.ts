// Which events open in the graph viewer: device events of an XLA op (hlo_op + program_id stats).
import { describe, expect, it } from "vitest";
import { hloOpOf } from "./details_panel";

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
