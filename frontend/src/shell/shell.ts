// The shell: run selector (newest first, searchable), host selector ("all hosts" where the
// tool takes several hosts), the run's tool list, reload, header actions, and the page area.
// Everything it shows follows the URL state; every failure becomes a readable message.
//
// The run list is paged (the whole list of a logdir of many runs would be megabytes on each load,
// bench/measurements.md#frontend): the selector holds the first RUN_PAGE runs, a "more" entry
// loads the next page, the filter box searches every run on the backend (`q`), and a run named
// in the URL is looked up on its own.

import { formatTimestamp } from "../base/format";
import { newestFirst } from "../base/search";
import { routedView } from "../base/url_state";
import { ApiError, type Api, RUN_PAGE } from "../data/api";
import type { HostError } from "../data/schema.gen";
import type { DataRequest, RunInfo, Settings, ToolInfo, ToolResult } from "../data/types";
import type { PageContext } from "../pages/context";
import { renderGeneric } from "../pages/generic/generic_page";
import { renderNoData } from "../pages/no_data/no_data_page";
import type { PageSpec } from "../pages/registry";
import { everyRunTools, HEADER_ACTIONS, pageFor } from "../plugins";
import { clear, h } from "../widgets/dom";
import { loading, messageBox } from "../widgets/message";
import { watchProgress } from "../widgets/progress";
import type { ShellContext } from "./actions";
import { errorBox } from "./error_box";
import { renderOptionControls } from "./option_controls";
import { StateStore } from "./state";

const FALLBACK_SETTINGS: Settings = { version: "", captureEnabled: false, allHosts: "__all__", tools: [] };
const DEFAULT_ROWS = 100;
/** Typing in the run filter searches the backend once typing pauses this long. */
const FILTER_DELAY_MS = 250;
/** The backend's bound on a search (GET runs q=). */
const MAX_RUN_QUERY_CHARS = 256;

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : typeof e === "string" ? e : "unknown error";
}

interface Prefetched {
  key: string;
  promise: Promise<ToolResult>;
}

interface RunTools {
  names: string[];
  infos: Map<string, ToolInfo>;
}

export class Shell {
  private readonly state = new StateStore();
  private settings: Settings = FALLBACK_SETTINGS;
  /** The loaded pages of the run list for `runsQuery`, newest first. */
  private runs: RunInfo[] = [];
  /** Runs matching `runsQuery` in all (loaded or not). */
  private runsTotal = 0;
  private runsQuery = "";
  /** Runs in the logdir (from the last list without a search): 0 shows "no profiles". */
  private logdirTotal = 0;
  /** The URL's run when it is not on a loaded page (looked up by name). */
  private pinned: RunInfo | null = null;
  private runsError: unknown = null;
  private runsRequest = 0;
  private filterTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly runTools = new Map<string, Promise<RunTools>>();
  private generation = 0;
  private pageAbort: AbortController | null = null;
  private disposers: (() => void)[] = [];
  private current: { run: RunInfo | null; host: string | null } = { run: null, host: null };

  private readonly runFilter: HTMLInputElement;
  private readonly runSelect: HTMLSelectElement;
  private readonly hostSelect: HTMLSelectElement;
  private readonly reloadBtn: HTMLButtonElement;
  private readonly actionsSlot: HTMLElement;
  private readonly versionEl: HTMLElement;
  private readonly toolNav: HTMLElement;
  private readonly optionsBar: HTMLElement;
  private readonly notice: HTMLElement;
  private readonly page: HTMLElement;

  constructor(
    root: HTMLElement,
    private readonly api: Api,
  ) {
    this.runFilter = h("input", {
      type: "search",
      class: "tbp-run-filter",
      placeholder: "Filter runs",
      "aria-label": "Filter runs",
      maxlength: String(MAX_RUN_QUERY_CHARS),
    });
    this.runSelect = h("select", { class: "tbp-run-select", "aria-label": "Run" });
    this.hostSelect = h("select", { class: "tbp-host-select", "aria-label": "Host" });
    this.reloadBtn = h("button", { type: "button", class: "tbp-btn tbp-reload", title: "Rescan the log directory for new runs" }, "↻ Reload");
    this.actionsSlot = h("span", { class: "tbp-actions", "data-slot": "actions" });
    this.versionEl = h("span", { class: "tbp-version tbp-muted" });
    this.toolNav = h("nav", { class: "tbp-tools", "aria-label": "Tools" });
    this.optionsBar = h("div", { class: "tbp-options", hidden: true });
    this.notice = h("div", { class: "tbp-notice", role: "status", hidden: true });
    this.page = h("main", { class: "tbp-page", "data-page": "" });
    clear(root);
    root.classList.add("tbp-app");
    // Below 1100 px the tool list folds away behind this button; wider, it is hidden.
    const navToggle = h("button", { type: "button", class: "tbp-btn tbp-nav-toggle", "aria-label": "Tools", "aria-expanded": "false", title: "Show or hide the tool list" }, "☰ Tools");
    navToggle.addEventListener("click", () => {
      const open = root.classList.toggle("tbp-nav-open");
      navToggle.setAttribute("aria-expanded", String(open));
    });
    this.toolNav.addEventListener("click", (e) => {
      // Picking a tool closes the folded list.
      if ((e.target as HTMLElement).closest("a.tbp-tool")) {
        root.classList.remove("tbp-nav-open");
        navToggle.setAttribute("aria-expanded", "false");
      }
    });
    const header = h(
        "header",
        { class: "tbp-bar" },
        navToggle,
        h("span", { class: "tbp-brand" }, "tbprof"),
        h("label", { class: "tbp-field" }, h("span", {}, "Run"), this.runFilter, this.runSelect),
        h("label", { class: "tbp-field" }, h("span", {}, "Host"), this.hostSelect),
        this.reloadBtn,
        h("span", { class: "tbp-spacer" }),
        this.actionsSlot,
        this.versionEl,
      );
    // The tool list sticks under the header, whose height depends on the width.
    new ResizeObserver(() => root.style.setProperty("--tbp-bar-h", `${header.offsetHeight}px`)).observe(header);
    root.append(
      header,
      h("div", { class: "tbp-body" }, this.toolNav, h("div", { class: "tbp-main" }, this.notice, this.optionsBar, this.page)),
    );
    this.runFilter.addEventListener("input", () => {
      if (this.filterTimer !== null) clearTimeout(this.filterTimer);
      this.filterTimer = setTimeout(() => {
        this.filterTimer = null;
        void this.searchRuns(this.runFilter.value);
      }, FILTER_DELAY_MS);
    });
    this.runSelect.addEventListener("change", () => {
      if (this.runSelect.selectedOptions[0]?.hasAttribute("data-more") === true) {
        this.runSelect.value = this.current.run?.name ?? "";
        void this.loadMoreRuns();
        return;
      }
      this.state.update({ run: this.runSelect.value, host: null }, { push: true });
    });
    this.hostSelect.addEventListener("change", () => {
      this.state.update({ host: this.hostSelect.value }, { push: true });
    });
    this.reloadBtn.addEventListener("click", () => void this.reloadRuns());
    this.state.onChange(() => void this.route());
  }

  async start(): Promise<void> {
    this.page.appendChild(loading("runs"));
    const [settings] = await Promise.allSettled([this.api.settings(), this.loadRuns(false)]);
    if (settings.status === "fulfilled") this.settings = settings.value;
    this.versionEl.textContent = this.settings.version ? `v${this.settings.version}` : "";
    this.renderActions();
    await this.route();
  }

  // --- runs -------------------------------------------------------------------------------

  /** The first page of the runs matching the filter (a rescan of the logdir with `refresh`). */
  private async loadRuns(refresh: boolean): Promise<void> {
    const ticket = ++this.runsRequest;
    const q = this.runsQuery;
    try {
      const page = await this.api.runs({ offset: 0, limit: RUN_PAGE, q, refresh });
      if (ticket !== this.runsRequest) return; // a later search or reload answers instead
      // The backend lists newest first already; sorting here keeps that a frontend promise.
      this.runs = newestFirst(page.runs);
      this.runsTotal = page.total ?? page.runs.length;
      if (q === "") this.logdirTotal = this.runsTotal;
      this.runsError = null;
    } catch (e) {
      if (ticket === this.runsRequest) this.runsError = e;
    }
  }

  /** The next page of the list, appended (the selector's "more" entry). */
  private async loadMoreRuns(): Promise<void> {
    const ticket = ++this.runsRequest;
    this.runSelect.disabled = true;
    try {
      const page = await this.api.runs({ offset: this.runs.length, limit: RUN_PAGE, q: this.runsQuery, refresh: false });
      if (ticket !== this.runsRequest) return;
      const known = new Set(this.runs.map((r) => r.name));
      this.runs = [...this.runs, ...newestFirst(page.runs).filter((r) => !known.has(r.name))];
      this.runsTotal = page.total ?? this.runs.length;
    } catch (e) {
      if (ticket === this.runsRequest) this.showNotice(`Could not load more runs: ${errorText(e)}`);
    } finally {
      this.fillRunSelect(this.current.run?.name ?? null);
      this.runSelect.focus();
    }
  }

  /** The filter box: the backend searches every run's name (not only the loaded pages). */
  private async searchRuns(query: string): Promise<void> {
    const q = query.trim();
    if (q === this.runsQuery) return;
    this.runsQuery = q;
    await this.loadRuns(false);
    if (q !== this.runsQuery) return;
    if (this.runsError !== null) {
      this.showNotice(`Could not search the runs: ${errorText(this.runsError)}`);
      this.runsError = null;
    }
    this.fillRunSelect(this.current.run?.name ?? null);
  }

  async reloadRuns(): Promise<void> {
    this.reloadBtn.disabled = true;
    this.reloadBtn.classList.add("tbp-busy");
    try {
      const before = new Map([...this.runs, ...(this.pinned ? [this.pinned] : [])].map((r) => [r.name, r.mtime]));
      await this.loadRuns(true);
      this.pinned = null; // looked up again: its files may have changed too
      // Tool lists of runs whose files changed must be asked again.
      for (const r of this.runs) if (before.get(r.name) !== r.mtime) this.runTools.delete(r.name);
      await this.route();
    } finally {
      this.reloadBtn.disabled = false;
      this.reloadBtn.classList.remove("tbp-busy");
    }
  }

  private fillRunSelect(selected: string | null = this.current.run?.name ?? null): void {
    clear(this.runSelect);
    const option = (r: RunInfo): HTMLOptionElement => {
      const when = formatTimestamp(r.mtime);
      const opt = h("option", { value: r.name }, when ? `${r.name}  (${when})` : r.name);
      if (r.name === selected) opt.selected = true;
      return opt;
    };
    // The open run stays choosable when the search or the loaded pages do not hold it.
    const current = this.current.run;
    if (selected !== null && current !== null && current.name === selected && !this.runs.some((r) => r.name === selected)) {
      this.runSelect.appendChild(option(current));
    }
    for (const r of this.runs) this.runSelect.appendChild(option(r));
    const remaining = this.runsTotal - this.runs.length;
    if (remaining > 0) {
      this.runSelect.appendChild(
        h("option", { value: "", "data-more": "" }, `… ${remaining} more run(s): show ${Math.min(RUN_PAGE, remaining)} more`),
      );
    }
    this.runSelect.disabled = this.runSelect.options.length === 0;
    const q = this.runsQuery;
    this.runFilter.title =
      q === "" ? `${this.runsTotal} run(s)` : `${this.runsTotal} of ${this.logdirTotal} run(s) match "${q}"`;
  }

  private toolsOf(run: RunInfo): Promise<RunTools> {
    let p = this.runTools.get(run.name);
    if (!p) {
      p = this.api.tools(run.name).then((infos) => {
        const names = infos.map((t) => t.name);
        // In the backend's order (service/tools.py); pages that read no tool of the run
        // (compare) are there for every run, after the run's tools.
        for (const t of everyRunTools()) if (!names.includes(t)) names.push(t);
        return { names, infos: new Map(infos.map((t) => [t.name, t])) };
      });
      p.catch(() => this.runTools.delete(run.name));
      this.runTools.set(run.name, p);
    }
    return p;
  }

  private toolTitle(name: string, tools?: RunTools): string {
    return (
      tools?.infos.get(name)?.title ??
      this.settings.tools.find((t) => t.name === name)?.title ??
      pageFor(name)?.title ??
      name
    );
  }

  // --- routing ----------------------------------------------------------------------------

  /** Draws what the URL state says. Later calls supersede earlier ones still loading. */
  async route(): Promise<void> {
    const gen = ++this.generation;
    try {
      await this.routeTo(gen);
    } finally {
      // What the page on screen was drawn for: until it equals the URL's, the page shown is an
      // earlier one (the URL changed, its hashchange has yet to run or its data is loading).
      if (gen === this.generation) this.page.dataset.view = routedView(this.state.snapshot());
    }
  }

  private async routeTo(gen: number): Promise<void> {
    this.leavePage();
    const ctl = new AbortController();
    this.pageAbort = ctl;
    this.notice.hidden = true;
    const stale = (): boolean => gen !== this.generation;

    if (!this.runsUsable()) return;
    const run = await this.chooseRun();
    if (stale() || run === null) return;

    // When the run list already knows the run's tools exactly, the tool's data is requested
    // now, in parallel with the tool list (one round trip less before the page can draw).
    const early = this.prefetch(run, ctl.signal);
    const tools = await this.openRun(run);
    if (stale() || tools === null) return;

    const { tool, info, host } = this.chooseTool(run, tools);
    if (tool === null) {
      this.showPageMessage(
        messageBox({ title: "No tool has data for this run", body: `tbprof found nothing to analyse in run ${run.name}.` }),
      );
      return;
    }
    if (!tools.names.includes(tool)) {
      this.showNoData(run, tools, tool, null, ctl.signal);
      return;
    }
    await this.renderPage(gen, ctl, run, host, tool, info, tools, early);
  }

  /** False (with a message shown) when there is no run to show. */
  private runsUsable(): boolean {
    if (this.runsError !== null) {
      this.showPageMessage(errorBox(this.runsError, "the list of runs"));
      this.fillRunSelect(null);
      return false;
    }
    if (this.runs.length > 0 || this.logdirTotal > 0 || this.runsQuery !== "") return true;
    this.fillRunSelect(null);
    this.renderHostSelect(null, [], false);
    clear(this.toolNav);
    this.showPageMessage(
      messageBox({
        title: "No profiles found in this log directory",
        body: [
          "tbprof looks for profiler output below the log directory: plugins/profile/<session>/<host>.xplane.pb " +
            "(TensorFlow, JAX), Chrome trace JSON files and tfprof dumps.",
          "Record a profile (e.g. tf.profiler.experimental.start(logdir) … stop(), jax.profiler.trace(logdir)) " +
            "and press Reload.",
        ],
      }),
    );
    return false;
  }

  /**
   * The URL's run if it exists (looked up by name when no loaded page holds it: a deep link
   * beyond the first page, or a session newer than the list), else the newest.
   */
  private async chooseRun(): Promise<RunInfo | null> {
    const gen = this.generation;
    const runName = this.state.get("run");
    let run = this.runs.find((r) => r.name === runName) ?? (this.pinned?.name === runName ? this.pinned : null);
    if (runName !== null && run === null) {
      let lookup: RunInfo | null = null;
      let failure: unknown = null;
      try {
        lookup = await this.api.run(runName);
      } catch (e) {
        failure = e;
      }
      if (gen !== this.generation) return null;
      run = this.pinned = lookup;
      if (run === null) {
        const why = failure === null ? "is not in this log directory" : `could not be opened (${errorText(failure)})`;
        this.showNotice(`Run "${runName}" ${why}; showing the newest run.`);
      }
    }
    if (run === null && this.runs.length === 0 && this.runsQuery !== "") {
      // A search that matches nothing: the newest run of the whole logdir.
      try {
        run = (await this.api.runs({ offset: 0, limit: 1, q: "", refresh: false })).runs[0] ?? null;
      } catch {
        run = null;
      }
      if (gen !== this.generation) return null;
    }
    run ??= this.runs[0] ?? null;
    if (run === null) return null;
    this.current = { run, host: null };
    this.fillRunSelect(run.name);
    // Hosts are known before the tools are: show them while the run opens (or fails to).
    const wantedHost = this.state.get("host");
    this.renderHostSelect(run, run.hosts, false, wantedHost !== null && run.hosts.includes(wantedHost) ? wantedHost : (run.hosts[0] ?? null));
    return run;
  }

  /** The run's tools (converting a large profile the first time takes a moment), or null on failure (shown). */
  private async openRun(run: RunInfo): Promise<RunTools | null> {
    const gen = this.generation;
    const polling = new AbortController();
    if (!this.runTools.has(run.name)) {
      clear(this.page);
      const box = this.page.appendChild(loading(run.toolsExact ? `run ${run.name}` : `run ${run.name} (reading the profile)`));
      // A pod's tool list converts its hosts first: say how far that is.
      if (run.hosts.length > 1) watchProgress(box, (s) => this.api.progress(run.name, s), polling.signal);
    }
    try {
      return await this.toolsOf(run);
    } catch (e) {
      if (gen !== this.generation) return null;
      clear(this.toolNav);
      this.showPageMessage(errorBox(e, `run ${run.name}`));
      return null;
    } finally {
      polling.abort();
    }
  }

  /** The URL's tool (or the run's default) and host; draws the selectors and writes the choice back. */
  private chooseTool(run: RunInfo, tools: RunTools): { tool: string | null; info: ToolInfo | null; host: string | null } {
    const requested = this.state.get("tool");
    const tool = requested ?? firstTool(tools.names.filter((n) => pageFor(n)?.everyRun !== true));
    const info = tool !== null ? (tools.infos.get(tool) ?? null) : null;
    const multi =
      info?.multiHost ?? (tool !== null && (run.multiHostTools.includes(tool) || pageFor(tool)?.multiHost === true));
    const host = this.pickHost(run, multi);
    this.current = { run, host };
    this.renderHostSelect(run, run.hosts, multi, host);
    this.renderToolNav(run, tools, tool);
    this.renderActions();
    // Write back what was chosen by default, so the URL always names the full view.
    this.state.update({ run: run.name, host, tool }, { silent: true });
    return { tool, info, host };
  }

  /** "No data for this tool": why, and the tools that have data. */
  private showNoData(run: RunInfo, tools: RunTools, tool: string, backendMessage: string | null, signal: AbortSignal): void {
    clear(this.page);
    // Options stay when the backend said "no data": another option value may have data.
    if (backendMessage === null) this.optionsBar.hidden = true;
    renderNoData({
      el: this.page,
      api: this.api,
      run,
      runTools: tools.names,
      tool,
      title: this.toolTitle(tool, tools),
      known: backendMessage !== null || this.settings.tools.length === 0 || this.settings.tools.some((t) => t.name === tool),
      facts: this.settings.tools.find((t) => t.name === tool),
      backendMessage,
      toolTitle: (t) => this.toolTitle(t, tools),
      href: (t) => this.toolHref(t),
      open: (t) => this.openTool(t),
      signal,
    });
  }

  private currentOptions(): Record<string, string> {
    const options: Record<string, string> = {};
    for (const [k, v] of this.state.sub("o.")) options[k] = v;
    return options;
  }

  private prefetch(run: RunInfo, signal: AbortSignal): Prefetched | null {
    if (!run.toolsExact) return null;
    const tool = this.state.get("tool") ?? firstTool(run.tools);
    if (tool === null || !run.tools.includes(tool)) return null;
    const spec = pageFor(tool);
    if (spec?.ownData) return null;
    const request: DataRequest = { run: run.name, host: this.pickHost(run, run.multiHostTools.includes(tool)), tool, options: this.currentOptions() };
    const promise = this.api.data(request, spec?.rows ?? DEFAULT_ROWS, signal);
    promise.catch(() => undefined); // awaited (and its error shown) by renderPage, or dropped
    return { key: JSON.stringify(request), promise };
  }

  private pickHost(run: RunInfo, multi: boolean): string | null {
    const wanted = this.state.get("host");
    const all = this.settings.allHosts;
    if (run.hosts.length <= 1) return run.hosts[0] ?? null;
    if (wanted === all && multi) return all;
    if (wanted !== null && run.hosts.includes(wanted)) return wanted;
    return multi ? all : (run.hosts[0] ?? null);
  }

  private toolHref(tool: string, params: Readonly<Record<string, string>> = {}): string {
    const s = new Map<string, string>();
    for (const k of ["run", "host"]) {
      const v = this.state.get(k);
      if (v !== null) s.set(k, v);
    }
    s.set("tool", tool);
    for (const [k, v] of Object.entries(params)) s.set(`c.${k}`, v);
    return this.state.hrefFor(s);
  }

  /** Opens a tool of the current run; table/page state of the old tool is dropped. */
  private openTool(tool: string, params: Readonly<Record<string, string>> = {}): void {
    const updates: Record<string, string | null> = { tool };
    for (const k of this.state.snapshot().keys()) {
      if (k.startsWith("t.") || k.startsWith("c.") || k.startsWith("o.")) updates[k] = null;
    }
    for (const [k, v] of Object.entries(params)) updates[`c.${k}`] = v;
    this.state.update(updates, { push: true });
  }

  // --- header and navigation --------------------------------------------------------------

  private renderHostSelect(run: RunInfo | null, hosts: readonly string[], multi: boolean, selected: string | null = null): void {
    clear(this.hostSelect);
    if (run && multi && hosts.length > 1) {
      this.hostSelect.appendChild(h("option", { value: this.settings.allHosts }, `All hosts (${hosts.length})`));
    }
    for (const host of hosts) this.hostSelect.appendChild(h("option", { value: host }, host));
    this.hostSelect.value = selected ?? "";
    this.hostSelect.disabled = this.hostSelect.options.length <= 1;
  }

  private renderToolNav(run: RunInfo, tools: RunTools, active: string | null): void {
    clear(this.toolNav);
    const link = (name: string, available: boolean): HTMLElement => {
      const a = h(
        "a",
        {
          href: this.toolHref(name),
          class: `tbp-tool${name === active ? " tbp-active" : ""}${available ? "" : " tbp-unavailable"}`,
          "data-tool": name,
          "aria-current": name === active ? "page" : null,
          title: available ? null : "No data for this run: click to see why",
        },
        this.toolTitle(name, tools),
      );
      a.addEventListener("click", (e) => {
        if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        if (name !== active) this.openTool(name);
      });
      return a;
    };
    this.toolNav.appendChild(h("div", { class: "tbp-nav-title" }, "Tools"));
    for (const name of tools.names) this.toolNav.appendChild(link(name, true));
    const missing = this.settings.tools.map((t) => t.name).filter((n) => !tools.names.includes(n));
    if (active !== null && !tools.names.includes(active) && !missing.includes(active)) missing.unshift(active);
    if (missing.length) {
      // Closed unless the page shown is one of them: most are tools of other profile kinds.
      const open = active !== null && missing.includes(active);
      this.toolNav.appendChild(
        h(
          "details",
          { class: "tbp-nav-missing", open },
          h("summary", { class: "tbp-nav-title tbp-muted" }, `No data in this run (${missing.length})`),
          ...missing.map((name) => link(name, false)),
        ),
      );
    }
    if (run.error) this.toolNav.appendChild(h("p", { class: "tbp-error" }, run.error));
  }

  private renderActions(): void {
    clear(this.actionsSlot);
    const ctx: ShellContext = {
      api: this.api,
      settings: this.settings,
      run: this.current.run,
      host: this.current.host,
      reloadRuns: () => this.reloadRuns(),
      openRun: (run, tool) => this.state.update({ run, host: null, tool: tool ?? null }, { push: true }),
    };
    for (const action of HEADER_ACTIONS) {
      if (!action.visible(this.settings)) continue;
      const b = h("button", { type: "button", class: "tbp-btn", "data-action": action.id, title: action.title ?? null }, action.label);
      b.addEventListener("click", () => action.run(ctx));
      this.actionsSlot.appendChild(b);
    }
  }

  private renderOptions(info: ToolInfo | null, spec: PageSpec | undefined): void {
    const options = (info?.options ?? []).filter((o) => !(spec?.hideOptions ?? []).includes(o.name));
    renderOptionControls(this.optionsBar, options, {
      value: (name) => this.state.get(`o.${name}`),
      set: (name, value) => this.state.update({ [`o.${name}`]: value }),
      pageChoices: { ...spec?.optionChoices },
    });
  }

  /** Options belong under the page's title, where they read as part of that page, once the page has drawn one. */
  private placeOptions(): void {
    const title = this.page.querySelector(":scope > .tbp-page-title");
    if (title && !this.optionsBar.hidden) title.after(this.optionsBar);
  }

  // --- the page ---------------------------------------------------------------------------

  private async renderPage(
    gen: number,
    ctl: AbortController,
    run: RunInfo,
    host: string | null,
    tool: string,
    info: ToolInfo | null,
    tools: RunTools,
    early: Prefetched | null,
  ): Promise<void> {
    const stale = (): boolean => gen !== this.generation;
    const request: DataRequest = { run: run.name, host, tool, options: this.currentOptions() };
    const spec = pageFor(tool);
    this.renderOptions(info, spec);
    // Above the page while it loads (and for messages); under the title once it has one.
    this.page.before(this.optionsBar);
    clear(this.page);
    // A page's own classes (tbp-compare, tbp-query) go with it.
    this.page.className = "tbp-page";
    this.page.dataset.page = tool;
    let result = null;
    if (!spec?.ownData && !spec?.everyRun) {
      const box = this.page.appendChild(loading(this.toolTitle(tool, tools)));
      // All hosts of a pod: the backend converts the hosts first ("converting hosts: k / N").
      if (host === this.settings.allHosts && run.hosts.length > 1) {
        watchProgress(box, (s) => this.api.progress(run.name, s), ctl.signal);
      }
      try {
        result = await (early?.key === JSON.stringify(request)
          ? early.promise
          : this.api.data(request, spec?.rows ?? DEFAULT_ROWS, ctl.signal));
        performance.mark("tbprof:data-received", { detail: { tool } });
      } catch (e) {
        if (stale() || (e instanceof DOMException && e.name === "AbortError")) return;
        if (e instanceof ApiError && e.kind === "no_data") {
          this.showNoData(run, tools, tool, e.message, ctl.signal);
        } else {
          clear(this.page);
          this.page.appendChild(errorBox(e, this.toolTitle(tool, tools)));
        }
        return;
      }
      if (stale()) return;
      clear(this.page);
    }
    const ctx: PageContext = {
      el: this.page,
      api: this.api,
      request,
      run,
      tool: info,
      result,
      signal: ctl.signal,
      allHosts: this.settings.allHosts,
      toolTitle: (t) => this.toolTitle(t),
      param: (key) => this.state.get(`c.${key}`),
      setParams: (updates) => this.state.update(prefixed("c.", updates), { silent: true }),
      setOptions: (updates) => this.state.update(prefixed("o.", updates)),
      tableParams: (table) => this.state.sub(`t.${table}.`),
      setTableParams: (updates) => this.state.update(prefixed("t.", updates), { silent: true }),
      navigate: (t, params) => this.openTool(t, params),
      href: (t, params) => this.toolHref(t, params),
      onDispose: (fn) => this.disposers.push(fn),
    };
    try {
      if (spec) await spec.render(ctx);
      else renderGeneric(ctx);
      if (!stale()) this.placeOptions();
      if (result) this.showHostErrors(result.raw.host_errors);
      // For bench/frontend_load_bench.py and the browser's performance panel.
      performance.mark("tbprof:page-rendered", { detail: { tool } });
    } catch (e) {
      if (stale() || (e instanceof DOMException && e.name === "AbortError")) return;
      this.page.appendChild(errorBox(e, `the ${this.toolTitle(tool, tools)} page`));
    }
  }

  /** All-hosts results skip unreadable host files and name them in `host_errors`. */
  private showHostErrors(errors: readonly HostError[] | undefined): void {
    if (!errors || errors.length === 0) return;
    const items = errors.map((e) => h("li", {}, h("b", {}, e.host), `: ${e.error || "unreadable"}`));
    this.page.insertBefore(
      messageBox({ kind: "error", title: `${errors.length} host file(s) could not be read; the other hosts are shown`, body: h("ul", {}, items) }),
      this.page.firstChild,
    );
  }

  private leavePage(): void {
    this.pageAbort?.abort();
    this.pageAbort = null;
    for (const fn of this.disposers.splice(0)) {
      try {
        fn();
      } catch {
        // a failing cleanup must not block the next page
      }
    }
  }

  private showPageMessage(el: HTMLElement): void {
    clear(this.page);
    this.optionsBar.hidden = true;
    this.page.appendChild(el);
  }

  private showNotice(text: string): void {
    this.notice.textContent = text;
    this.notice.hidden = false;
  }
}

function prefixed(prefix: string, updates: Readonly<Record<string, string | null>>): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const [k, v] of Object.entries(updates)) out[prefix + k] = v;
  return out;
}

/** The tool a run opens on when the URL names none: the first the backend lists. */
function firstTool(names: readonly string[]): string | null {
  return names[0] ?? null;
}
