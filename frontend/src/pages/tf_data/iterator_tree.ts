// The iterator tree of a tf.data pipeline from iterator names alone: "Iterator::Root::Prefetch"
// is the parent of "Iterator::Root::Prefetch::ForeverRepeat" and of "...::Prefetch[0]::Map"
// (XProf names each iterator by its path from the root). DOM-free so it is unit-tested.

export interface TreeNode {
  name: string;
  parent: string | null;
  depth: number;
  /** Position among the leaves (y of a tidy tree drawn left to right). */
  row: number;
}

/** The nearest ancestor of `name` among `names`: the longest proper prefix ending at "::" or "[". */
export function parentOf(name: string, names: ReadonlySet<string>): string | null {
  for (let i = name.length - 1; i > 0; i--) {
    const ch = name.charAt(i);
    if (ch === "[" || (ch === ":" && name.charAt(i - 1) === ":")) {
      const cut = ch === "[" ? i : i - 1;
      const candidate = name.slice(0, cut);
      if (names.has(candidate)) return candidate;
      if (ch === ":") i--; // skip the first ":" of "::"
    }
  }
  return null;
}

/** Parents, depths and a row per node: leaves get consecutive rows, parents the mean of theirs. */
export function layoutTree(names: readonly string[]): TreeNode[] {
  const set = new Set(names);
  const parent = new Map(names.map((n) => [n, parentOf(n, set)] as const));
  const children = new Map<string, string[]>();
  for (const n of names) {
    const p = parent.get(n) ?? null;
    if (p !== null) children.set(p, [...(children.get(p) ?? []), n]);
  }
  const roots = names.filter((n) => (parent.get(n) ?? null) === null);
  const out = new Map<string, TreeNode>();
  let nextRow = 0;
  const visit = (n: string, depth: number): number => {
    const kids = children.get(n) ?? [];
    const rows = kids.map((k) => visit(k, depth + 1));
    const row = rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : nextRow++;
    out.set(n, { name: n, parent: parent.get(n) ?? null, depth, row });
    return row;
  };
  for (const r of roots) visit(r, 0);
  return names.map((n) => out.get(n)).filter((x): x is TreeNode => x !== undefined);
}

/** The last path element, for labels: "...::MapAndBatch::Shuffle" -> "Shuffle". */
export function shortName(name: string): string {
  const i = name.lastIndexOf("::");
  return i < 0 ? name : name.slice(i + 2);
}
