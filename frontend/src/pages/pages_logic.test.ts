// Page logic that is not drawing: pie aggregation, the overview's input-bound tone, field reading.
import { describe, expect, it } from "vitest";
import { pieOption } from "./common";
import { list, num, obj, objs, str } from "./fields";
import { inputTone } from "./overview/overview_page";

describe("pieOption", () => {
  it("keeps the largest slices and sums the rest into Other", () => {
    const slices = Array.from({ length: 13 }, (_, i) => ({ name: `op${i}`, value: i + 1 }));
    const series = (pieOption(slices, "us", 10).series as { data: { name: string; value: number }[] }[])[0];
    const data = series?.data ?? [];
    expect(data).toHaveLength(11);
    expect(data[0]).toEqual({ name: "op12", value: 13 }); // largest first
    // op0..op2 (values 1+2+3 = 6) fall outside the top 10.
    expect(data[10]).toEqual({ name: "Other (3)", value: 6 });
  });
  it("drops empty slices", () => {
    const series = (pieOption([{ name: "a", value: 0 }, { name: "b", value: 2 }], "us").series as { data: unknown[] }[])[0];
    expect(series?.data).toEqual([{ name: "b", value: 2 }]);
  });
});

describe("inputTone", () => {
  it("uses XProf's 20 % / 5 % input-bound thresholds", () => {
    expect(inputTone(25)).toBe("bad");
    expect(inputTone(20)).toBe("warn"); // "more than 20 %" is input-bound
    expect(inputTone(5.1)).toBe("warn");
    expect(inputTone(5)).toBe("good");
    expect(inputTone(null)).toBe("neutral");
  });
});

describe("fields", () => {
  it("reads what is there and nothing else", () => {
    const o = { a: 1, b: "x", c: { d: [1, "y", { e: 2 }] }, n: Number.NaN };
    expect(num(o, "a")).toBe(1);
    expect(num(o, "b")).toBeNull();
    expect(num(o, "n")).toBeNull(); // NaN is not a number to show
    expect(str(o, "a")).toBe("");
    expect(list(obj(o, "c"), "d")).toHaveLength(3);
    expect(objs(obj(o, "c"), "d")).toEqual([{ e: 2 }]);
    expect(obj(o, "missing")).toEqual({});
  });
});
