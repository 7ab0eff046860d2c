// Messages in place of content: errors (never a blank page), empty states, loading.

import { h } from "./dom";

export interface MessageOptions {
  title: string;
  body?: string | Node | (string | Node)[];
  kind?: "error" | "info" | "loading";
  detail?: string;
}

export function messageBox(o: MessageOptions): HTMLElement {
  const body = o.body === undefined ? [] : Array.isArray(o.body) ? o.body : [o.body];
  return h(
    "div",
    { class: `tbp-message tbp-message-${o.kind ?? "info"}`, role: o.kind === "error" ? "alert" : "status" },
    h("h2", {}, o.title),
    ...body.map((b) => (typeof b === "string" ? h("p", {}, b) : b)),
    o.detail ? h("pre", { class: "tbp-detail" }, o.detail) : null,
  );
}

export function loading(what: string): HTMLElement {
  return messageBox({ title: `Loading ${what}…`, kind: "loading" });
}
