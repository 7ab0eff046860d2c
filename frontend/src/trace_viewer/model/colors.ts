// Stable colours per event name: the same name gets the same colour in every window, run and
// session (a hash of the text picks from a palette), as chrome://tracing does.

const LIGHT = [
  "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
  "#8cd17d", "#86bcb6", "#f1ce63", "#499894", "#d37295", "#a0cbe8", "#ffbe7d", "#b6992d", "#fabfd2",
  "#79706e", "#d4a6c8",
];

/** 32-bit FNV-1a of a string. */
export function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function colorOf(name: string): string {
  return LIGHT[hashName(name) % LIGHT.length] ?? "#888888";
}

/** Text colour readable on `bg` (#rrggbb). */
export function textOn(bg: string): string {
  const r = parseInt(bg.slice(1, 3), 16);
  const g = parseInt(bg.slice(3, 5), 16);
  const b = parseInt(bg.slice(5, 7), 16);
  return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? "#1f2328" : "#ffffff";
}

/** Density boxes: one neutral hue, darker with busier buckets (4 levels, so few style changes). */
export const DENSITY_LEVELS = 4;
export function densityColor(level: number, dark: boolean): string {
  const alpha = [0.25, 0.45, 0.65, 0.85][Math.min(level, DENSITY_LEVELS - 1)] ?? 0.85;
  return dark ? `rgba(190, 200, 215, ${alpha})` : `rgba(70, 80, 100, ${alpha})`;
}

export function densityLevel(busy: number): number {
  return Math.min(DENSITY_LEVELS - 1, Math.floor(busy * DENSITY_LEVELS));
}

export const SERIES_COLORS = ["#e15759", "#4e79a7", "#59a14f", "#f28e2b", "#b07aa1"];
