// The Capture Profile form without the DOM: defaults, limits and validation, the same rules
// as the backend (plugin/tbprof/capture/addresses.py, session.py), so mistakes are shown
// next to the field before anything is sent.

import type { CaptureReport, CaptureRequest } from "../data/capture";

export interface CaptureFields {
  addresses: string;
  durationMs: string;
  hostTracerLevel: string;
  deviceTracerLevel: string;
  pythonTracerLevel: string;
  delayMs: string;
  retries: string;
}

export const DEFAULT_FIELDS: CaptureFields = {
  addresses: "",
  durationMs: "1000",
  hostTracerLevel: "2",
  deviceTracerLevel: "1",
  pythonTracerLevel: "0",
  delayMs: "0",
  retries: "3",
};

export const LIMITS = {
  durationMs: [1, 600_000],
  hostTracerLevel: [0, 3],
  deviceTracerLevel: [0, 1],
  pythonTracerLevel: [0, 1],
  delayMs: [0, 600_000],
  retries: [0, 10],
} as const satisfies Record<Exclude<keyof CaptureFields, "addresses">, readonly [number, number]>;

export const MAX_ADDRESSES = 32;

export type FieldErrors = Partial<Record<keyof CaptureFields, string>>;

const LABEL = String.raw`[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?`;
const HOSTNAME = new RegExp(String.raw`^(?:${LABEL}\.)*${LABEL}\.?$`);
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const IPV6 = /^[0-9A-Fa-f:.]+$/;

/** Why one address is not `host:port` / `grpc://host:port`, or null when it is. */
export function addressError(text: string): string | null {
  const raw = text.trim();
  if (raw === "") return "empty address";
  const rest = raw.startsWith("grpc://") ? raw.slice("grpc://".length) : raw;
  if (rest.includes("://")) return `${raw}: only host:port or grpc://host:port`;
  if (/[/@?#%\\\s]/.test(rest)) return `${raw}: expected host:port (no path, user, query or spaces)`;
  let host: string;
  let port: string;
  if (rest.startsWith("[")) {
    const close = rest.indexOf("]");
    if (close < 0 || rest[close + 1] !== ":") return `${raw}: an IPv6 address is written [addr]:port`;
    host = rest.slice(1, close);
    port = rest.slice(close + 2);
    if (!IPV6.test(host) || !host.includes(":")) return `${raw}: ${host} is not an IPv6 address`;
  } else {
    const parts = rest.split(":");
    if (parts.length !== 2) return `${raw}: expected host:port`;
    host = parts[0] ?? "";
    port = parts[1] ?? "";
    if (host === "") return `${raw}: the host is missing`;
    if (/^[0-9.]+$/.test(host)) {
      if (!IPV4.test(host)) return `${raw}: ${host} is not an IPv4 address`;
    } else if (host.length > 253 || !HOSTNAME.test(host)) {
      return `${raw}: ${host} is not a valid host name`;
    }
  }
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    return `${raw}: the port must be a number from 1 to 65535`;
  }
  return null;
}

function addressesError(text: string): string | null {
  const parts = text.split(",");
  if (parts.every((p) => p.trim() === "")) return "enter host:port of a profiler server, e.g. localhost:6009";
  if (parts.some((p) => p.trim() === "")) return "an entry of the list is empty";
  if (parts.length > MAX_ADDRESSES) return `at most ${MAX_ADDRESSES} addresses`;
  const seen = new Set<string>();
  for (const p of parts) {
    const err = addressError(p);
    if (err !== null) return err;
    const key = p.trim().replace(/^grpc:\/\//, "").toLowerCase();
    if (seen.has(key)) return `${p.trim()} is listed twice`;
    seen.add(key);
  }
  return null;
}

function wholeNumber(text: string, [lo, hi]: readonly [number, number]): number | string {
  const t = text.trim();
  if (!/^-?\d+$/.test(t)) return "a whole number";
  const n = Number(t);
  if (n < lo || n > hi) return `from ${lo} to ${hi}`;
  return n;
}

/** The request to send, or the message of every field that is wrong. */
export function validateCapture(f: CaptureFields): { request: CaptureRequest | null; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const addrErr = addressesError(f.addresses);
  if (addrErr !== null) errors.addresses = addrErr;
  const nums: Partial<Record<keyof typeof LIMITS, number>> = {};
  for (const key of Object.keys(LIMITS) as (keyof typeof LIMITS)[]) {
    const v = wholeNumber(f[key], LIMITS[key]);
    if (typeof v === "string") errors[key] = v;
    else nums[key] = v;
  }
  if (Object.keys(errors).length > 0) return { request: null, errors };
  return {
    request: {
      addresses: f.addresses
        .split(",")
        .map((s) => s.trim())
        .join(","),
      duration_ms: nums.durationMs ?? 0,
      host_tracer_level: nums.hostTracerLevel ?? 0,
      device_tracer_level: nums.deviceTracerLevel ?? 0,
      python_tracer_level: nums.pythonTracerLevel ?? 0,
      delay_ms: nums.delayMs ?? 0,
      retries: nums.retries ?? 0,
    },
    errors,
  };
}

/** How long the user should expect to wait: delay + duration + collection (a rough bar). */
export function expectedMs(req: CaptureRequest): number {
  return req.delay_ms + req.duration_ms + 1500;
}

/**
 * What the dialog says after a capture: the report's one-line message, then one line per
 * address whose message is left out when the headline already says it (with one address the
 * backend's headline is that address's message, which would otherwise show twice).
 */
export function reportLines(report: CaptureReport): { headline: string; results: { address: string; ok: boolean; message: string | null }[] } {
  return {
    headline: report.message,
    results: report.results.map((r) => ({
      address: r.address,
      ok: r.ok,
      message: r.message === "" || report.message.includes(r.message) ? null : r.message,
    })),
  };
}
