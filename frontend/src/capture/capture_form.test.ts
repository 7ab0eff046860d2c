import { describe, expect, it } from "vitest";

import { DEFAULT_FIELDS, addressError, reportLines, validateCapture } from "./capture_form";

describe("addressError", () => {
  it.each(["localhost:6009", "grpc://localhost:6009", "10.0.0.7:65535", "[::1]:6009", "worker-0.cluster.local:1"])(
    "accepts %s",
    (a) => expect(addressError(a)).toBeNull(),
  );
  it.each([
    ["localhost", "expected host:port"],
    ["localhost:0", "port"],
    ["localhost:70000", "port"],
    ["http://localhost:6009", "only host:port"],
    ["localhost:6009/x", "no path"],
    ["user@h:1", "no path, user"],
    ["300.1.1.1:1", "not an IPv4 address"],
    ["a_b:1", "not a valid host name"],
    ["::1:6009", "expected host:port"],
    ["[::1]6009", "[addr]:port"],
  ])("rejects %s", (a, why) => expect(addressError(a)).toContain(why));
});

describe("validateCapture", () => {
  it("sends the defaults of the dialog (1000 ms, host 2, device 1, python 0, 3 retries)", () => {
    const { request, errors } = validateCapture({ ...DEFAULT_FIELDS, addresses: " localhost:6009 , grpc://h:1 " });
    expect(errors).toEqual({});
    expect(request).toEqual({
      addresses: "localhost:6009,grpc://h:1",
      duration_ms: 1000,
      host_tracer_level: 2,
      device_tracer_level: 1,
      python_tracer_level: 0,
      delay_ms: 0,
      retries: 3,
    });
  });
  it("names every wrong field and sends nothing", () => {
    const { request, errors } = validateCapture({
      ...DEFAULT_FIELDS,
      addresses: "localhost:1,LOCALHOST:1",
      durationMs: "0",
      hostTracerLevel: "4",
      retries: "1.5",
      delayMs: "600001",
    });
    expect(request).toBeNull();
    expect(errors).toEqual({
      addresses: "LOCALHOST:1 is listed twice",
      durationMs: "from 1 to 600000",
      hostTracerLevel: "from 0 to 3",
      retries: "a whole number",
      delayMs: "from 0 to 600000",
    });
  });
  it("asks for an address when there is none", () => {
    expect(validateCapture(DEFAULT_FIELDS).errors.addresses).toContain("enter host:port");
    expect(validateCapture({ ...DEFAULT_FIELDS, addresses: "a:1,,b:2" }).errors.addresses).toContain("empty");
  });
});

describe("capture report lines", () => {
  const result = (address: string, ok: boolean, message: string) => ({
    address, host: address, ok, kind: ok ? "ok" : "unreachable", message, path: "", attempts: 1,
  }) as const;
  const report = (message: string, results: ReturnType<typeof result>[]) => ({
    ok: results.every((r) => r.ok), message, session: "s", run: null, sessionDir: "", results: [...results],
  });
  it("says a single address's error once: in the headline", () => {
    const msg = "could not connect to a profiler server at localhost:1 (4 attempts): refused.";
    const lines = reportLines(report(msg, [result("localhost:1", false, msg)]));
    expect(lines.headline).toBe(msg);
    expect(lines.results).toEqual([{ address: "localhost:1", ok: false, message: null }]);
  });
  it("keeps each address's own words when the headline sums up several", () => {
    const lines = reportLines(report("1 of 2 hosts captured", [result("a:1", true, "wrote a.xplane.pb"), result("b:1", false, "refused")]));
    expect(lines.results.map((r) => r.message)).toEqual(["wrote a.xplane.pb", "refused"]);
  });
});
