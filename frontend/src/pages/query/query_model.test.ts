import { describe, expect, it } from "vitest";
import { parseHash } from "../../base/url_state";
import {
  chartSeries,
  columnKind,
  decodeSqlAnswer,
  eventHref,
  eventOf,
  examplesFor,
  passes,
  queryRows,
  tableColumns,
} from "./query_model";

const answer = decodeSqlAnswer({
  columns: [
    { name: "host", type: "VARCHAR" },
    { name: "plane_index", type: "INTEGER" },
    { name: "event_id", type: "INTEGER" },
    { name: "start_ps", type: "BIGINT" },
    { name: "dur_ps", type: "BIGINT" },
    { name: "s", type: "STRUCT(a INTEGER)" },
  ],
  rows: [
    ["rank0", 2, 10, 5000, 3000, { a: 1 }],
    ["rank1", 2, 11, 9000, null, null],
    ["rank0", 1, 12, 1000, 7000, null],
  ],
  row_count: 3,
  truncated: false,
  elapsed_ms: 4.5,
});
const columns = tableColumns(answer.columns);

describe("query model", () => {
  it("decodes an answer, structs as their JSON", () => {
    expect(answer.rowCount).toBe(3);
    expect(answer.rows[0]?.[5]).toBe('{"a":1}');
    expect(() => decodeSqlAnswer({ rows: [] })).toThrow();
  });

  it("reads DuckDB types as table kinds", () => {
    expect(["BIGINT", "INTEGER", "UBIGINT", "HUGEINT", "DOUBLE", "DECIMAL(5,2)", "BOOLEAN", "VARCHAR", "INTEGER[]"].map(columnKind))
      .toEqual(["int", "int", "int", "int", "float", "float", "bool", "str", "str"]);
    expect(columns.find((c) => c.name === "dur_ps")?.unit).toBe("ps");
  });

  it("filters by comparison on numbers and by regex on text", () => {
    expect(passes(5, "int", ">=5")).toBe(true);
    expect(passes(5, "int", "<5")).toBe(false);
    expect(passes(null, "int", ">1")).toBe(false);
    expect(passes("Rank0", "str", "^rank")).toBe(true);
    expect(passes("x", "str", "(")).toBe(false); // an invalid pattern matches nothing
  });

  it("sorts (nulls last), filters and pages", () => {
    const page = queryRows(columns, answer.rows, { sort: "dur_ps", desc: true, filters: {}, offset: 0, limit: 2 });
    expect(page.rows.map((r) => r[2])).toEqual([12, 10]);
    expect(page.totalRows).toBe(3);
    const asc = queryRows(columns, answer.rows, { sort: "dur_ps", desc: false, filters: {}, offset: 0, limit: null });
    expect(asc.rows.map((r) => r[2])).toEqual([10, 12, 11]);
    const filtered = queryRows(columns, answer.rows, { sort: null, desc: null, filters: { host: "rank0" }, offset: 1, limit: 5 });
    expect(filtered.totalRows).toBe(2);
    expect(filtered.rows.map((r) => r[2])).toEqual([12]);
  });

  it("charts the chosen numeric column over the first", () => {
    const s = chartSeries(columns, answer.rows, "dur_ps");
    expect(s?.x).toBe("host");
    expect(s?.numericX).toBe(false);
    // The null duration is skipped, not drawn as zero.
    expect(s?.xs).toEqual(["rank0", "rank0"]);
    expect(s?.ys).toEqual([3000, 7000]);
    expect(chartSeries(columns.slice(0, 1), answer.rows, null)).toBeNull();
  });

  it("labels a bar with the row's leading text columns", () => {
    const grouped = tableColumns([
      { name: "rank", type: "VARCHAR" }, { name: "name", type: "VARCHAR" }, { name: "n", type: "BIGINT" },
    ]);
    const s = chartSeries(grouped, [["rank0", "gemm", 3], ["rank0", "nccl", 5]], "n");
    expect(s?.x).toBe("rank · name");
    expect(s?.xs).toEqual(["rank0 · gemm", "rank0 · nccl"]);
    expect(s?.ys).toEqual([3, 5]);
  });

  it("links a row's event to the trace viewer around it", () => {
    const ev = eventOf(columns, answer.rows[0] ?? []);
    expect(ev).toEqual({ host: "rank0", plane: 2, row: 10, startPs: 5000, durPs: 3000 });
    const state = parseHash(eventHref("torch ddp", ev ?? { host: "", plane: 0, row: 0, startPs: null, durPs: null }));
    expect(state.get("run")).toBe("torch ddp");
    expect(state.get("host")).toBe("rank0");
    expect(state.get("tool")).toBe("trace_viewer");
    expect(state.get("c.sel")).toBe("2:10");
    // A window of the event with its own length on each side.
    expect([state.get("c.start"), state.get("c.end")]).toEqual(["2000", "11000"]);
    expect(eventOf(columns.slice(0, 2), answer.rows[0] ?? [])).toBeNull();
  });

  it("offers examples of the run's kind first", () => {
    expect(examplesFor("pytorch")[0]?.sql).toContain("cat = 'kernel'");
    expect(examplesFor("xspace")[0]?.sql).toContain("hlo_op");
    expect(examplesFor("tf1_timeline").length).toBeGreaterThan(0);
  });
});
