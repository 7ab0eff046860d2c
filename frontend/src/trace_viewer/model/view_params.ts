// The trace viewer's page state in the URL (c.<key>): the window (c.start, c.end in ps) and
// the selection (c.sel: "plane:row" for an event of the profile, "d<track>:<index>" for an
// event of a derived line such as XLA Modules). DOM-free.

export type SelectionRef =
  | { kind: "event"; plane: number; row: number }
  | { kind: "derived"; track: number; index: number };

export function parseSelection(sel: string | null): SelectionRef | null {
  if (!sel) return null;
  const derived = sel.startsWith("d");
  const parts = (derived ? sel.slice(1) : sel).split(":");
  if (parts.length !== 2) return null;
  const [a, b] = parts.map((x) => (/^\d+$/.test(x) ? Number(x) : NaN));
  if (a === undefined || b === undefined || !Number.isInteger(a) || !Number.isInteger(b)) return null;
  return derived ? { kind: "derived", track: a, index: b } : { kind: "event", plane: a, row: b };
}

export function selectionParam(ref: SelectionRef): string {
  return ref.kind === "derived" ? `d${ref.track}:${ref.index}` : `${ref.plane}:${ref.row}`;
}

/** The URL's window, when both ends are numbers and it is not empty. */
export function parseWindow(start: string | null, end: string | null): { startPs: number; endPs: number } | null {
  if (start === null || end === null || start.trim() === "" || end.trim() === "") return null;
  const s = Number(start);
  const e = Number(end);
  return Number.isFinite(s) && Number.isFinite(e) && e > s ? { startPs: s, endPs: e } : null;
}
