// What went wrong with a request, as a machine-readable kind, so the shell never chooses the
// "no data" page by matching the error's text. The backend's JSON error bodies carry
// `kind`; this module only falls back to the HTTP status for servers (and proxies) that send
// none, and never reads the message.

export type ErrorKind =
  /** The server could not be reached (no HTTP answer). */
  | "unreachable"
  /** Malformed parameters (400). */
  | "bad_request"
  /** Unknown run, host, tool, table or route (404). */
  | "not_found"
  /** The tool exists but the run's profile has nothing for it (404 with kind "no_data"). */
  | "no_data"
  /** A damaged or truncated profile file (422). */
  | "unreadable_profile"
  /** A bug on the server (5xx). */
  | "internal"
  /** Anything else (e.g. 405, or a kind this frontend does not know yet). */
  | "other";

const KNOWN: ReadonlySet<string> = new Set(["unreachable", "bad_request", "not_found", "no_data", "unreadable_profile", "internal"]);

/** The kind of a failed request: the body's `kind` when it names one we know, else by status. */
export function errorKind(status: number, body: Readonly<Record<string, unknown>>): ErrorKind {
  const kind = body.kind;
  if (typeof kind === "string" && KNOWN.has(kind)) return kind as ErrorKind;
  if (status === 0) return "unreachable";
  if (status === 400) return "bad_request";
  if (status === 404) return "not_found";
  if (status === 422) return "unreadable_profile";
  if (status >= 500) return "internal";
  return "other";
}
