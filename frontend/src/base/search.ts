// Matching for search boxes (run selector, tool list): every whitespace-separated term must
// occur in the text, case-insensitively. Plain substrings, not regexes, so "a.b" means a.b.

export function matchesAllTerms(text: string, query: string): boolean {
  const terms = query.toLowerCase().split(/\s+/).filter((t) => t.length > 0);
  const hay = text.toLowerCase();
  return terms.every((t) => hay.includes(t));
}

export interface Dated {
  name: string;
  mtime: number;
}

/** Newest first; equal times by name so the order is stable across reloads. */
export function newestFirst<T extends Dated>(items: readonly T[]): T[] {
  return [...items].sort((a, b) => b.mtime - a.mtime || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
