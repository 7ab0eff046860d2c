// The one way profile text reaches HTML. ECharts renders a tooltip formatter's return value as
// markup (innerHTML), so a plane, op or iterator name carrying `<img onerror=...>` would run as
// script in the page. Every tooltip formatter returns SafeHtml, which only `html`
// (below) makes: it escapes every interpolated value unless that value is itself SafeHtml.
// eslint.config.js forbids a tooltip formatter that does not go through `tooltipHtml`, and
// `innerHTML`/`outerHTML`/`insertAdjacentHTML` anywhere.
// What needs no escaping here: ECharts' own tooltips (no formatter: series, category and legend
// names and every value, `valueFormatter`'s text included, are encoded by ECharts' tooltip markup)
// and the other formatters (axis, series and legend labels), whose text is drawn on the canvas.
// tests/e2e/test_payload_names.py hovers every chart point of every page with markup as names.

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Text as HTML that shows it literally (element content and quoted attribute values). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** Markup whose every piece of data went through escapeHtml. */
export class SafeHtml {
  /** Only `html`, `joinHtml` and the constants below make one. */
  private constructor(readonly markup: string) {}

  /** @internal */
  static trusted(markup: string): SafeHtml {
    return new SafeHtml(markup);
  }
}

export type HtmlValue = SafeHtml | string | number;

function piece(value: HtmlValue): string {
  return value instanceof SafeHtml ? value.markup : escapeHtml(String(value));
}

/** Tagged template: the literal parts are markup written here, every `${value}` is escaped. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0] ?? "";
  values.forEach((v, i) => {
    out += piece(v) + (strings[i + 1] ?? "");
  });
  return SafeHtml.trusted(out);
}

/** Pieces joined by a line break (a tooltip's lines). */
export function joinHtml(parts: readonly HtmlValue[], separator: SafeHtml = html`<br>`): SafeHtml {
  return SafeHtml.trusted(parts.map(piece).join(separator.markup));
}

/** An ECharts tooltip formatter whose result is built with `html`. */
export function tooltipHtml<P>(format: (params: P) => SafeHtml): (params: P) => string {
  return (params: P) => format(params).markup;
}
