// A failed request as a message box: what failed, the server's words, what to try. Chosen by
// the error's kind (data/error_kind.ts), never by its text.

import { ApiError } from "../data/api";
import type { ErrorKind } from "../data/error_kind";
import { messageBox } from "../widgets/message";

const TITLES: Record<ErrorKind, string> = {
  unreachable: "The tbprof server cannot be reached",
  bad_request: "The request was not valid",
  not_found: "Not found",
  no_data: "No data",
  unreadable_profile: "The profile could not be read",
  internal: "The server failed",
  other: "The request failed",
};

const HINTS: Partial<Record<ErrorKind, string>> = {
  unreachable: "Check that TensorBoard or `tbprof serve` is still running, then reload the page.",
  not_found: "The run, host or tool may have been removed; press Reload to rescan the log directory.",
  unreadable_profile: "The file is damaged or incomplete (still being written?). Other runs are not affected.",
  internal: "This is a bug in tbprof; the server log has the details.",
};

export function errorBox(e: unknown, what: string): HTMLElement {
  if (e instanceof ApiError) {
    const title = `${e.kind === "other" ? `Error ${e.status}` : TITLES[e.kind]} (${what})`;
    const hint = HINTS[e.kind];
    const file = typeof e.detail.file === "string" ? `File: ${e.detail.file}` : undefined;
    return messageBox({ kind: "error", title, body: [e.message, ...(hint ? [hint] : [])], detail: file });
  }
  const msg = e instanceof Error ? e.message : String(e);
  return messageBox({ kind: "error", title: `Could not show ${what}`, body: msg });
}
