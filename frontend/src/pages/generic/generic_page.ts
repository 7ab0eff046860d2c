// The generic page: any tool result, drawn without knowing its schema — cards for the
// top-level scalar fields, every table as a full table widget, the rest as details.

import { humanizeKey } from "../../base/format";
import { h } from "../../widgets/dom";
import { jsonView } from "../../widgets/json_view";
import { messageBox } from "../../widgets/message";
import { nestedFields, pageTitle, scalarCards, sequenceText, tableWidget } from "../common";
import type { PageContext } from "../context";

/** HTA's kernel sequences: the pattern column as a readable sequence of kernel names. */
function sequenceCell(ctx: PageContext, table: string): ((td: HTMLTableCellElement, row: readonly unknown[], column: number) => void) | undefined {
  const data = ctx.result?.tables[table];
  if (ctx.request.tool !== "kernel_sequences" || !data) return undefined;
  const at = data.columns.findIndex((c) => c.name === "pattern");
  return (td, row, column) => {
    const v = row[column];
    if (column === at && typeof v === "string") td.textContent = sequenceText(v);
  };
}

export function renderGeneric(ctx: PageContext, into: HTMLElement = ctx.el): void {
  const result = ctx.result;
  if (!result) return;
  into.appendChild(pageTitle(ctx, humanizeKey(ctx.request.tool)));
  const cards = scalarCards(result);
  if (cards) into.appendChild(cards);
  const names = Object.keys(result.tables);
  for (const name of names) {
    const sequences = ctx.request.tool === "kernel_sequences";
    // The rank names the trace; the host (a long trace id) would push the patterns out of view.
    into.appendChild(tableWidget(ctx, name, { decorateCell: sequenceCell(ctx, name), defaultHidden: sequences ? ["host"] : [] }).el);
  }
  const nested = nestedFields(result);
  if (nested.length) {
    into.appendChild(
      h("section", { class: "tbp-section" }, h("h2", {}, "Details"), ...nested.map(([k, v]) => jsonView(k, v))),
    );
  }
  if (!cards && names.length === 0 && nested.length === 0) {
    into.appendChild(messageBox({ title: "This tool returned no fields", body: "The result is empty." }));
  }
}
