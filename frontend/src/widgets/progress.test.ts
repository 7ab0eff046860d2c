import { describe, expect, it } from "vitest";
import { progressText } from "./progress";

describe("progress line", () => {
  it("counts hosts while a pod converts", () => {
    expect(progressText({ hostsTotal: 64, hostsConverted: 0 })).toBe("converting hosts: 0 / 64");
    expect(progressText({ hostsTotal: 64, hostsConverted: 63 })).toBe("converting hosts: 63 / 64");
  });
  it("says nothing for one host or once every host is converted", () => {
    expect(progressText({ hostsTotal: 1, hostsConverted: 0 })).toBeNull();
    expect(progressText({ hostsTotal: 64, hostsConverted: 64 })).toBeNull();
  });
});
