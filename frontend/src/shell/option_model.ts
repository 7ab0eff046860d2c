// Tool options as real controls, not free-text boxes: which control an
// option gets, how options are grouped, and what goes into the URL ("o.<name>", absent when
// the value is the default). DOM-free; option_controls.ts draws it.

import type { ToolOption } from "../data/types";

export type Control =
  | { kind: "checkbox" }
  | { kind: "select"; choices: readonly string[] }
  | { kind: "number"; min: number | null; max: number | null; step: number | "any" }
  /** A list default (regexes, column names): edited as comma-separated text. */
  | { kind: "list" }
  | { kind: "text" };

export function controlOf(o: ToolOption, pageChoices?: readonly string[]): Control {
  if (typeof o.default === "boolean") return { kind: "checkbox" };
  const choices = o.choices ?? pageChoices;
  if (choices && choices.length > 0) return { kind: "select", choices };
  if (typeof o.default === "number") {
    return { kind: "number", min: o.min, max: o.max, step: Number.isInteger(o.default) ? 1 : "any" };
  }
  if (Array.isArray(o.default)) return { kind: "list" };
  return { kind: "text" };
}

/** The default as the URL would spell it. */
export function defaultText(o: ToolOption): string {
  if (o.default === null || o.default === undefined) return "";
  if (Array.isArray(o.default)) return o.default.map(String).join(",");
  if (typeof o.default === "boolean") return o.default ? "true" : "false";
  return typeof o.default === "number" || typeof o.default === "string" ? String(o.default) : JSON.stringify(o.default);
}

/**
 * The URL value of an edited control: null when it is the default (so the URL stays short)
 * or when a number is outside its bounds or not a number (the control says so instead).
 */
export function paramValue(o: ToolOption, c: Control, text: string): { value: string | null; error: string | null } {
  const t = text.trim();
  if (c.kind === "number") {
    if (t === "") return { value: null, error: null };
    const v = Number(t);
    if (!Number.isFinite(v)) return { value: null, error: "a number" };
    if (c.step === 1 && !Number.isInteger(v)) return { value: null, error: "a whole number" };
    if (c.min !== null && v < c.min) return { value: null, error: `at least ${c.min}` };
    if (c.max !== null && v > c.max) return { value: null, error: `at most ${c.max}` };
  }
  const normal = c.kind === "list" ? t.split(",").map((s) => s.trim()).filter(Boolean).join(",") : t;
  return { value: normal === defaultText(o) ? null : normal, error: null };
}

export interface OptionGroup {
  /** null: the ungrouped options. */
  title: string | null;
  options: ToolOption[];
}

/** More options than this, and the server marks none advanced: thresholds go under "More options". */
export const MANY_OPTIONS = 8;

/**
 * Main and advanced options, each in groups (in the order groups first appear). The server's
 * `advanced` and `group` fields decide; when it sends none and a tool has many options
 * (tfprof views: 21), the `min_*` thresholds are advanced, grouped as "Thresholds".
 */
export function arrangeOptions(options: readonly ToolOption[]): { main: OptionGroup[]; advanced: OptionGroup[] } {
  const flagged = options.some((o) => o.advanced !== null);
  const threshold = (o: ToolOption): boolean => !flagged && options.length > MANY_OPTIONS && o.name.startsWith("min_");
  const isAdvanced = (o: ToolOption): boolean => (flagged ? o.advanced === true : threshold(o));
  const group = (list: ToolOption[]): OptionGroup[] => {
    const out: OptionGroup[] = [];
    for (const o of list) {
      const title = o.group ?? (threshold(o) ? "Thresholds" : null);
      let g = out.find((x) => x.title === title);
      if (!g) out.push((g = { title, options: [] }));
      g.options.push(o);
    }
    return out;
  };
  return { main: group(options.filter((o) => !isAdvanced(o))), advanced: group(options.filter(isAdvanced)) };
}

/** "min_peak_bytes" -> "min peak bytes". */
export function optionLabel(name: string): string {
  return name.replace(/_/g, " ");
}
