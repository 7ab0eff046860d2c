import { describe, expect, it } from "vitest";
import { deviceKind, devicesText } from "./profile_summary_page";

const plane = (name: string, deviceType = "", eventCount = 1) => ({ name, deviceType, eventCount });

describe("profile summary devices", () => {
  it("counts PyTorch GPU processes as GPUs (torch_ddp: python3 (GPU 0) and (GPU 1) on two ranks)", () => {
    const hosts = [
      { planes: [plane("python3 (CPU)", "", 4491), plane("python3 (GPU 0)", "", 696), plane("Spans")] },
      { planes: [plane("python3 (CPU)", "", 4486), plane("python3 (GPU 1)", "", 696)] },
    ];
    expect(devicesText(hosts)).toBe("2 × GPU");
  });
  it("keeps XSpace device planes and their device type", () => {
    expect(deviceKind(plane("/device:GPU:0", "NVIDIA H100"))).toBe("NVIDIA H100");
    expect(deviceKind(plane("/device:TPU:3"))).toBe("TPU");
    expect(deviceKind(plane("/host:CPU"))).toBeNull();
    expect(deviceKind(plane("python3 (CPU)"))).toBeNull();
  });
  it("says CPU only when there is no device with events", () => {
    expect(devicesText([{ planes: [plane("/host:CPU"), plane("/device:GPU:0", "", 0)] }])).toBe("CPU only");
  });
});
