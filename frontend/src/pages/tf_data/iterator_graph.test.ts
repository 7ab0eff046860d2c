// The iterator graph drawn by ECharts (server-side rendering: no DOM) from keras_cnn's real
// pipeline (demo_logs/keras_cnn, the tf_data_bottleneck_analysis answer's "iterators" table and
// its pipeline's bottleneck and critical path), in boxes of the sizes a browser can report.

import * as echarts from "echarts";
import { describe, expect, it } from "vitest";
import { drawable } from "../../widgets/chart";
import { type IteratorRow, iteratorGraph } from "./iterator_graph";

const ROOT = "Iterator::Root";
const PATH = [ROOT, `${ROOT}::Prefetch`, `${ROOT}::Prefetch::MapAndBatch`, `${ROOT}::Prefetch::MapAndBatch::Shuffle`,
  `${ROOT}::Prefetch::MapAndBatch::Shuffle::TensorSlice`];
// [kind, total_time_ms, self_time_ms, calls, avg_time_us], each on the critical path.
const MEASURES: [string, number, number, number, number][] = [
  ["Root", 0.704166, 0.152393, 8, 88.02075],
  ["Prefetch", 0.551773, 0.551773, 8, 68.971625],
  ["MapAndBatch", 0.681463, 0.681463, 8, 85.182875],
  ["Shuffle", 7.137605, 1.285809, 512, 13.940634765625],
  ["TensorSlice", 5.851796, 5.851796, 512, 11.4292890625],
];
const KERAS_CNN: IteratorRow[] = PATH.map((name, i) => {
  const [kind, totalMs, selfMs, calls, avgUs] = MEASURES[i] ?? ["", 0, 0, 0, 0];
  return { name, kind, totalMs, selfMs, calls, avgUs, critical: true };
});
const BOTTLENECK = PATH[PATH.length - 1] ?? "";

/** The page's graph in an ECharts instance of `widthPx` x `heightPx`. */
function drawIn(widthPx: number, heightPx: number): void {
  const { option } = iteratorGraph(KERAS_CNN, BOTTLENECK, PATH);
  const chart = echarts.init(null, undefined, { renderer: "svg", ssr: true, width: widthPx, height: heightPx });
  try {
    chart.setOption({ backgroundColor: "transparent", animation: false, ...option });
  } finally {
    chart.dispose();
  }
}

describe("iterator graph", () => {
  it("is one row of five iterators, the chart's height for one row", () => {
    const { rows } = iteratorGraph(KERAS_CNN, BOTTLENECK, PATH);
    expect(rows).toBe(1);
  });

  it("draws in a box with a size (the page's 1280 px layout: about 1000 x 200 px)", () => {
    expect(() => drawIn(1000, Math.max(200, 90 * 1 + 60))).not.toThrow();
  });

  // The browser error of the screenshot sets: a graph series whose box has no width or no
  // height (hidden, taken out of the page, not laid out yet) throws inside ECharts.
  it("throws inside ECharts in a box of zero width or height", () => {
    expect(() => drawIn(0, 200)).toThrow("Cannot read properties of null (reading '0')");
    expect(() => drawIn(1000, 0)).toThrow("Cannot read properties of null (reading '0')");
  });

  it("is drawn by the chart widget only in a box with a size", () => {
    expect(drawable(0, 200)).toBe(false);
    expect(drawable(1000, 0)).toBe(false);
    expect(drawable(0, 0)).toBe(false);
    expect(drawable(1000, 200)).toBe(true);
    expect(drawable(1, 1)).toBe(true);
  });
});
