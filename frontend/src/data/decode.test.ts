// Decoding real backend responses (written by scripts/gen_frontend_fixtures.py from demo_logs/:
// testdata/*.json) and malformed ones.
import { describe, expect, it } from "vitest";
import { DecodeError, decodeRuns, decodeSettings, decodeTable, decodeToolResult, decodeTools, typedResult } from "./decode";
import runsJson from "./testdata/runs.json";
import summaryJson from "./testdata/profile_summary_jax_mlp.json";
import tableJson from "./testdata/table_lines_gpu.json";

describe("runs", () => {
  it("decodes the runs route", () => {
    const r = decodeRuns(runsJson);
    expect(r.allHosts).toBe("__all__");
    expect(r.runs.map((x) => x.name)).toEqual(runsJson.runs.map((x) => x.run));
    const two = r.runs.find((x) => x.name.startsWith("jax_2hosts/"));
    expect(two?.hosts).toEqual(["worker0", "worker1"]);
    const twoJson = runsJson.runs.find((x) => x.run === two?.name);
    expect(two?.toolsExact).toBe(twoJson?.tools_exact);
    expect(two?.mtime).toBe(twoJson?.mtime);
    expect(two?.multiHostTools).toContain("profile_summary");
  });
  it("decodes a page's total, absent from the whole list", () => {
    expect(decodeRuns(runsJson).total).toBeNull();
    expect(decodeRuns({ ...runsJson, total: 20000 }).total).toBe(20000);
    expect(() => decodeRuns({ ...runsJson, total: "many" })).toThrow("total should be a number");
  });
  it("names the path of a wrong field", () => {
    const bad = { runs: [{ run: "a", hosts: ["h", 3] }] };
    expect(() => decodeRuns(bad)).toThrow(DecodeError);
    expect(() => decodeRuns(bad)).toThrow("runs[0].hosts[1] should be a string, found number 3");
  });
});

describe("tables", () => {
  it("decodes a paged, filtered table", () => {
    const t = decodeTable(tableJson, "lines");
    expect(t.columns.map((c) => c.name)).toEqual(["host", "plane", "line", "event_count", "device_type"]);
    expect(t.columns[3]?.kind).toBe("int");
    expect(t.rows).toHaveLength(4); // limit=4
    expect(t.totalRows).toBe(9); // rows matching filter.plane=GPU before paging
    const counts = t.rows.map((r) => r[3] as number);
    expect(counts).toEqual([...counts].sort((a, b) => b - a)); // sort=event_count&desc=1
  });
  it("rejects rows of the wrong width or cell kind", () => {
    const columns = [{ name: "a", label: "A", kind: "int", unit: "" }];
    expect(() => decodeTable({ columns, rows: [[1, 2]] }, "t")).toThrow("t.rows[0] should be 1 cells");
    expect(() => decodeTable({ columns, rows: [["x"]] }, "t")).toThrow("t.rows[0][0] should be a number");
    expect(decodeTable({ columns, rows: [[null]] }, "t").rows).toEqual([[null]]); // NaN arrives as null
    expect(() => decodeTable({ columns: [{ name: "a", kind: "date" }], rows: [] }, "t")).toThrow("t.columns[0].kind");
  });
});

describe("tool results", () => {
  it("keeps free-form fields and decodes tables", () => {
    const r = decodeToolResult(summaryJson);
    expect(r.tool).toBe("profile_summary");
    expect(r.schemaVersion).toBe(1);
    expect(Object.keys(r.tables)).toEqual(["lines"]);
    expect(r.tables.lines?.rows).toHaveLength(3); // rows=3 cap
    expect(r.tables.lines?.totalRows).toBeGreaterThan(3);
    const summary = typedResult("profile_summary", r);
    expect(summary.raw.event_count).toBe(summaryJson.event_count);
    expect(Array.isArray(summary.raw.hosts)).toBe(true);
    expect(() => typedResult("overview_page", r)).toThrow(DecodeError);
  });
  it("decodes tools and settings", () => {
    const tools = decodeTools({ tools: [{ name: "x", title: "X", multi_host: true, options: [{ name: "o", default: false, help: "h" },
      { name: "n", default: 3, help: "", min: 0, max: 9, choices: null, group: "Limits", advanced: true }] }] });
    // Older servers send name/default/help only: the control fields are null.
    expect(tools[0]).toEqual({ name: "x", title: "X", multiHost: true, options: [
      { name: "o", default: false, help: "h", choices: null, min: null, max: null, group: null, advanced: null },
      { name: "n", default: 3, help: "", choices: null, min: 0, max: 9, group: "Limits", advanced: true },
    ] });
    const s = decodeSettings({ version: "1", capture_enabled: true, tools: [{ name: "t", title: "T" }] });
    expect(s.captureEnabled).toBe(true);
    // Older servers send name/title only: no help to show.
    expect(s.tools).toEqual([{ name: "t", title: "T", description: "", requires: "", howTo: [], needs: [] }]);
    const described = decodeSettings({ tools: [{ name: "t", title: "T", description: "d", requires: "steps.",
      how_to: ["Mark steps."], needs: ["events", "step_markers"] }] });
    expect(described.tools[0]).toEqual({ name: "t", title: "T", description: "d", requires: "steps.",
      howTo: ["Mark steps."], needs: ["events", "step_markers"] });
    expect(() => decodeSettings({ tools: [{ name: "t", how_to: [3] }] })).toThrow("settings.tools[0].how_to[0]");
    expect(() => decodeSettings({ capture_enabled: "yes" })).toThrow("settings.capture_enabled should be true or false");
  });
});
