// The compare page's logic without the DOM: which two profiles (URL state), the request
// parameters of the compare routes, the default baseline, links into each side's trace viewer,
// and how a delta reads (better, worse, neutral).

import { serializeState } from "../../base/url_state";
import type { CompareVerdict, StepChange } from "../../data/schema.gen";
import type { RunInfo } from "../../data/types";

/** One side: a run, a host (or the all-hosts token) and an optional step selection ("3:6"). */
export interface Side {
  run: string;
  host: string | null;
  steps: string;
}

/** Page state keys ("c.<key>" in the URL) of the baseline and the candidate's step selection. */
export const PARAM = {
  baseRun: "base_run",
  baseHost: "base_host",
  baseSteps: "base_steps",
  steps: "steps",
} as const;

/** Query parameters of compare / compare_table / compare_csv for a pair. */
export function compareParams(base: Side, cand: Side): [string, string][] {
  const out: [string, string][] = [["base_run", base.run]];
  if (base.host) out.push(["base_host", base.host]);
  if (base.steps.trim()) out.push(["base_steps", base.steps.trim()]);
  out.push(["run", cand.run]);
  if (cand.host) out.push(["host", cand.host]);
  if (cand.steps.trim()) out.push(["steps", cand.steps.trim()]);
  return out;
}

/** The folder of a run ("jax_mlp" of "jax_mlp/2026_11_26_00_32_23"): one experiment's sessions. */
export function runFolder(name: string): string {
  const cut = name.lastIndexOf("/");
  return cut < 0 ? "" : name.slice(0, cut);
}

/**
 * The hosts of a run as one session of a program names them: a PyTorch rank's host is
 * "rank1.<process id>", and the process id changes every session, the rank does not.
 */
export function sessionHosts(hosts: readonly string[]): string[] {
  return hosts.map((x) => x.split(".")[0] ?? x).sort();
}

/**
 * The baseline when the URL names none: an earlier session of the same run (the same run folder,
 * the same kind, the same hosts or ranks; runs are newest first), so "what changed since last
 * time" is one click away; else none, and the page asks. A run at the top of the logdir (no
 * folder) has no sessions: comparing it with another run by default (torch_ddp against
 * torch_cnn, a Keras CPU run against a JAX LLM) would show a confident change between
 * unrelated programs.
 */
export function defaultBaseline(runs: readonly RunInfo[], cand: Side): Side | null {
  const i = runs.findIndex((r) => r.name === cand.run);
  const self = runs[i];
  if (!self || runFolder(self.name) === "") return null;
  const hosts = sessionHosts(self.hosts).join("\n");
  const previous = runs.slice(i + 1).find((r) => r.hosts.length > 0 && r.kind === self.kind
    && runFolder(r.name) === runFolder(self.name) && sessionHosts(r.hosts).join("\n") === hosts);
  if (!previous) return null;
  const host = cand.host !== null && previous.hosts.includes(cand.host) ? cand.host
    : previous.hosts.length === 1 ? (previous.hosts[0] ?? null) : cand.host;
  return { run: previous.name, host, steps: "" };
}

/** The host a side's run needs: its only host, the chosen one if it exists, else the first. */
export function pickHost(run: RunInfo | undefined, wanted: string | null, allHosts: string): string | null {
  if (!run || run.hosts.length === 0) return wanted;
  if (run.hosts.length === 1) return run.hosts[0] ?? null;
  if (wanted === allHosts || (wanted !== null && run.hosts.includes(wanted))) return wanted;
  return run.hosts[0] ?? null;
}

/** A hash link to the trace viewer of `run`/`host` searching for `query` (the viewer's "c.q"). */
export function traceHref(run: string, host: string | null, query: string): string {
  const state = new Map<string, string>([
    ["run", run],
    ["tool", "trace_viewer"],
    ["c.q", query],
  ]);
  if (host) state.set("host", host);
  return `#${serializeState(state)}`;
}

/** The hash of the compare page with baseline and candidate exchanged. */
export function swappedHref(base: Side, cand: Side): string {
  const state = new Map<string, string>([
    ["run", base.run],
    ["tool", "compare"],
    [`c.${PARAM.baseRun}`, cand.run],
  ]);
  if (base.host) state.set("host", base.host);
  if (cand.host) state.set(`c.${PARAM.baseHost}`, cand.host);
  if (cand.steps) state.set(`c.${PARAM.baseSteps}`, cand.steps);
  if (base.steps) state.set(`c.${PARAM.steps}`, base.steps);
  return `#${serializeState(state)}`;
}

export type DeltaTone = "better" | "worse" | "neutral";

/**
 * How a delta cell reads: more time, bytes or fragmentation is worse, less is better; other
 * deltas (occurrences, counts) are just differences. Tiny relative changes are neutral.
 */
export function deltaTone(column: string, unit: string, value: unknown): DeltaTone {
  if (typeof value !== "number" || !Number.isFinite(value) || value === 0) return "neutral";
  if (!column.startsWith("delta_")) return "neutral";
  const costly = ["us", "ms", "s", "ns", "ps", "bytes", "fraction", "%", "pp"].includes(unit);
  if (!costly || /occurrences|allocations|capacity/.test(column)) return "neutral";
  return value > 0 ? "worse" : "better";
}

/** "+12.3 %" / "-4.0 %" / "–" for a signed percentage. */
export function signedPercent(value: number | null | undefined, decimals = 1): string {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  if (!Number.isFinite(value)) return value > 0 ? "+∞ %" : "-∞ %";
  const fixed = value.toFixed(decimals);
  const zero = /^-?0(\.0*)?$/.test(fixed);
  return `${zero ? fixed.replace(/^-/, "") : value > 0 ? `+${fixed}` : fixed} %`;
}

/** "95 % CI -20.1 … -9.5 %" or a reason there is none. */
export function intervalText(change: Pick<StepChange, "ci_low_percent" | "ci_high_percent" | "confidence">): string {
  const level = Math.round(change.confidence * 100);
  const low = change.ci_low_percent;
  const high = change.ci_high_percent;
  if (low === null || high === null) return `too few steps for a ${level} % interval`;
  return `${level} % CI ${signedPercent(low).replace(/ %$/, "")} … ${signedPercent(high)}`;
}

/** How a verdict or a step-time change reads: faster is good, slower bad, the rest neutral. */
export function directionTone(direction: CompareVerdict["kind"]): "good" | "bad" | "neutral" {
  return direction === "faster" ? "good" : direction === "slower" ? "bad" : "neutral";
}
