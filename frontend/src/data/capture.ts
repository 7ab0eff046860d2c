// POST capture (docs/api.md, docs/capture.md): ask profiler servers to trace into the logdir.
// A capture where no address succeeded answers 502 with the same report, so a failed
// capture still shows what happened per address.

import { ApiError, type Api } from "./api";
import { array, boolean, isRecord, number, record, string } from "./decode";

export interface CaptureRequest {
  addresses: string;
  duration_ms: number;
  host_tracer_level: number;
  device_tracer_level: number;
  python_tracer_level: number;
  delay_ms: number;
  retries: number;
}

/** "ok", "could_not_connect" (every failure to reach a profiler: they read alike), "empty_trace",
 * "remote_disk" or "remote_write". */
export type CaptureResultKind = string;

export interface CaptureHostResult {
  address: string;
  host: string;
  ok: boolean;
  kind: CaptureResultKind;
  message: string;
  path: string;
  attempts: number;
}

export interface CaptureReport {
  ok: boolean;
  message: string;
  session: string;
  /** The new run's name in `runs`, or null when no file landed in the logdir. */
  run: string | null;
  sessionDir: string;
  results: CaptureHostResult[];
}

export function decodeCaptureReport(v: unknown): CaptureReport {
  const o = record(v, "capture");
  return {
    ok: boolean(o.ok, "capture.ok"),
    message: string(o.message, "capture.message"),
    session: string(o.session, "capture.session"),
    run: o.run === null || o.run === undefined ? null : string(o.run, "capture.run"),
    sessionDir: string(o.session_dir, "capture.session_dir"),
    results: array(o.results, "capture.results").map((r, i) => {
      const p = `capture.results[${i}]`;
      const x = record(r, p);
      return {
        address: string(x.address, `${p}.address`),
        host: string(x.host, `${p}.host`),
        ok: boolean(x.ok, `${p}.ok`),
        kind: string(x.kind, `${p}.kind`),
        message: string(x.message, `${p}.message`),
        path: string(x.path, `${p}.path`),
        attempts: number(x.attempts, `${p}.attempts`),
      };
    }),
  };
}

/**
 * Runs a capture. Resolves with the report whether or not the servers succeeded (the
 * report says per address); rejects with ApiError when the capture was refused before
 * any connection (bad input 400, turned off / read-only logdir 403, busy 409).
 */
export async function postCapture(api: Api, req: CaptureRequest, signal?: AbortSignal): Promise<CaptureReport> {
  try {
    return decodeCaptureReport(await api.postJson("capture", req, signal));
  } catch (e) {
    if (e instanceof ApiError && e.status === 502 && isRecord(e.detail) && Array.isArray(e.detail.results)) {
      return decodeCaptureReport(e.detail);
    }
    throw e;
  }
}
