import { describe, expect, it } from "vitest";
import type { ToolOption } from "../data/types";
import { arrangeOptions, controlOf, paramValue } from "./option_model";

const opt = (name: string, def: unknown, extra: Partial<ToolOption> = {}): ToolOption => ({
  name, default: def, help: "", choices: null, min: null, max: null, group: null, advanced: null, ...extra,
});

describe("option controls", () => {
  it("picks a control from the default and the server's fields", () => {
    expect(controlOf(opt("include_idle", false)).kind).toBe("checkbox");
    expect(controlOf(opt("view", "scope", { choices: ["scope", "graph", "op", "code"] }))).toEqual({ kind: "select", choices: ["scope", "graph", "op", "code"] });
    expect(controlOf(opt("side", "auto"), ["auto", "host"])).toEqual({ kind: "select", choices: ["auto", "host"] });
    expect(controlOf(opt("max_depth", 10000, { min: 0 }))).toEqual({ kind: "number", min: 0, max: null, step: 1 });
    expect(controlOf(opt("ratio", 0.5)).kind).toBe("number");
    expect(controlOf(opt("show_name_regexes", [".*"])).kind).toBe("list");
    expect(controlOf(opt("memory_id", "")).kind).toBe("text");
  });

  it("keeps defaults out of the URL and refuses numbers out of bounds", () => {
    const depth = opt("max_depth", 10000, { min: 0, max: 100000 });
    const c = controlOf(depth);
    expect(paramValue(depth, c, "10000")).toEqual({ value: null, error: null });
    expect(paramValue(depth, c, "4")).toEqual({ value: "4", error: null });
    expect(paramValue(depth, c, "-1").error).toBe("at least 0");
    expect(paramValue(depth, c, "2.5").error).toBe("a whole number");
    expect(paramValue(depth, c, "x").error).toBe("a number");
    const regexes = opt("show_name_regexes", [".*"]);
    expect(paramValue(regexes, controlOf(regexes), " .* ")).toEqual({ value: null, error: null });
    expect(paramValue(regexes, controlOf(regexes), "conv.*, dense")).toEqual({ value: "conv.*,dense", error: null });
  });

  it("puts the server's advanced options under More options, grouped", () => {
    const a = arrangeOptions([opt("view", "scope"), opt("min_bytes", 0, { group: "Thresholds", advanced: true }),
      opt("min_micros", 0, { group: "Thresholds", advanced: true }), opt("order_by", "name", { advanced: false })]);
    expect(a.main.map((g) => [g.title, g.options.map((o) => o.name)])).toEqual([[null, ["view", "order_by"]]]);
    expect(a.advanced.map((g) => [g.title, g.options.map((o) => o.name)])).toEqual([["Thresholds", ["min_bytes", "min_micros"]]]);
  });

  it("puts the thresholds of a long list under More options when the server flags none (tfprof views: 21)", () => {
    const names = ["view", "max_depth", "min_bytes", "min_peak_bytes", "min_micros", "step", "order_by", "show_name_regexes", "select"];
    const a = arrangeOptions(names.map((n) => opt(n, 0)));
    expect(a.main.flatMap((g) => g.options.map((o) => o.name))).toEqual(["view", "max_depth", "step", "order_by", "show_name_regexes", "select"]);
    expect(a.advanced).toEqual([{ title: "Thresholds", options: [opt("min_bytes", 0), opt("min_peak_bytes", 0), opt("min_micros", 0)] }]);
    // A short list stays together.
    expect(arrangeOptions(names.slice(0, 5).map((n) => opt(n, 0))).advanced).toEqual([]);
  });
});
