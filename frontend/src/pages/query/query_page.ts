// Query: one SQL SELECT over the run's events of every host and the tables the pages compute
// (the `sql` route, docs/sql.md). An editor with the examples of the run's kind, the answer in
// the table widget (sort, filter, CSV of the rows shown), a chart of a numeric column over the
// first, and for rows that name an event (host, plane_index, event_id) a link to it in the trace
// viewer. The query text lives in the URL ("c.sql"), so a link reruns it.

import { html, tooltipHtml } from "../../base/html";
import { ApiError } from "../../data/api";
import type { TableColumn } from "../../data/types";
import { axisLabel, type Chart, PALETTE } from "../../widgets/chart";
import { toCsv } from "../../base/csv";
import { clear, downloadText, h } from "../../widgets/dom";
import { loading, messageBox } from "../../widgets/message";
import { DataTable } from "../../widgets/table";
import { DEFAULT_VIEW, toQuery } from "../../widgets/table_model";
import { chart, middleEllipsis } from "../common";
import type { PageContext } from "../context";
import type { PageSpec } from "../registry";
import {
  chartable,
  chartSeries,
  decodeSqlAnswer,
  eventHref,
  eventOf,
  examplesFor,
  queryRows,
  type SqlAnswer,
  tableColumns,
} from "./query_model";

const PAGE_SIZE = 100;
const MAX_ROWS = 10_000;

interface TableInfo {
  name: string;
  columns: { name: string; type: string; doc?: string }[];
}

function render(ctx: PageContext): void {
  const el = ctx.el;
  el.classList.add("tbp-query");
  const hostText = ctx.request.host && ctx.request.host !== ctx.allHosts ? ctx.request.host : "all hosts";
  el.appendChild(
    h("div", { class: "tbp-page-title" }, h("h1", {}, "Query (SQL)"), h("span", { class: "tbp-muted" }, `${ctx.run.name} · ${hostText}`)),
  );
  if (!ctx.run.tools.includes("trace_viewer")) {
    // The SQL views are the events the trace viewer shows; a run without a timeline (tfprof's
    // ProfileProto: op statistics only) has none, and asking would only answer "no data".
    el.appendChild(messageBox({
      title: "No events to query",
      body: [
        `${ctx.run.name} is a ${ctx.run.kind} run: its files hold no timed events, and the Query page reads the events ` +
          "the trace viewer shows. Its own pages are in the list on the left.",
      ],
    }));
    el.dataset.noEvents = "";
    return;
  }
  const examples = examplesFor(ctx.run.kind);
  const editor = h("textarea", {
    class: "tbp-sql-editor",
    "data-testid": "sql-editor",
    "aria-label": "SQL query",
    spellcheck: false,
    rows: 8,
  });
  editor.value = ctx.param("sql") ?? examples[0]?.sql ?? "SELECT count(*) FROM events";
  const pick = h("select", { "data-testid": "sql-examples", "aria-label": "Example queries" },
    h("option", { value: "" }, "Examples…"),
    ...examples.map((e, i) => h("option", { value: String(i) }, e.title)));
  const runBtn = h("button", { type: "button", class: "tbp-btn", "data-testid": "sql-run", title: "Run (Ctrl+Enter)" }, "Run");
  const status = h("span", { class: "tbp-muted", "data-testid": "sql-status", role: "status" });
  const views = h("details", { class: "tbp-sql-views" }, h("summary", {}, "Views and columns"));
  const out = h("div", { class: "tbp-sql-out" });
  el.append(
    h("p", { class: "tbp-muted" },
      "One read-only DuckDB SELECT over events (every event of every host), steps, ops, kernels, memory and, for XSpace, hlo_ops. ",
      "Rows with host, plane_index and event_id link to the event in the trace viewer."),
    editor,
    h("div", { class: "tbp-sql-bar" }, runBtn, pick, status),
    views,
    out,
  );

  pick.addEventListener("change", () => {
    const ex = examples[Number(pick.value)];
    if (ex) {
      editor.value = ex.sql;
      void run();
    }
    pick.value = "";
  });
  editor.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      void run();
    }
  });
  runBtn.addEventListener("click", () => void run());
  views.addEventListener("toggle", () => {
    if (views.open && !views.dataset.loaded) {
      views.dataset.loaded = "1";
      void loadViews(ctx, views);
    }
  });

  let inflight: AbortController | null = null;
  const run = async (): Promise<void> => {
    inflight?.abort();
    const ac = new AbortController();
    inflight = ac;
    ctx.signal.addEventListener("abort", () => ac.abort(), { once: true });
    const query = editor.value;
    ctx.setParams({ sql: query });
    clear(out);
    out.appendChild(loading("the answer"));
    status.textContent = "";
    runBtn.disabled = true;
    try {
      const body: Record<string, unknown> = { run: ctx.run.name, query, max_rows: MAX_ROWS };
      if (ctx.request.host && ctx.request.host !== ctx.allHosts) body.host = ctx.request.host;
      const answer = decodeSqlAnswer(await ctx.api.postJson("sql", body, ac.signal));
      if (ac.signal.aborted) return;
      status.textContent = `${answer.rowCount.toLocaleString()} rows in ${answer.elapsedMs.toFixed(0)} ms` +
        (answer.truncated ? ` (the first ${MAX_ROWS.toLocaleString()}; aggregate or add a LIMIT for the rest)` : "");
      status.dataset.rows = String(answer.rowCount);
      clear(out);
      drawAnswer(ctx, out, answer);
    } catch (e) {
      if (ac.signal.aborted) return;
      clear(out);
      const message = e instanceof ApiError || e instanceof Error ? e.message : String(e);
      out.appendChild(messageBox({ title: "The query failed", kind: "error", body: message }));
    } finally {
      if (inflight === ac) runBtn.disabled = false;
    }
  };
  void run();
}

async function loadViews(ctx: PageContext, into: HTMLElement): Promise<void> {
  try {
    const raw = (await ctx.api.getJson("sql_tables", [["run", ctx.run.name]], ctx.signal)) as { tables?: TableInfo[] };
    for (const t of raw.tables ?? []) {
      into.appendChild(h("h3", {}, t.name));
      into.appendChild(h("p", { class: "tbp-muted tbp-sql-columns" },
        t.columns.map((c) => `${c.name} ${c.type}`).join(" · ")));
    }
  } catch (e) {
    into.appendChild(h("p", { class: "tbp-muted" }, e instanceof Error ? e.message : String(e)));
  }
}

function drawAnswer(ctx: PageContext, out: HTMLElement, answer: SqlAnswer): void {
  const columns = tableColumns(answer.columns);
  if (answer.rows.length === 0) {
    out.appendChild(messageBox({ title: "No rows", body: `The query answered no rows (columns: ${columns.map((c) => c.name).join(", ") || "none"}).` }));
    return;
  }
  drawChart(ctx, out, columns, answer);
  const view = DEFAULT_VIEW;
  const csvName = `${ctx.run.name.replace(/[^A-Za-z0-9._-]+/g, "_")}_sql`;
  const hasEvents = answer.rows.some((r) => eventOf(columns, r) !== null);
  const table = new DataTable({
    name: "sql",
    title: "Answer",
    description: hasEvents ? "The event_id of a row links to that event in the trace viewer." : undefined,
    initial: queryRows(columns, answer.rows, toQuery(view, PAGE_SIZE)),
    view,
    pageSize: PAGE_SIZE,
    fetchRows: (q) => Promise.resolve(queryRows(columns, answer.rows, q)),
    onViewChange: () => undefined,
    csvName,
    decorateCell: hasEvents ? (td, row, column) => {
      if (columns[column]?.name !== "event_id") return;
      const ev = eventOf(columns, row as never);
      if (!ev) return;
      // Absolute: inside TensorBoard the frame's <base href> would turn a bare "#..." into another path.
      const url = new URL(window.location.href);
      url.hash = eventHref(ctx.run.name, ev);
      const a = h("a", { class: "tbp-link", href: url.href, "data-event-link": "", title: "Open this event in the trace viewer" });
      a.append(...Array.from(td.childNodes));
      td.appendChild(a);
    } : undefined,
  });
  const all = h("button", { type: "button", class: "tbp-btn", "data-testid": "sql-csv", title: "Every row of the answer under the table's filters and sort" }, "Export all rows (CSV)");
  all.addEventListener("click", () => {
    const q = { ...toQuery(table.currentView, PAGE_SIZE), offset: 0, limit: null };
    downloadText(toCsv(columns, queryRows(columns, answer.rows, q).rows), `${csvName}.csv`);
  });
  out.append(h("div", { class: "tbp-sql-bar" }, all), table.el);
}

// An upright category label (a rotated box's corners would reach over its neighbours): at most
// this many characters, cut in the middle (a rank's host name and a kernel's name differ at
// their ends); the axis name sits below the longest shown (11 px text, 6.6 px a character).
const X_LABEL_CHARS = 24;
const X_LABEL_CHAR_PX = 6.6;

function xNameGap(labels: readonly (string | number)[]): number {
  const longest = labels.reduce<number>((m, v) => Math.max(m, Math.min(String(v).length, X_LABEL_CHARS)), 0);
  return Math.ceil(longest * X_LABEL_CHAR_PX) + 16;
}

function drawChart(ctx: PageContext, out: HTMLElement, columns: TableColumn[], answer: SqlAnswer): void {
  const numeric = chartable(columns);
  if (numeric.length === 0 || answer.rows.length < 2) return;
  const box = h("section", { class: "tbp-panel" });
  const ySelect = h("select", { "data-testid": "sql-chart-y", "aria-label": "Column to chart" },
    ...numeric.map((n) => h("option", { value: n }, n)));
  const chosen = ctx.param("y");
  if (chosen && numeric.includes(chosen)) ySelect.value = chosen;
  box.appendChild(h("div", { class: "tbp-sql-bar" }, h("h2", {}, "Chart"), ySelect));
  out.appendChild(box);
  const c: Chart = chart(ctx, box, { label: "A numeric column of the answer over its first column", id: "sql_chart", height: 420 });
  const draw = (): void => {
    const s = chartSeries(columns, answer.rows, ySelect.value);
    if (!s) return;
    const unit = columns.find((col) => col.name === s.y)?.unit ?? "";
    c.setOption({
      color: PALETTE,
      // Room above for the y axis's name and below for the x axis's, which sits under the
      // (upright, middle-cut) labels rather than past the last one where the panel cuts it.
      grid: { left: 8, right: 24, top: 32, bottom: 28, containLabel: true },
      tooltip: {
        trigger: "axis",
        formatter: tooltipHtml((params: unknown) => {
          const p = (Array.isArray(params) ? params : [params])[0] as { dataIndex?: number } | undefined;
          const i = p?.dataIndex ?? -1;
          if (i < 0 || i >= s.ys.length) return html``;
          return html`${s.x}: ${String(s.xs[i])}<br>${s.y}: ${String(s.ys[i])}`;
        }),
      },
      xAxis: s.numericX
        ? { type: "value", name: s.x, nameLocation: "middle", nameGap: 28, scale: true }
        : {
          type: "category", data: s.xs, name: s.x, nameLocation: "middle", nameGap: xNameGap(s.xs),
          axisLabel: { rotate: 90, hideOverlap: true, formatter: (v: string) => middleEllipsis(v, X_LABEL_CHARS) },
        },
      yAxis: { type: "value", name: s.y, axisLabel: { formatter: axisLabel(unit) } },
      series: [s.numericX
        ? { type: "line", name: s.y, showSymbol: s.ys.length < 200, data: s.xs.map((x, i) => [x, s.ys[i]]) }
        : { type: "bar", name: s.y, data: s.ys }],
    });
  };
  ySelect.addEventListener("change", () => {
    ctx.setParams({ y: ySelect.value });
    draw();
  });
  draw();
}

export const queryPage: PageSpec = { everyRun: true, title: "Query (SQL)", ownData: true, multiHost: true, render };
