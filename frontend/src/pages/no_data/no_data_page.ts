// "No data for this tool": said plainly, with why (what the tool needs, what the run holds)
// and what to do (how to record a profile that has it, which tools do have data now).

import { formatDurationPs, formatNumber } from "../../base/format";
import type { Api } from "../../data/api";
import { typedResult } from "../../data/decode";
import type { RunInfo, ToolTitle } from "../../data/types";
import { h } from "../../widgets/dom";

export interface NoDataOptions {
  el: HTMLElement;
  api: Api;
  run: RunInfo;
  /** Tools with data for the run (exact list). */
  runTools: readonly string[];
  tool: string;
  title: string;
  /** True when this backend has the tool at all. */
  known: boolean;
  /** The tool's descriptor (the `settings` route): what it needs, how to record it. */
  facts: ToolTitle | undefined;
  /** The backend's own words, when a request said "no data". */
  backendMessage: string | null;
  toolTitle: (tool: string) => string;
  href: (tool: string) => string;
  open: (tool: string) => void;
  signal: AbortSignal;
}

export function renderNoData(o: NoDataOptions): void {
  const facts = o.facts?.requires ? o.facts : undefined;
  const box = h("div", { class: "tbp-message tbp-message-info tbp-no-data", "data-no-data": o.tool });
  o.el.appendChild(box);
  box.appendChild(h("h2", {}, `No ${o.title} data for this run`));
  const why = h("div", {}, h("h3", {}, "Why"));
  if (!o.known) {
    why.appendChild(h("p", {}, `This tbprof server has no tool named "${o.tool}". The link may come from a newer version.`));
  } else if (facts) {
    why.appendChild(h("p", {}, `${o.title} needs ${facts.requires}`));
    why.appendChild(h("p", {}, `The profile of run ${o.run.name} has none of that, so there is nothing to show.`));
  } else {
    why.appendChild(h("p", {}, `The ${o.title} tool found nothing it can analyse in run ${o.run.name}.`));
  }
  if (o.backendMessage) why.appendChild(h("p", { class: "tbp-muted" }, `Server: ${o.backendMessage}`));
  box.appendChild(why);

  const contents = h("p", { class: "tbp-muted" }, `Run ${o.run.name}: ${o.run.hosts.length} host(s) (${o.run.hosts.join(", ")}), ${o.run.kind || "profile"}.`);
  box.appendChild(contents);
  if (o.runTools.includes("profile_summary")) void describeRun(o, contents);

  if (facts && facts.howTo.length) {
    box.appendChild(h("h3", {}, "What to do"));
    box.appendChild(h("ul", {}, facts.howTo.map((t) => h("li", {}, t))));
  }
  const others = o.runTools.filter((t) => t !== o.tool);
  if (others.length) {
    box.appendChild(h("h3", {}, "Tools with data for this run"));
    box.appendChild(
      h(
        "ul",
        { class: "tbp-link-list" },
        others.map((t) => {
          const a = h("a", { href: o.href(t), class: "tbp-link" }, o.toolTitle(t));
          a.addEventListener("click", (e) => {
            if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
            e.preventDefault();
            o.open(t);
          });
          return h("li", {}, a);
        }),
      ),
    );
  }
}

/** Replaces the run line with what its profile holds (device types, events, span). */
async function describeRun(o: NoDataOptions, into: HTMLElement): Promise<void> {
  try {
    const host = o.run.hosts.length > 1 ? "__all__" : (o.run.hosts[0] ?? null);
    const res = typedResult("profile_summary",
      await o.api.data({ run: o.run.name, host, tool: "profile_summary", options: {} }, 0, o.signal));
    const hosts = res.raw.hosts;
    const types = new Set<string>();
    let span = 0;
    for (const hst of hosts) {
      for (const t of hst.device_types) types.add(t);
      span = Math.max(span, hst.span_ps);
    }
    const events = res.raw.event_count;
    into.textContent =
      `Run ${o.run.name} holds ${formatNumber(events)} events over ${formatDurationPs(span)} ` +
      `on ${hosts.length} host(s); devices: ${[...types].join(", ") || "none"}.`;
  } catch {
    // The short description already shown stays; this is only a refinement.
  }
}
