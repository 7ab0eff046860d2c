// Names for the memory breakdown's rows. JAX/XLA allocations often carry no op name, and a
// column of blank cells says nothing: such a row reads "(unnamed, 64–128 MiB)", its
// size class, so rows of one size group together by eye. DOM-free.

import { formatBytes } from "../../base/format";

/** The power-of-two range a size falls in: 67,108,864 B -> "64–128 MiB". */
export function sizeClass(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes <= 0) return "0 B";
  const lo = 2 ** Math.floor(Math.log2(bytes));
  const [loNum = "", loUnit = ""] = formatBytes(lo).split(" ");
  const [hiNum = "", hiUnit = ""] = formatBytes(lo * 2).split(" ");
  return loUnit === hiUnit ? `${loNum}–${hiNum} ${hiUnit}` : `${loNum} ${loUnit}–${hiNum} ${hiUnit}`;
}

/** What a breakdown row's operation cell says: the name, or "(unnamed, <size class>)". */
export function operationLabel(operation: unknown, allocationBytes: unknown): string | null {
  if (typeof operation === "string" && operation.trim() !== "") return null; // the name itself
  return `(unnamed, ${sizeClass(typeof allocationBytes === "number" ? allocationBytes : 0)})`;
}
