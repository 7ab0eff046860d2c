// Reading fields of a tool's JSON without trusting its shape: a missing or mistyped field
// gives an empty value and the page leaves that part out, instead of failing as a whole.

export type Obj = Record<string, unknown>;

export function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function obj(o: unknown, key: string): Obj {
  const v = isObj(o) ? o[key] : undefined;
  return isObj(v) ? v : {};
}

export function num(o: unknown, key: string): number | null {
  const v = isObj(o) ? o[key] : undefined;
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

export function str(o: unknown, key: string): string {
  const v = isObj(o) ? o[key] : undefined;
  return typeof v === "string" ? v : "";
}

export function bool(o: unknown, key: string): boolean | null {
  const v = isObj(o) ? o[key] : undefined;
  return typeof v === "boolean" ? v : null;
}

export function list(o: unknown, key: string): unknown[] {
  const v = isObj(o) ? o[key] : undefined;
  return Array.isArray(v) ? (v as unknown[]) : [];
}

export function objs(o: unknown, key: string): Obj[] {
  return list(o, key).filter(isObj);
}

export function nums(o: unknown, key: string): number[] {
  return list(o, key).map((x) => (typeof x === "number" ? x : Number.NaN));
}

export function strs(o: unknown, key: string): string[] {
  return list(o, key).map((x) => (typeof x === "string" ? x : String(x)));
}
