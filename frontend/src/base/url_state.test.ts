import { describe, expect, it } from "vitest";
import { fromTensorBoardHash, parseHash, routedView, serializeState, subState, toTensorBoardHash, withUpdates } from "./url_state";

describe("own hash", () => {
  it("round-trips run names with slashes, spaces and regex characters", () => {
    const state = new Map([
      ["tool", "profile_summary"],
      ["run", "keras_cnn/train/2026_11_26_00_33_56"],
      ["t.lines.f.plane", "^/device:GPU:[0-9]+$ & more"],
      ["host", "__all__"],
    ]);
    const text = serializeState(state);
    // run, host, tool come first; the rest sorted: deterministic URLs.
    expect(text.startsWith("run=keras_cnn%2Ftrain%2F2026_11_26_00_33_56&host=__all__&tool=profile_summary&")).toBe(true);
    expect(parseHash("#" + text)).toEqual(state);
  });
  it("drops empty values and ignores junk", () => {
    expect(serializeState(new Map([["run", ""], ["tool", "x"]]))).toBe("tool=x");
    expect(parseHash("#junk&=x&a=1&b=%E0%A4%A")).toEqual(new Map([["a", "1"], ["b", "%E0%A4%A"]]));
    expect(parseHash("")).toEqual(new Map());
  });
  it("updates and selects by prefix", () => {
    const s = withUpdates(new Map([["t.ops.sort", "x"], ["t.ops.desc", "1"], ["run", "r"]]), { "t.ops.desc": null, "t.ops.page": "2" });
    expect(s).toEqual(new Map([["t.ops.sort", "x"], ["run", "r"], ["t.ops.page", "2"]]));
    expect(subState(s, "t.ops.")).toEqual(new Map([["sort", "x"], ["page", "2"]]));
  });
});

describe("TensorBoard hash", () => {
  it("reads the plugin's p.<plugin>. keys only", () => {
    const hash = "#tbprof&p.tbprof.run=a%2Fb&p.tbprof.tool=overview_page&p.other.run=zzz&smoothing=0.6";
    expect(fromTensorBoardHash(hash, "tbprof")).toEqual(new Map([["run", "a/b"], ["tool", "overview_page"]]));
  });
  it("replaces the plugin's keys and keeps TensorBoard's", () => {
    const hash = "#tbprof&p.tbprof.run=old&p.other.k=v";
    const out = toTensorBoardHash(hash, "tbprof", new Map([["run", "new/run"], ["tool", "t"]]));
    expect(out).toBe("#tbprof&p.other.k=v&p.tbprof.run=new%2Frun&p.tbprof.tool=t");
    expect(fromTensorBoardHash(out, "tbprof")).toEqual(new Map([["run", "new/run"], ["tool", "t"]]));
  });
  it("names the plugin tab when TensorBoard's hash is empty", () => {
    expect(toTensorBoardHash("", "tbprof", new Map([["run", "r"]]))).toBe("#tbprof&p.tbprof.run=r");
  });
});

describe("routed view", () => {
  it("keeps what the page is drawn from and leaves a page's own view out", () => {
    const state = new Map([
      ["tool", "op_profile"],
      ["t.ops.sort", "self_time_us"],
      ["o.top_percent", "90"],
      ["c.group", "by_category"],
      ["run", "keras_cnn/train/2026_11_26_00_33_56"],
      ["host", "vm"],
    ]);
    expect(routedView(state)).toBe("run=keras_cnn%2Ftrain%2F2026_11_26_00_33_56&host=vm&tool=op_profile&o.top_percent=90");
    // A sort or a group choice changes the URL, not the page drawn.
    expect(routedView(withUpdates(state, { "t.ops.sort": "name", "c.group": null }))).toBe(routedView(state));
    expect(routedView(withUpdates(state, { "o.top_percent": null }))).not.toBe(routedView(state));
  });
});
