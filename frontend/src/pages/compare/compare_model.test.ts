import { describe, expect, it } from "vitest";
import { parseHash } from "../../base/url_state";
import type { RunInfo } from "../../data/types";
import {
  compareParams,
  defaultBaseline,
  deltaTone,
  directionTone,
  intervalText,
  pickHost,
  signedPercent,
  swappedHref,
  traceHref,
} from "./compare_model";

function run(name: string, hosts: string[]): RunInfo {
  return { name, kind: "xspace", hosts, mtime: 0, tools: [], toolsExact: true, multiHostTools: [], error: null };
}

// Newest first, as the runs route lists them.
const RUNS = [run("jax_2hosts/s", ["worker0", "worker1"]), run("custom_loop/s", ["vm"]), run("keras_cnn/train/s", ["vm"])];

describe("compare parameters", () => {
  it("names both sides; empty hosts and selections are left out", () => {
    expect(compareParams({ run: "a", host: null, steps: "" }, { run: "b", host: "vm", steps: " 3:6 " })).toEqual([
      ["base_run", "a"],
      ["run", "b"],
      ["host", "vm"],
      ["steps", "3:6"],
    ]);
  });
});

describe("default baseline (#29 §4, #35)", () => {
  it("is the previous session of the same run", () => {
    const runs = [run("exp/s3", ["vm"]), run("other/s9", ["vm"]), run("exp/s2", ["vm"]), run("exp/s1", ["vm"])];
    expect(defaultBaseline(runs, { run: "exp/s3", host: "vm", steps: "" })).toEqual({ run: "exp/s2", host: "vm", steps: "" });
    expect(defaultBaseline(runs, { run: "exp/s1", host: "vm", steps: "" })).toBeNull(); // the oldest: nothing before it
  });
  it("is never an unrelated run or another kind", () => {
    expect(defaultBaseline(RUNS, { run: "custom_loop/s", host: "vm", steps: "" })).toBeNull();
    const kinds = [run("exp/b", ["vm"]), { ...run("exp/a", ["vm"]), kind: "pytorch" }];
    expect(defaultBaseline(kinds, { run: "exp/b", host: "vm", steps: "" })).toBeNull();
  });
  it("is never a run without a folder (two PyTorch runs at the top of the logdir)", () => {
    const torch = [{ ...run("torch_ddp", ["rank0.17", "rank1.18"]), kind: "pytorch" }, { ...run("torch_cnn", ["vm_623.17"]), kind: "pytorch" }];
    expect(defaultBaseline(torch, { run: "torch_ddp", host: "__all__", steps: "" })).toBeNull();
  });
  it("needs the same hosts or ranks, whatever the process ids", () => {
    const torch = [
      { ...run("exp/s3", ["rank0.900", "rank1.901"]), kind: "pytorch" },
      { ...run("exp/s2", ["rank0.500"]), kind: "pytorch" },
      { ...run("exp/s1", ["rank0.100", "rank1.101"]), kind: "pytorch" },
    ];
    expect(defaultBaseline(torch, { run: "exp/s3", host: "__all__", steps: "" })).toEqual({ run: "exp/s1", host: "__all__", steps: "" });
    expect(defaultBaseline(torch, { run: "exp/s2", host: "rank0.500", steps: "" })).toBeNull();
  });
  it("is not another host of the candidate's run: the page asks", () => {
    expect(defaultBaseline(RUNS, { run: "jax_2hosts/s", host: "worker1", steps: "" })).toBeNull();
  });
});

describe("hosts", () => {
  it("keeps a valid choice, the all-hosts token, else the first host", () => {
    const r = RUNS[0];
    expect(pickHost(r, "worker1", "__all__")).toBe("worker1");
    expect(pickHost(r, "__all__", "__all__")).toBe("__all__");
    expect(pickHost(r, "nope", "__all__")).toBe("worker0");
    expect(pickHost(RUNS[1], null, "__all__")).toBe("vm");
  });
});

describe("links", () => {
  it("opens a side's trace viewer searching for the op", () => {
    const href = traceHref("jax_mlp/s", "vm", "jit(train_step)/transpose(jvp())/transpose");
    expect(parseHash(href)).toEqual(
      new Map([
        ["run", "jax_mlp/s"],
        ["host", "vm"],
        ["tool", "trace_viewer"],
        ["c.q", "jit(train_step)/transpose(jvp())/transpose"],
      ]),
    );
  });
  it("swaps baseline and candidate with their step selections", () => {
    const state = parseHash(
      swappedHref({ run: "a", host: "w0", steps: "1:2" }, { run: "b", host: "w1", steps: "" }),
    );
    expect(Object.fromEntries(state)).toEqual({
      run: "a",
      host: "w0",
      tool: "compare",
      "c.base_run": "b",
      "c.base_host": "w1",
      "c.steps": "1:2",
    });
  });
});

describe("deltas", () => {
  it("more time or memory is worse, fewer occurrences are neutral", () => {
    expect(deltaTone("delta_per_step_us", "us", 12)).toBe("worse");
    expect(deltaTone("delta_peak_bytes", "bytes", -4096)).toBe("better");
    expect(deltaTone("delta_occurrences", "", 5)).toBe("neutral");
    expect(deltaTone("delta_per_step_us", "us", 0)).toBe("neutral");
    expect(deltaTone("base_per_step_us", "us", 3)).toBe("neutral");
    expect(deltaTone("delta_per_step_us", "us", null)).toBe("neutral");
  });
  it("formats signed percentages and intervals", () => {
    expect(signedPercent(12.345)).toBe("+12.3 %");
    expect(signedPercent(-0.04)).toBe("0.0 %");
    expect(signedPercent(Number.POSITIVE_INFINITY)).toBe("+∞ %");
    expect(intervalText({ ci_low_percent: -20.06, ci_high_percent: -9.5, confidence: 0.95 })).toBe("95 % CI -20.1 … -9.5 %");
    expect(intervalText({ ci_low_percent: null, ci_high_percent: null, confidence: 0.9 })).toBe("too few steps for a 90 % interval");
    expect(intervalText({ ci_low_percent: -3, ci_high_percent: null, confidence: 0.95 })).toBe("too few steps for a 95 % interval");
  });
  it("reads a direction as a tone", () => {
    expect(directionTone("faster")).toBe("good");
    expect(directionTone("slower")).toBe("bad");
    expect(directionTone("no change")).toBe("neutral");
    expect(directionTone("unknown")).toBe("neutral");
  });
});
