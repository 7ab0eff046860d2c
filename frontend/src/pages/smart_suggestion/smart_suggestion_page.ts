// Smart suggestions: what the rules found, most severe first, each with its numbers and a
// link to the page that shows them.

import type { SmartSuggestionResult } from "../../data/schema.gen";
import { formatWithUnit, humanizeKey, unitFromKey } from "../../base/format";
import { cardRow } from "../../widgets/cards";
import { h } from "../../widgets/dom";
import { messageBox } from "../../widgets/message";
import { pageTitle } from "../common";
import type { PageContext } from "../context";
import { metricCard, metricsOf, metricValue } from "../metrics";
import type { PageSpec } from "../registry";

function severityWord(severity: string): string {
  return ({ high: "High", medium: "Medium", low: "Low" } as Record<string, string | undefined>)[severity] ?? severity;
}

function render(ctx: PageContext<SmartSuggestionResult>): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "Smart suggestions"));
  const metrics = metricsOf(raw);
  if (metrics.size > 0) el.appendChild(cardRow([...metrics.values()].map((m) => metricCard(m))));
  const found = raw.suggestions;
  if (found.length === 0) {
    el.appendChild(messageBox({ title: "Nothing stands out", body: raw.message || "No rule fired." }));
    return;
  }
  const list = h("ol", { class: "tbp-suggestions" });
  for (const s of found) {
    const page = s.page;
    const link = h("a", { href: ctx.href(page), class: "tbp-link", "data-suggestion-page": page }, `See ${ctx.toolTitle(page)}`);
    link.addEventListener("click", (e) => {
      if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
      e.preventDefault();
      ctx.navigate(page);
    });
    const evidence = s.evidence;
    const facts = Object.entries(evidence).map(([k, v]) => {
      // A headline metric is named as on every other page, with its definition as the tooltip.
      const m = metrics.get(k);
      if (m) return h("li", { title: m.definition }, `${m.label}, ${m.of}: ${metricValue(m)}`);
      return h("li", {}, `${humanizeKey(k)}: ${typeof v === "number" ? formatWithUnit(v, unitFromKey(k)) : String(v)}`);
    });
    list.appendChild(
      h(
        "li",
        { class: `tbp-suggestion tbp-severity-${s.severity}`, "data-rule": s.rule },
        h("strong", {}, h("span", { class: "tbp-muted" }, `${severityWord(s.severity)} · `), s.title || s.rule),
        h("p", {}, s.message),
        h("ul", { class: "tbp-muted" }, ...facts),
        link,
      ),
    );
  }
  el.appendChild(list);
}

export const smartSuggestionPage: PageSpec<SmartSuggestionResult> = { render };
