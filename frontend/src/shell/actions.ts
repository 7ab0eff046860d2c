// Buttons in the shell's header that features add (e.g. "Capture profile", which opens a
// dialog from widgets/dialog.ts). Listed in src/plugins.ts HEADER_ACTIONS:
//
//   export const captureAction: HeaderAction = {
//     id: "capture", label: "Capture profile",
//     visible: (s) => s.captureEnabled,
//     run: (ctx) => { openDialog({...}); /* after success: */ void ctx.reloadRuns(); },
//   };

import type { Api } from "../data/api";
import type { RunInfo, Settings } from "../data/types";

export interface ShellContext {
  api: Api;
  settings: Settings;
  /** The selected run and host, if any. */
  run: RunInfo | null;
  host: string | null;
  /** Rescans the logdir (runs?refresh=1) and redraws; resolves when done. */
  reloadRuns: () => Promise<void>;
  /** Opens a run (e.g. the one a capture just wrote), optionally on a tool. */
  openRun: (run: string, tool?: string) => void;
}

export interface HeaderAction {
  id: string;
  label: string;
  title?: string;
  visible: (settings: Settings) => boolean;
  run: (ctx: ShellContext) => void;
}
