// Page logic that is not drawing: pie aggregation, the overview's input-bound tone, step labels.
import { describe, expect, it } from "vitest";
import { legendLabels, middleEllipsis, pieLayout, pieOption, pieSlices, sequenceText } from "./common";
import { inputCardHint, inputVerdict } from "./input_verdict";
import { opPlacementCards } from "./overview/overview_page";
import { legendRowCount, meanAndSpread, shortHostNames, stepConfidenceText, stepHosts } from "./steps_common";

describe("pieOption", () => {
  it("keeps the largest slices and sums the rest into Other", () => {
    const slices = Array.from({ length: 13 }, (_, i) => ({ name: `op${i}`, value: i + 1 }));
    const series = (pieOption(slices, "us", 10).series as { data: { name: string; value: number }[] }[])[0];
    const data = series?.data ?? [];
    expect(data).toHaveLength(11);
    expect(data[0]).toEqual({ name: "op12", value: 13 }); // largest first
    // op0..op2 (values 1+2+3 = 6) fall outside the top 10.
    expect(data[10]).toMatchObject({ name: "Other (3)", value: 6 });
  });
  it("drops empty slices, never makes an 'Other (1)', keeps fixed colours", () => {
    expect(pieSlices([{ name: "a", value: 0 }, { name: "b", value: 2 }])).toEqual([{ name: "b", value: 2 }]);
    const nine = Array.from({ length: 9 }, (_, i) => ({ name: `k${i}`, value: 9 - i }));
    expect(pieSlices(nine, 8).map((s) => s.name)).toEqual(nine.map((s) => s.name));
    expect(pieSlices([...nine, { name: "z", value: 0.5 }], 8).at(-1)).toMatchObject({ name: "Other (2)", value: 1.5 });
    const series = (pieOption([{ name: "a", value: 1, color: "#123456" }, { name: "b", value: 1 }], "ms").series as { data: unknown[] }[])[0];
    expect(series?.data[0]).toEqual({ name: "a", value: 1, itemStyle: { color: "#123456" } });
  });
  it("cuts long legend names in the middle, keeping the end", () => {
    expect(middleEllipsis("short", 26)).toBe("short");
    const cut = middleEllipsis("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 26);
    expect(cut).toHaveLength(26);
    expect(cut.endsWith("ncclWork*)")).toBe(true);
    expect(cut.startsWith("ncclDevKe")).toBe(true);
  });
});

describe("input verdict", () => {
  it("takes colour and words from the backend's input_bound, never from the percentage", () => {
    // Exactly 20 %: the backend says "high" (it tests >= 20); the card must agree.
    expect(inputVerdict({ input_bound: "high" }).tone).toBe("bad");
    expect(inputVerdict({ input_bound: "moderate" }).tone).toBe("warn");
    // "potential" comes from 'all others' time, not from the input wait: still a warning.
    expect(inputVerdict({ input_bound: "potential" })).toMatchObject({ tone: "warn", label: "Possibly input-bound" });
    expect(inputVerdict({ input_bound: "no" })).toMatchObject({ tone: "good", label: "Not input-bound" });
    expect(inputVerdict({ input_bound: "unknown" }).tone).toBe("neutral");
    expect(inputVerdict({}).tone).toBe("neutral");
  });
  it("shows the thresholds the backend sends beside the verdict, and none when it sends none", () => {
    const v = inputVerdict({ input_bound: "no", input_thresholds_percent: { high: 20, moderate: 5 } });
    expect(v.thresholds).toBe("input-bound at ≥ 20%, moderate at ≥ 5%");
    expect(inputCardHint(v)).toBe("of the step time · Not input-bound (input-bound at ≥ 20%, moderate at ≥ 5%)");
    expect(inputVerdict({ input_bound: "no" }).thresholds).toBe("");
    expect(inputCardHint(inputVerdict({ input_bound: "no" }))).toBe("of the step time · Not input-bound");
  });
});

describe("all-hosts step chart", () => {
  const table = (rows: [string, string][]) => ({
    columns: [
      { name: "step", label: "Step", kind: "str" as const, unit: "", description: "" },
      { name: "host", label: "Host", kind: "str" as const, unit: "", description: "" },
    ],
    rows, totalRows: rows.length, offset: 0, meta: {},
  });
  it("names the host of each bar: the backend's list first", () => {
    expect(stepHosts({ step: ["a", "b"], host: ["w0", "w1"] }, undefined)).toEqual(["w0", "w1"]);
  });
  it("else the steps table's host of the same step", () => {
    // jax_2hosts: the step chart keeps, per step, the slower host's bar.
    expect(stepHosts({ step: ["train 4", "train 5"] }, table([["train 4", "worker1"], ["train 5", "worker0"]])))
      .toEqual(["worker1", "worker0"]);
    // A name on two hosts is ambiguous: no host for that bar.
    expect(stepHosts({ step: ["s", "t"] }, table([["s", "w0"], ["s", "w1"], ["t", "w0"], ["u", "w1"]]))).toBeNull();
  });
  it("says nothing when every bar is from one host", () => {
    expect(stepHosts({ step: ["a", "b"], host: ["w0", "w0"] }, undefined)).toBeNull();
    expect(stepHosts({ step: ["a"] }, undefined)).toBeNull();
  });
});

describe("op placement cards", () => {
  const perf = { host_op_time_percent: 3.8, device_op_time_percent: 96.2, host_op_time_eager_percent: 0, device_op_time_eager_percent: 0 };
  it("labels placement by time and by count", () => {
    const both = opPlacementCards({ ...perf, device_op_count_percent: 40, host_op_count_percent: 60 }, true);
    expect(both.map((c) => [c.label, c.value, c.hint])).toEqual([
      ["Op placement, by time", "96.2% device", "3.8% host · eager: 0.0% of device, 0.0% of host op time"],
      ["Op placement, by count", "40.0% device", "60.0% host (of all ops run)"],
    ]);
  });
  it("speaks of the host alone on host-only runs", () => {
    const hostOnly = { ...perf, host_op_time_percent: 100, device_op_time_percent: 0, host_op_time_eager_percent: 12,
      host_op_count_percent: 100, device_op_count_percent: 0 };
    expect(opPlacementCards(hostOnly, false).map((c) => c.value)).toEqual(["100.0% host", "100.0% host"]);
  });
});

describe("step confidence line", () => {
  it("names each confidence the backend sends and says nothing when it sends none", () => {
    expect(stepConfidenceText({ step_confidence: "markers" })).toMatch(/^Step confidence: markers/);
    expect(stepConfidenceText({ step_confidence: "inferred" })).toContain("similar durations");
    expect(stepConfidenceText({ step_confidence: "none" })).toContain("no input-bound verdict");
    expect(stepConfidenceText({ step_confidence: "later" })).toBe("Step confidence: later");
    expect(stepConfidenceText({ step_confidence: "" })).toBe("");
  });
});

describe("meanAndSpread (#29 §4)", () => {
  it("picks the mean's unit and gives the spread the mean's precision", () => {
    expect(meanAndSpread(0.0059, 0.000018)).toBe("5.9 µs ± 0.018");
    expect(meanAndSpread(5.579658, 0.18510749)).toBe("5.58 ms ± 0.19");
    expect(meanAndSpread(1234.5, 10)).toBe("1.23 s ± 0.01");
    expect(meanAndSpread(0.00077, 0.0000114)).toBe("770 ns ± 11");
    expect(meanAndSpread(2, null)).toBe("2 ms");
  });
});

describe("pie legends (#29 §4)", () => {
  it("merges the backend's 'Other (N)' into one 'Other'", () => {
    const slices = [...Array.from({ length: 10 }, (_, i) => ({ name: `op${String(i)}`, value: 100 - i })), { name: "Other (12)", value: 5 }];
    const shown = pieSlices(slices, 8);
    expect(shown.filter((s) => s.name.startsWith("Other"))).toEqual([{ name: "Other (14)", value: 91 + 92 + 5, color: "#bab0ac" }]);
  });
  it("keeps the part where long names differ", () => {
    const names = [0, 1, 2, 3].map((i) => `ncclDevKernel_AllReduce_Sum_f32_RING_LL${String(i)}(ncclDevKernelArgsStorage<4096ul>)`);
    const labels = legendLabels(names, 26);
    expect(new Set(labels.values()).size).toBe(4);
    for (const [name, label] of labels) {
      expect(label.length).toBeLessThanOrEqual(26);
      expect(label).toContain(`LL${name.charAt(name.indexOf("LL") + 2)}`);
    }
    expect(legendLabels(["short"], 26).get("short")).toBe("short");
  });
});

describe("step chart labels and legends (#35)", () => {
  it("names a PyTorch rank by its rank, not its process id, while names stay distinct", () => {
    expect(shortHostNames(["rank1.1795675218821096345", "rank0.1795675218821814413"])).toEqual(["rank1", "rank0"]);
    expect(shortHostNames(["10.0.0.1", "10.0.0.2"])).toEqual(["10.0.0.1", "10.0.0.2"]); // "10" twice: kept whole
    expect(shortHostNames(["worker0", null])).toEqual(["worker0", null]);
  });
  it("gives a legend as many rows as its labels need", () => {
    // Six step categories: 35 px + 7 px per character each, in a 300 px and a 2000 px chart.
    const labels = ["Device compute", "Device to device", "Device collectives", "Host compute", "Kernel launch", "All others"];
    const widths = labels.map((l) => 35 + 7 * l.length);
    expect(widths.reduce((a, b) => a + b, 0)).toBeLessThan(2000 - 20);
    expect(legendRowCount(labels, 2000)).toBe(1);
    expect(legendRowCount(labels, 300)).toBeGreaterThanOrEqual(Math.ceil(widths.reduce((a, b) => a + b, 0) / 280));
    expect(legendRowCount([], 300)).toBe(1);
  });
  it("puts the donut at the left edge and gives the legend the rest", () => {
    // 486 x 300 (a half-width panel at 1280 px): radius 0.6 x 150 = 90 px, centre 8 + 90 px,
    // legend from 98 + 90 + 16 = 204 px; 486 - 204 - 18 - 8 = 256 px at 6.6 px a character.
    const l = pieLayout(486, 300);
    expect(l.radiusPx).toBeCloseTo(90);
    expect(l.centreXPx).toBeCloseTo(98);
    expect(l.legendLeftPx).toBeCloseTo(204);
    expect(l.legendChars).toBe(Math.floor((486 - 204 - 18 - 8) / 6.6));
    expect(l.legendChars).toBeGreaterThanOrEqual("COMPUTATION overlapping COMMUNICATION".length);
    expect(pieLayout(100, 300).legendChars).toBe(16);
    const option = pieOption([{ name: "a", value: 1 }, { name: "b", value: 2 }], "us", 8, l);
    expect((option.legend as { left: number }).left).toBeCloseTo(204);
  });
});

describe("kernel sequences (#35)", () => {
  it("names each kernel of a pattern by its function, so rows of one operator differ", () => {
    const a = "aten::addmm|void gemv2T_kernel_val<int, int, float, 128, 16, 4, 4, false, false>(float const*, float)|void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float> >(int)";
    const b = "aten::addmm|ampere_sgemm_32x128_tn|void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float> >(int)";
    expect(sequenceText(a)).toBe("aten::addmm → gemv2T_kernel_val → at::native::vectorized_elementwise_kernel");
    expect(sequenceText(b)).toBe("aten::addmm → ampere_sgemm_32x128_tn → at::native::vectorized_elementwise_kernel");
    const anon = "aten::sum|void at::native::(anonymous namespace)::reduce_kernel<512, 1>(int)";
    expect(sequenceText(anon)).toBe("aten::sum → at::native::reduce_kernel");
  });
});
