import { describe, expect, it } from "vitest";
import { columnLabel, rankOf, shownColumns } from "./pod_columns";

describe("pod viewer columns", () => {
  it("drops the 'all devices' bar of a host with one device (jax_2hosts: one GPU per host)", () => {
    const cols = [
      { host: "worker0", device: "all devices" }, { host: "worker0", device: "/device:GPU:0" },
      { host: "worker1", device: "all devices" }, { host: "worker1", device: "/device:GPU:0" },
    ];
    expect(shownColumns(cols)).toEqual([1, 3]);
  });
  it("keeps it for a host with several devices, and a host-only 'all devices' column", () => {
    const cols = [
      { host: "a", device: "all devices" }, { host: "a", device: "/device:GPU:0" }, { host: "a", device: "/device:GPU:1" },
      { host: "cpu_only", device: "all devices" },
    ];
    expect(shownColumns(cols)).toEqual([0, 1, 2, 3]);
  });
  it("labels bars without cutting them", () => {
    expect(columnLabel({ host: "worker0", device: "/device:GPU:0" }, true)).toBe("worker0\nGPU:0");
    expect(columnLabel({ host: "worker0", device: "all devices" }, false)).toBe("all devices");
  });
});

describe("pod viewer ranks (#29 §4)", () => {
  it("orders PyTorch ranks by number and labels them 'rank N'", () => {
    const cols = [
      { host: "rank1.1795675218821096345", device: "/device:GPU:1" },
      { host: "rank0.1795675218821814413", device: "/device:GPU:0" },
    ];
    expect(shownColumns(cols)).toEqual([1, 0]);
    expect(columnLabel(cols[0] ?? { host: "", device: "" }, true)).toBe("rank 1\nGPU:1");
    expect(rankOf("worker0")).toBeNull();
    expect(rankOf("rank10.12")).toBe(10);
  });
});
