// The Capture Profile button and dialog. The button shows only when the server allows
// capture (settings.capture_enabled; `tbprof serve --no-capture` hides it). The dialog
// validates before sending, shows progress while the servers trace, then either opens the
// new run (every address captured) or stays open with what happened per address.

import { ApiError } from "../data/api";
import { postCapture, type CaptureReport, type CaptureRequest } from "../data/capture";
import type { HeaderAction, ShellContext } from "../shell/actions";
import { openDialog } from "../widgets/dialog";
import { clear, h } from "../widgets/dom";
import { DEFAULT_FIELDS, LIMITS, expectedMs, reportLines, validateCapture, type CaptureFields, type FieldErrors } from "./capture_form";

const STORAGE_KEY = "tbprof.capture.fields";
type Key = keyof CaptureFields;

function loadFields(): CaptureFields {
  try {
    const saved: unknown = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? "null");
    if (typeof saved === "object" && saved !== null) {
      const out = { ...DEFAULT_FIELDS };
      for (const k of Object.keys(DEFAULT_FIELDS) as Key[]) {
        const v = (saved as Record<string, unknown>)[k];
        if (typeof v === "string") out[k] = v;
      }
      return out;
    }
  } catch {
    // storage blocked or corrupt: defaults
  }
  return { ...DEFAULT_FIELDS };
}

function saveFields(f: CaptureFields): void {
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(f));
  } catch {
    // storage blocked: nothing to remember
  }
}

const LEVELS: Record<"hostTracerLevel" | "deviceTracerLevel" | "pythonTracerLevel", [string, string][]> = {
  hostTracerLevel: [
    ["0", "0 – off"],
    ["1", "1 – user annotations only"],
    ["2", "2 – + TensorFlow ops and runtime"],
    ["3", "3 – + verbose runtime events"],
  ],
  deviceTracerLevel: [
    ["0", "0 – off"],
    ["1", "1 – GPU/TPU activity"],
  ],
  pythonTracerLevel: [
    ["0", "0 – off"],
    ["1", "1 – every Python call (slow)"],
  ],
};

const LABELS: Record<Key, string> = {
  addresses: "Profiler server(s)",
  durationMs: "Duration (ms)",
  hostTracerLevel: "Host tracer level",
  deviceTracerLevel: "Device tracer level",
  pythonTracerLevel: "Python tracer level",
  delayMs: "Delay (ms)",
  retries: "Retries",
};

function resultList(report: CaptureReport): HTMLElement {
  return h(
    "ul",
    { class: "tbp-capture-results" },
    reportLines(report).results.map((r, i) =>
      h(
        "li",
        { class: r.ok ? "tbp-capture-ok" : "tbp-capture-failed", "data-address": r.address, "data-kind": report.results[i]?.kind ?? "" },
        h("span", { class: "tbp-capture-mark", "aria-hidden": "true" }, r.ok ? "✓" : "✗"),
        h("strong", {}, r.address),
        r.message === null ? null : " ",
        r.message === null ? null : h("span", {}, r.message),
      ),
    ),
  );
}

export function openCaptureDialog(ctx: ShellContext): void {
  const initial = loadFields();
  const inputs = {} as Record<Key, HTMLInputElement | HTMLSelectElement>;
  const errorEls = {} as Record<Key, HTMLElement>;
  const rows: HTMLElement[] = [];
  for (const key of Object.keys(DEFAULT_FIELDS) as Key[]) {
    let input: HTMLInputElement | HTMLSelectElement;
    if (key === "hostTracerLevel" || key === "deviceTracerLevel" || key === "pythonTracerLevel") {
      input = h("select", { name: key }, LEVELS[key].map(([v, label]) => h("option", { value: v }, label)));
    } else if (key === "addresses") {
      input = h("input", {
        type: "text", name: key, placeholder: "localhost:6009, grpc://worker1:6009", autocomplete: "off",
        spellcheck: "false", size: 36,
      });
    } else {
      const [lo, hi] = LIMITS[key];
      input = h("input", { type: "text", name: key, inputmode: "numeric", size: 8, title: `${lo} to ${hi}` });
    }
    input.value = initial[key];
    const id = `tbp-capture-${key}`;
    input.id = id;
    inputs[key] = input;
    errorEls[key] = h("div", { class: "tbp-capture-error tbp-error", "data-error-for": key, role: "alert" });
    rows.push(
      h("div", { class: "tbp-capture-row" }, h("label", { for: id }, LABELS[key]), h("div", {}, input, errorEls[key])),
    );
  }
  const status = h("div", { class: "tbp-capture-status", role: "status", "aria-live": "polite" });
  const submit = h("button", { type: "submit", hidden: true }); // Enter in a field submits
  const form = h("form", { class: "tbp-capture-form", novalidate: true }, rows, submit);
  const intro = h(
    "p",
    { class: "tbp-muted tbp-capture-intro" },
    "Traces running programs that started a profiler server (tf.profiler.experimental.server.start(port) or " +
      "jax.profiler.start_server(port)). Each server writes its profile into this logdir itself.",
  );

  let running = false;
  const dialog = openDialog({
    title: "Capture profile",
    body: h("div", { class: "tbp-capture" }, intro, form, status),
    actions: [
      { label: "Close" },
      { label: "Capture", primary: true, onClick: () => { void start(); return false; } },
    ],
  });
  dialog.el.setAttribute("data-dialog", "capture");
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void start();
  });
  inputs.addresses.focus();

  function read(): CaptureFields {
    const out = { ...DEFAULT_FIELDS };
    for (const k of Object.keys(inputs) as Key[]) out[k] = inputs[k].value;
    return out;
  }

  function showErrors(errors: FieldErrors): void {
    for (const k of Object.keys(errorEls) as Key[]) {
      const msg = errors[k] ?? "";
      errorEls[k].textContent = msg;
      inputs[k].setAttribute("aria-invalid", msg ? "true" : "false");
    }
    const first = (Object.keys(inputs) as Key[]).find((k) => errors[k]);
    if (first) inputs[first].focus();
  }

  function setRunning(on: boolean): void {
    running = on;
    dialog.setBusy(on);
    for (const input of Object.values(inputs)) input.disabled = on;
  }

  function progress(req: CaptureRequest): () => void {
    const total = expectedMs(req);
    const bar = h("progress", { max: total, value: 0 });
    const label = h("span", {});
    const n = req.addresses.split(",").length;
    clear(status);
    status.className = "tbp-capture-status tbp-capture-running";
    status.append(h("div", {}, `Capturing ${req.duration_ms} ms from ${n} server${n > 1 ? "s" : ""}… `, label), bar);
    const t0 = performance.now();
    const tick = (): void => {
      const ms = performance.now() - t0;
      bar.value = Math.min(ms, total);
      label.textContent = `${(ms / 1000).toFixed(1)} s`;
    };
    tick();
    const timer = setInterval(tick, 200);
    return () => clearInterval(timer);
  }

  async function start(): Promise<void> {
    if (running) return;
    const fields = read();
    const { request, errors } = validateCapture(fields);
    showErrors(errors);
    if (request === null) return;
    saveFields(fields);
    setRunning(true);
    const stop = progress(request);
    try {
      const report = await postCapture(ctx.api, request);
      stop();
      clear(status);
      status.className = `tbp-capture-status ${report.ok ? "tbp-capture-success" : "tbp-capture-failure"}`;
      status.append(h("p", { class: report.ok ? "" : "tbp-error" }, report.message), resultList(report));
      if (report.run !== null) {
        await ctx.reloadRuns();
        ctx.openRun(report.run);
        if (report.ok) dialog.close();
      }
    } catch (e) {
      stop();
      clear(status);
      status.className = "tbp-capture-status tbp-capture-failure";
      const msg = e instanceof ApiError ? e.message : `capture failed: ${String(e)}`;
      status.append(h("p", { class: "tbp-error", role: "alert" }, msg));
    } finally {
      setRunning(false);
    }
  }
}

export const captureAction: HeaderAction = {
  id: "capture",
  label: "Capture profile",
  title: "Trace a running TensorFlow/JAX program that serves the profiler",
  visible: (s) => s.captureEnabled,
  run: (ctx) => openCaptureDialog(ctx),
};
