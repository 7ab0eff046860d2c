// The view state as a flat string map, and its two URL encodings.
//
// Keys: "run", "host", "tool"; "o.<option>" tool options; "t.<table>.sort|desc|page|f.<col>"
// table views; "c.<key>" chart/page options. All state lives in the URL so a reload or a
// pasted link restores the view.
//
// Standalone, the state is the page's own hash ("#run=r&tool=t"). Inside TensorBoard the
// plugin frame's hash is invisible, so the state is mirrored into TensorBoard's hash with the
// prefix TensorBoard reserves for plugins ("#tbprof&p.tbprof.run=r"): TensorBoard's own
// tf_storage parses "tab&k=v&k=v" with encodeURIComponent'd keys and values, and hands the
// "p.<plugin>." keys to the plugin (experimental plugin API GetURLPluginData).

export type ViewState = ReadonlyMap<string, string>;

const FIRST_KEYS = ["run", "host", "tool"];

function orderedKeys(state: ViewState): string[] {
  const rest = [...state.keys()].filter((k) => !FIRST_KEYS.includes(k)).sort();
  return [...FIRST_KEYS.filter((k) => state.has(k)), ...rest];
}

function decode(part: string): string {
  try {
    return decodeURIComponent(part.replace(/\+/g, " "));
  } catch {
    return part; // a malformed escape is kept verbatim rather than dropping the link
  }
}

/** "#run=a&tool=b" (leading "#" optional) -> Map. Keys without "=" are ignored. */
export function parseHash(hash: string): Map<string, string> {
  const out = new Map<string, string>();
  const body = hash.startsWith("#") ? hash.slice(1) : hash;
  if (!body) return out;
  for (const part of body.split("&")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    out.set(decode(part.slice(0, eq)), decode(part.slice(eq + 1)));
  }
  return out;
}

/** Map -> "run=a&host=h&tool=b&..." (no "#"); empty values are dropped; order is fixed. */
export function serializeState(state: ViewState): string {
  return orderedKeys(state)
    .filter((k) => (state.get(k) ?? "") !== "")
    .map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(state.get(k) ?? "")}`)
    .join("&");
}

/**
 * The part of the state a page is drawn from ("run", "host", "tool" and the tool's "o." options),
 * serialized: a change of any of these re-routes, while "t." and "c." keys are a page's own
 * view of what it drew. The shell writes it on the page once the page for it is drawn, so a
 * reader (a browser test) can tell the page on screen from the one the URL asks for.
 */
export function routedView(state: ViewState): string {
  const routed = new Map([...state].filter(([k]) => FIRST_KEYS.includes(k) || k.startsWith("o.")));
  return serializeState(routed);
}

/** Applies updates (null or "" deletes a key) and returns a new map. */
export function withUpdates(
  state: ViewState,
  updates: Readonly<Record<string, string | null | undefined>>,
): Map<string, string> {
  const out = new Map(state);
  for (const [k, v] of Object.entries(updates)) {
    if (v === null || v === undefined || v === "") out.delete(k);
    else out.set(k, v);
  }
  return out;
}

/** Keys starting with `prefix`, with the prefix removed. */
export function subState(state: ViewState, prefix: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of state) if (k.startsWith(prefix)) out.set(k.slice(prefix.length), v);
  return out;
}

/** The plugin's keys in a TensorBoard hash ("#tbprof&p.tbprof.run=x" -> {run: x}). */
export function fromTensorBoardHash(hash: string, plugin: string): Map<string, string> {
  const prefix = `p.${plugin}.`;
  const body = hash.startsWith("#") ? hash.slice(1) : hash;
  const out = new Map<string, string>();
  for (const part of body.split("&")) {
    const pieces = part.split("=");
    if (pieces.length !== 2) continue;
    const key = decode(pieces[0] ?? "");
    if (key.startsWith(prefix)) out.set(key.slice(prefix.length), decode(pieces[1] ?? ""));
  }
  return out;
}

/**
 * A TensorBoard hash with the plugin's keys replaced by `state`; TensorBoard's own entries
 * (the active tab, other plugins' keys) are kept as they were.
 */
export function toTensorBoardHash(hash: string, plugin: string, state: ViewState): string {
  const prefix = `p.${plugin}.`;
  const body = hash.startsWith("#") ? hash.slice(1) : hash;
  const kept: string[] = [];
  let tab = "";
  for (const part of body.split("&")) {
    if (!part) continue;
    const pieces = part.split("=");
    if (pieces.length === 1) {
      tab = part;
      continue;
    }
    if (decode(pieces[0] ?? "").startsWith(prefix)) continue;
    kept.push(part);
  }
  const ours = orderedKeys(state)
    .filter((k) => (state.get(k) ?? "") !== "")
    .map((k) => `${encodeURIComponent(prefix + k)}=${encodeURIComponent(state.get(k) ?? "")}`);
  const all = [...kept, ...ours];
  return `#${tab || plugin}${all.length ? "&" + all.join("&") : ""}`;
}
