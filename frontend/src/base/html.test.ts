import { describe, expect, it } from "vitest";
import { escapeHtml, html, joinHtml, tooltipHtml } from "./html";

const PAYLOADS = ["<img src=x onerror=alert(1)>", "</script><script>alert(1)</script>", `"><svg onload=alert(1)>`, "a&b'c"];

describe("html", () => {
  it.each(PAYLOADS)("escapes interpolated text %s", (payload) => {
    const out = html`<b>${payload}</b>`.markup;
    // Only the template's own tags remain as markup; the payload has no <, >, quote left to
    // open an element or leave an attribute value, and unescapes back to itself.
    const inner = out.slice("<b>".length, -"</b>".length);
    expect(/[<>"']/.test(inner)).toBe(false);
    const back = inner.replace(/&(lt|gt|quot|#39|amp);/g, (_m, e: string) => ({ lt: "<", gt: ">", quot: '"', "#39": "'", amp: "&" })[e] ?? "");
    expect(back).toBe(payload);
  });

  it("keeps nested SafeHtml and escapes strings once", () => {
    const inner = html`<i>${"<x>"}</i>`;
    expect(html`<b>${inner}</b>`.markup).toBe("<b><i>&lt;x&gt;</i></b>");
    expect(joinHtml(["<a>", inner, 3]).markup).toBe("&lt;a&gt;<br><i>&lt;x&gt;</i><br>3");
  });

  it("escapes quotes for attribute values", () => {
    expect(escapeHtml(`"'`)).toBe("&quot;&#39;");
  });

  it("tooltipHtml returns the markup", () => {
    expect(tooltipHtml((p: { name: string }) => html`${p.name}`)({ name: "<b>" })).toBe("&lt;b&gt;");
  });
});

// Belt and braces beside the eslint rule: no page may hand ECharts a tooltip formatter that
// does not go through tooltipHtml, nor write markup into the DOM directly.
const SOURCES = Object.entries(import.meta.glob<string>(["../**/*.ts", "!../**/*.test.ts"], { query: "?raw", import: "default", eager: true }));

describe("every chart tooltip escapes", () => {
  it("finds the sources", () => expect(SOURCES.length).toBeGreaterThan(20));
  it.each(SOURCES)("%s", (file, text) => {
    // A `tooltip: { ... formatter: <not tooltipHtml(> ...}` within the tooltip block.
    for (const m of text.matchAll(/tooltip:\s*\{/g)) {
      const start = m.index + m[0].length;
      let depth = 1;
      let end = start;
      while (end < text.length && depth > 0) {
        const ch = text[end];
        if (ch === "{") depth++;
        else if (ch === "}") depth--;
        end++;
      }
      const block = text.slice(start, end);
      for (const f of block.matchAll(/\bformatter:\s*(\S+)/g)) {
        expect(f[1]?.startsWith("tooltipHtml("), `${file}: ${block.slice(0, 120)}`).toBe(true);
      }
    }
    expect(/\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML\(/.test(text)).toBe(false);
  });
});
