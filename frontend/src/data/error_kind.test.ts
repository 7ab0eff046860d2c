import { describe, expect, it } from "vitest";
import { ApiError } from "./api";
import { errorKind } from "./error_kind";

describe("error kinds", () => {
  it("takes the backend's kind", () => {
    expect(errorKind(404, { error: "tool 'kernel_stats' has no data for run 'x'", kind: "no_data" })).toBe("no_data");
    expect(errorKind(404, { error: "no such run", kind: "not_found" })).toBe("not_found");
    expect(errorKind(422, { error: "truncated", kind: "unreadable_profile", file: "a.xplane.pb" })).toBe("unreadable_profile");
  });
  it("never reads the message: a 404 without kind is not found, whatever it says", () => {
    expect(errorKind(404, { error: "tool 'kernel_stats' has no data for run 'x'" })).toBe("not_found");
  });
  it("falls back to the status for bodies without a kind (or with one it does not know)", () => {
    expect(errorKind(0, {})).toBe("unreachable");
    expect(errorKind(400, {})).toBe("bad_request");
    expect(errorKind(422, {})).toBe("unreadable_profile");
    expect(errorKind(503, {})).toBe("internal");
    expect(errorKind(405, {})).toBe("other");
    expect(errorKind(404, { kind: "something_new" })).toBe("not_found");
  });
  it("is on every ApiError", () => {
    expect(new ApiError("x", 404, "data", { error: "x", kind: "no_data" }).kind).toBe("no_data");
    expect(new ApiError("x", 0, "data").kind).toBe("unreachable");
  });
});
