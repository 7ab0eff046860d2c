// Light or dark. Inside TensorBoard the plugin frame follows TensorBoard's own choice, which
// TensorBoard shows as the "dark-mode" class on its <body> (its toggle can override the
// browser's preference); standalone, the browser's prefers-color-scheme decides.

type Listener = (dark: boolean) => void;

const listeners = new Set<Listener>();
let current: boolean | null = null;
let watching = false;

function tensorBoardBody(): HTMLElement | null {
  try {
    if (window.parent === window) return null;
    const body = window.parent.document.body as HTMLElement | null;
    // Only TensorBoard's frame host has <tb-webapp> / the dark-mode class protocol.
    return body !== null && window.parent.document.querySelector("tb-webapp") !== null ? body : null;
  } catch {
    return null; // a cross-origin parent: fall back to the media query
  }
}

function mediaDark(): boolean {
  return typeof window.matchMedia === "function" && window.matchMedia("(prefers-color-scheme: dark)").matches;
}

export function isDark(): boolean {
  const tb = tensorBoardBody();
  return tb !== null ? tb.classList.contains("dark-mode") : mediaDark();
}

function update(): void {
  const dark = isDark();
  if (dark === current) return;
  current = dark;
  document.documentElement.classList.toggle("tbp-dark", dark);
  for (const l of listeners) l(dark);
}

/** Applies the theme class now and keeps it in sync; `cb` runs on every later change. */
export function watchTheme(cb?: Listener): () => void {
  if (cb) listeners.add(cb);
  if (!watching) {
    watching = true;
    update();
    if (typeof window.matchMedia === "function") {
      window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", update);
    }
    const tb = tensorBoardBody();
    if (tb !== null) new MutationObserver(update).observe(tb, { attributes: true, attributeFilter: ["class"] });
  }
  return () => {
    if (cb) listeners.delete(cb);
  };
}
