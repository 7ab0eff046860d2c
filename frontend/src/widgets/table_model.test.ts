import { describe, expect, it } from "vitest";
import type { TableColumn } from "../data/types";
import {
  cellText,
  DEFAULT_VIEW,
  headerLabel,
  isDefaultView,
  nextSort,
  pageCount,
  rowRangeLabel,
  toQuery,
  viewFromParams,
  viewToUpdates,
  withFilter,
} from "./table_model";

const col = (name: string, kind: TableColumn["kind"], unit = ""): TableColumn => ({ name, label: name, kind, unit, description: "" });

describe("view state", () => {
  it("reads and writes URL keys", () => {
    const v = viewFromParams(new Map([["sort", "dur_us"], ["desc", "1"], ["page", "3"], ["f.name", "^Mat"], ["f.empty", ""]]));
    expect(v).toEqual({ sort: "dur_us", desc: true, page: 3, filters: { name: "^Mat" } });
    const next = withFilter(v, "name", "");
    // Clearing a filter deletes its key and returns to page 0.
    expect(viewToUpdates("ops.", v, next)).toEqual({ "ops.sort": "dur_us", "ops.desc": "1", "ops.page": null, "ops.f.name": null });
  });
  it("ignores junk pages", () => {
    expect(viewFromParams(new Map([["page", "-2"]])).page).toBe(0);
    expect(viewFromParams(new Map([["page", "x"]])).page).toBe(0);
    expect(isDefaultView(viewFromParams(new Map()))).toBe(true);
  });
  it("sorts numbers largest first, text A-Z, and flips on a second click", () => {
    const byCount = nextSort({ ...DEFAULT_VIEW, page: 4 }, col("n", "int"));
    expect(byCount).toMatchObject({ sort: "n", desc: true, page: 0 });
    expect(nextSort(byCount, col("n", "int")).desc).toBe(false);
    expect(nextSort(byCount, col("name", "str"))).toMatchObject({ sort: "name", desc: false });
  });
  it("turns into a backend query", () => {
    const v = { sort: "n", desc: false, filters: { name: "x" }, page: 2 };
    expect(toQuery(v, 50)).toEqual({ sort: "n", desc: false, filters: { name: "x" }, offset: 100, limit: 50 });
  });
});

describe("labels", () => {
  it("counts rows", () => {
    expect(rowRangeLabel(0, 0, 0)).toBe("No rows");
    expect(rowRangeLabel(0, 1, 1)).toBe("1 row");
    expect(rowRangeLabel(0, 28, 28)).toBe("28 rows");
    expect(rowRangeLabel(100, 100, 1234)).toBe("Rows 101–200 of 1,234");
    expect(pageCount(1234, 100)).toBe(13);
    expect(pageCount(0, 100)).toBe(1);
  });
  it("puts units in headers and formats cells", () => {
    expect(headerLabel(col("t", "float", "us"))).toBe("t (µs)");
    expect(headerLabel(col("b", "int", "bytes"))).toBe("b"); // cells carry byte units
    expect(cellText(1536, col("b", "int", "bytes"))).toBe("1.5 KiB");
    expect(cellText(12.345, col("p", "float", "%"))).toBe("12.3");
    expect(cellText(1234567, col("n", "int"))).toBe("1,234,567");
    expect(cellText(null, col("n", "float"))).toBe("–");
    expect(cellText(true, col("ok", "bool"))).toBe("yes");
    // fractions read as percentages: 0.5678 -> "56.8" under "f (%)"
    expect(cellText(0.5678, col("f", "float", "fraction"))).toBe("56.8");
    expect(headerLabel(col("f", "float", "fraction"))).toBe("f (%)");
  });
});
