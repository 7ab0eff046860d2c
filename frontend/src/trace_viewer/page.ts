// The trace viewer: the page of the `trace_viewer` tool (and XProf's name `trace_viewer@`,
// src/plugins.ts). The page fetches its own data window by window (ownData).

import type { TraceViewerResult } from "../data/schema.gen";
import type { PageSpec } from "../pages/registry";
import { pageTitle } from "../pages/common";
import { h } from "../widgets/dom";
import styles from "./trace_viewer.css?inline";
import { TraceViewer } from "./viewer";

let styled = false;

export const traceViewerPage: PageSpec<TraceViewerResult> = {
  ownData: true,
  render: async (ctx) => {
    if (!styled) {
      const style = document.createElement("style");
      style.textContent = styles;
      document.head.appendChild(style);
      styled = true;
    }
    ctx.el.appendChild(pageTitle(ctx, "Trace viewer"));
    // "All hosts" is one timeline where the run allows it (a PyTorch run's ranks, a process
    // group per rank); elsewhere one host at a time, and "all hosts" (kept from a multi-host
    // page) shows the first host. The host picker keeps a single rank's choice.
    const requested = ctx.request.host;
    const together = requested === ctx.allHosts && ctx.run.multiHostTools.includes(ctx.request.tool);
    const host = together ? ctx.allHosts
      : requested !== null && requested !== "" && requested !== ctx.allHosts ? requested : (ctx.run.hosts[0] ?? null);
    const viewer = new TraceViewer({
      api: ctx.api,
      target: { run: ctx.run.name, host },
      param: (k) => ctx.param(k),
      setParams: (u) => ctx.setParams(u),
      toolLink: (tool, options, label) => {
        const a = h("a", { class: "tbp-link", href: ctx.href(tool, options) }, label);
        a.addEventListener("click", (e) => {
          if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
          e.preventDefault();
          ctx.navigate(tool, options);
        });
        return a;
      },
    });
    ctx.el.appendChild(viewer.el);
    ctx.onDispose(() => viewer.dispose());
    await viewer.start();
  },
};
