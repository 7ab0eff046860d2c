import { describe, expect, it } from "vitest";
import type { TableColumn } from "../data/types";
import { hiddenFromParam, hiddenToParam, keyFirstOrder, nameColumnIndex, shownOrder, stickyCount } from "./table_columns";

const cols = (spec: string): TableColumn[] =>
  spec.split(" ").map((s) => {
    const [name = "", kind = "str"] = s.split(":");
    return { name, label: name, kind: kind as TableColumn["kind"], unit: "", description: "" };
  });
const names = (c: TableColumn[], order: number[]): string[] => order.map((i) => c[i]?.name ?? "?");

// The backend's column orders of kernel_stats "kernels" and framework_op_stats "ops" (jax_mlp).
const KERNELS = cols("host kernel_name registers_per_thread:int shmem_bytes:int static_shmem_bytes:int dynamic_shmem_bytes:int " +
  "block_dim grid_dim occupancy_pct:float op_tensorcore_eligible:bool kernel_uses_tensorcore:bool op_name occurrences:int " +
  "total_duration_us:float avg_duration_us:float min_duration_us:float max_duration_us:float");
const OPS = cols("rank:int host_or_device type operation occurrences:int total_time_us:float avg_time_us:float " +
  "total_self_time_us:float avg_self_time_us:float device_self_time_fraction:float device_cumulative_self_time_fraction:float " +
  "host_self_time_fraction:float host_cumulative_self_time_fraction:float bound_by");

describe("table columns", () => {
  it("finds the name column (a kernel's name before its op's)", () => {
    expect(KERNELS[nameColumnIndex(KERNELS)]?.name).toBe("kernel_name");
    expect(OPS[nameColumnIndex(OPS)]?.name).toBe("operation");
    expect(nameColumnIndex(cols("host plane line event_count:int"))).toBe(-1);
  });

  it("puts identity, name, occurrences, total and self time first, the rest in backend order", () => {
    expect(names(KERNELS, keyFirstOrder(KERNELS)).slice(0, 5))
      .toEqual(["host", "kernel_name", "occurrences", "total_duration_us", "registers_per_thread"]);
    expect(names(OPS, keyFirstOrder(OPS)))
      .toEqual(["rank", "operation", "occurrences", "total_time_us", "total_self_time_us", "device_self_time_fraction",
        "host_self_time_fraction", "host_or_device", "type", "avg_time_us", "avg_self_time_us",
        "device_cumulative_self_time_fraction", "host_cumulative_self_time_fraction", "bound_by"]);
    // Every column exactly once.
    expect([...keyFirstOrder(OPS)].sort((a, b) => a - b)).toEqual(OPS.map((_, i) => i));
  });

  it("hides what the user hid, never the name", () => {
    const order = keyFirstOrder(KERNELS);
    const shown = shownOrder(KERNELS, order, ["kernel_name", "shmem_bytes", "nonexistent"]);
    expect(names(KERNELS, shown)).toContain("kernel_name");
    expect(names(KERNELS, shown)).not.toContain("shmem_bytes");
    expect(shown).toHaveLength(KERNELS.length - 1);
  });

  it("keeps the columns through the name in place when scrolling sideways", () => {
    expect(stickyCount(KERNELS, keyFirstOrder(KERNELS))).toBe(2); // host, kernel_name
    expect(stickyCount(OPS, keyFirstOrder(OPS))).toBe(2); // rank, operation
    // In the backend's order the op name is the fourth column: all four stay.
    expect(stickyCount(OPS, OPS.map((_, i) => i))).toBe(4);
    // A name far to the right does not pin half the table: the first column (the row's key) stays.
    expect(stickyCount(KERNELS, [2, 3, 4, 5, 1])).toBe(1);
    expect(stickyCount(KERNELS, [])).toBe(0);
    const lines = cols("host plane line event_count:int");
    expect(stickyCount(lines, [0, 1, 2, 3])).toBe(1);
  });

  it("reads and writes the hidden list of the URL", () => {
    expect(hiddenFromParam("a, b,,c")).toEqual(["a", "b", "c"]);
    expect(hiddenFromParam(null)).toEqual([]);
    expect(hiddenToParam([])).toBeNull();
    expect(hiddenToParam(["a", "b", "a"])).toBe("a,b");
  });
});
