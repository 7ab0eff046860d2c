import { describe, expect, it } from "vitest";
import { csvTextCell, parseCsv, pythonFloatRepr, toCsv } from "./csv";

describe("pythonFloatRepr", () => {
  // Expected strings are Python 3's repr() of the same floats.
  it.each([
    [1.0, "1.0"],
    [0.1, "0.1"],
    [1e16, "1e+16"], // Python switches to exponent form at 1e16 (JavaScript at 1e21)
    [1e15, "1000000000000000.0"],
    [1e-5, "1e-05"], // ... and below 1e-4 (JavaScript below 1e-6), with two exponent digits
    [0.0001, "0.0001"],
    [2.5e-7, "2.5e-07"],
    [123456789.123, "123456789.123"],
    [12345678901234568, "1.2345678901234568e+16"],
    [1e22, "1e+22"],
    [-0.0, "-0.0"],
    [0, "0.0"],
    [-42.5, "-42.5"],
  ])("%s -> %s", (v, out) => expect(pythonFloatRepr(v)).toBe(out));
});

describe("toCsv", () => {
  it("writes what Python's csv.writer writes", () => {
    const columns = [
      { name: "name", kind: "str" as const },
      { name: "dur_us", kind: "float" as const },
      { name: "n", kind: "int" as const },
      { name: "ok", kind: "bool" as const },
    ];
    const rows = [
      ["a,b", 1.0, 3, true],
      ['say "hi"', 1e-5, 0, false],
      ["line\nbreak", 1.5e16, -2, null],
      ["", 123456789.123, 7, null],
    ];
    // Produced by csv.writer(out, lineterminator="\n") with the same Python values
    // (None written as ""), as the backend's csv route does.
    const python =
      'name,dur_us,n,ok\n"a,b",1.0,3,True\n"say ""hi""",1e-05,0,False\n"line\nbreak",1.5e+16,-2,\n,123456789.123,7,\n';
    expect(toCsv(columns, rows)).toBe(python);
  });

  it("round-trips through parseCsv", () => {
    const columns = [
      { name: "a", kind: "str" as const },
      { name: "b", kind: "int" as const },
    ];
    const text = toCsv(columns, [
      ['x,"y"', 1],
      ["multi\nline", 2],
    ]);
    expect(parseCsv(text)).toEqual([
      ["a", "b"],
      ['x,"y"', "1"],
      ["multi\nline", "2"],
    ]);
  });
});

describe("csvTextCell (OWASP CSV injection)", () => {
  // Text a spreadsheet would evaluate gets a leading ' (OWASP's advice); the backend's
  // csv_text_cell gives the same answers (tests/hostile/test_csv_injection.py has this table too).
  it.each([
    ["=HYPERLINK(\"http://x\",\"y\")", "'=HYPERLINK(\"http://x\",\"y\")"],
    ["+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"],
    ["-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"],
    ["@SUM(1+1)", "'@SUM(1+1)"],
    ["\t=1", "'\t=1"],
    ["\r=1", "'\r=1"],
    ["-", "'-"],
    ["-inf", "'-inf"],
    ["-1.5", "-1.5"],
    ["+2e-3", "+2e-3"],
    ["-.5", "-.5"],
    ["MatMul", "MatMul"],
    ["a=b", "a=b"],
    ["", ""],
  ])("%j -> %j", (text, out) => expect(csvTextCell(text)).toBe(out));

  it("leaves number cells numeric, negative ones too", () => {
    const csv = toCsv([{ name: "name", kind: "str" }, { name: "v", kind: "float" }, { name: "n", kind: "int" }],
      [["=1+1", -2.5, -3]]);
    expect(csv).toBe("name,v,n\n'=1+1,-2.5,-3\n");
  });
});
