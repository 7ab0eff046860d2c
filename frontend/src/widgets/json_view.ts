// A collapsible view of nested JSON (fields a page has no dedicated widget for).

import { formatByKey, humanizeKey } from "../base/format";
import { h } from "./dom";

const MAX_ITEMS = 200;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function leaf(key: string, value: unknown): HTMLElement {
  const text = formatByKey(key, value);
  const raw = typeof value === "number" && text !== String(value) ? ` (${String(value)})` : "";
  return h("span", { class: "tbp-json-leaf" }, text, raw ? h("span", { class: "tbp-muted" }, raw) : null);
}

export function jsonView(key: string, value: unknown, open = false): HTMLElement {
  if (Array.isArray(value)) {
    if (value.every((v) => !isPlainObject(v) && !Array.isArray(v)) && value.length <= 20) {
      return h("div", { class: "tbp-json-row" }, h("span", { class: "tbp-json-key" }, humanizeKey(key)), leaf(key, value));
    }
    const items = value.slice(0, MAX_ITEMS).map((v, i) => jsonView(`${key}[${i}]`, v));
    const more = value.length > MAX_ITEMS ? h("div", { class: "tbp-muted" }, `… ${value.length - MAX_ITEMS} more`) : null;
    return h(
      "details",
      { class: "tbp-json", open },
      h("summary", {}, `${humanizeKey(key)} `, h("span", { class: "tbp-muted" }, `[${value.length}]`)),
      ...items,
      more,
    );
  }
  if (isPlainObject(value)) {
    const name = typeof value.name === "string" ? ` ${value.name}` : "";
    return h(
      "details",
      { class: "tbp-json", open },
      h("summary", {}, humanizeKey(key.replace(/\[\d+\]$/, "")) + (key.endsWith("]") ? key.slice(key.lastIndexOf("[")) : ""), h("span", { class: "tbp-muted" }, name)),
      ...Object.entries(value).map(([k, v]) => jsonView(k, v)),
    );
  }
  return h("div", { class: "tbp-json-row" }, h("span", { class: "tbp-json-key" }, humanizeKey(key)), leaf(key, value));
}
