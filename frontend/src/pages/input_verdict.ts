// The input-bound verdict as the backend states it (the backend owns verdicts, so pages agree).
// The overview's "Waiting for input" card and the input pipeline analyzer both colour and
// name the verdict from `input_bound` ("high" | "moderate" | "potential" | "no" | "unknown")
// and show the thresholds the backend sends beside it; nothing here compares percentages,
// so a card can never disagree with the verdict at exactly 20 %.

import { formatPercent } from "../base/format";
import type { Tone } from "../widgets/cards";
import type { InputThresholds } from "../data/schema.gen";

export interface InputVerdict {
  /** The backend's `input_bound`, "" when the response has none. */
  bound: string;
  tone: Tone;
  label: string;
  /** "input-bound at ≥ 20 %, moderate at ≥ 5 %": from the response, "" when it sends none. */
  thresholds: string;
  /** What the verdict rests on ("'all others' 68.7% of step time"), "" when the backend sends none. */
  reason: string;
}

// "yes" / "maybe" are older names of the same verdicts (kept for cached results).
const TONES: Record<string, Tone> = { high: "bad", yes: "bad", moderate: "warn", maybe: "warn", potential: "warn", no: "good" };
const LABELS: Record<string, string> = {
  high: "Input-bound (high)",
  yes: "Input-bound",
  moderate: "Input-bound (moderate)",
  maybe: "Possibly input-bound",
  potential: "Possibly input-bound",
  no: "Not input-bound",
  unknown: "No verdict (no steps)",
};

/** What a verdict reads: the overview's `recommendation`, the input pipeline analyzer's `verdict`. */
export interface VerdictHolder {
  input_bound?: string;
  input_bound_reason?: string;
  input_thresholds_percent?: InputThresholds;
}

/**
 * The verdict of an object holding `input_bound` (the overview's `recommendation`, the input
 * pipeline analyzer's `verdict`) and, next to it, `input_thresholds_percent`: `{high, moderate}`
 * (docs/api.md).
 */
export function inputVerdict(holder: VerdictHolder): InputVerdict {
  const bound = holder.input_bound ?? "";
  const high = holder.input_thresholds_percent?.high ?? null;
  const moderate = holder.input_thresholds_percent?.moderate ?? null;
  const pct = (x: number): string => formatPercent(x, Number.isInteger(x) ? 0 : 1);
  const parts: string[] = [];
  if (high !== null) parts.push(`input-bound at ≥ ${pct(high)}`);
  if (moderate !== null) parts.push(`moderate at ≥ ${pct(moderate)}`);
  return {
    bound,
    tone: TONES[bound] ?? "neutral",
    label: LABELS[bound] ?? (bound ? `Input-bound: ${bound}` : ""),
    thresholds: parts.join(", "),
    reason: holder.input_bound_reason ?? "",
  };
}

/** The hint under the "Waiting for input" card: the verdict in words and its thresholds. */
export function inputCardHint(v: InputVerdict): string {
  // "Possibly input-bound" rests on 'all others' time, not on the input share shown above it:
  // the hint names it, so 0.0 % beside "possibly input-bound" reads as what it is.
  if (v.bound === "potential" && v.reason) return `of the step time · ${v.label}: ${v.reason}`;
  return ["of the step time", v.label, v.thresholds ? `(${v.thresholds})` : ""].filter(Boolean).join(" · ").replace(" · (", " (");
}
