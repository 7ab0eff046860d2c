// Decoding a real `trace` answer (captured from `tbprof serve` on custom_loop: testdata/) in
// both encodings, and damaged frames.
import { describe, expect, it } from "vitest";
import { decodeFrame, decodeJsonFrame, FrameError } from "./frame";
import binary from "./testdata/custom_loop_frame.json";
import asJson from "./testdata/custom_loop_frame_json.json";

function bytes(): ArrayBuffer {
  const raw = atob(binary.base64);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out.buffer;
}

describe("trace frames", () => {
  it("decodes the binary frame to the same numbers as the JSON encoding", () => {
    const b = decodeFrame(bytes());
    const j = decodeJsonFrame(asJson);
    expect(b.counts).toEqual(j.counts);
    expect(b.strings).toEqual(j.strings);
    expect(b.tracks).toEqual(j.tracks);
    expect([...b.eventStart]).toEqual([...j.eventStart]);
    expect([...b.eventRow]).toEqual([...j.eventRow]);
    expect([...b.boxCount]).toEqual([...j.boxCount]);
    expect([...b.counterMax]).toEqual([...j.counterMax]);
  });

  it("accounts for every event of the window", () => {
    const f = decodeFrame(bytes());
    // The header's counts, the per-track ranges and the columns agree.
    expect(f.counts.returned).toBe(f.eventStart.length);
    let merged = 0;
    for (let i = 0; i < f.boxCount.length; i++) merged += f.boxCount[i] ?? 0;
    expect(f.counts.merged).toBe(merged);
    expect(f.counts.inWindow).toBe(f.counts.returned + f.counts.merged);
    let inWindow = 0;
    for (const r of f.slices.values()) inWindow += r.inWindow;
    expect(inWindow).toBe(f.counts.inWindow);
    // Visible events last at least one bucket; boxes sit on the bucket grid.
    for (let i = 0; i < f.eventDur.length; i++) expect(f.eventDur[i]).toBeGreaterThanOrEqual(f.resolutionPs);
    for (let i = 0; i < f.boxStart.length; i++) expect((f.boxStart[i] ?? 0) % f.resolutionPs).toBe(0);
    expect(f.startPs).toBe(100_000_000_000);
    expect(f.endPs).toBe(180_000_000_000);
  });

  it("rejects damaged frames", () => {
    expect(() => decodeFrame(new ArrayBuffer(4))).toThrow(FrameError);
    const buf = bytes().slice(0);
    new Uint8Array(buf)[0] = 0x58; // "XBTR"
    expect(() => decodeFrame(buf)).toThrow("bad magic");
    const truncated = bytes().slice(0, 2000);
    expect(() => decodeFrame(truncated)).toThrow(FrameError);
  });
});
