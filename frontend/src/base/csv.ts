// CSV in exactly the dialect of the backend's `csv` route (Python's csv.writer with
// lineterminator "\n", QUOTE_MINIMAL, header = column names, None -> ""), so "Export CSV"
// of the rows on screen and the backend's full-table CSV compare byte for byte.

export type CsvCell = string | number | boolean | null;
export type CsvKind = "str" | "int" | "float" | "bool";

/**
 * Python's repr() of a float: shortest round-trip digits (as JavaScript), but exponent form
 * when the decimal exponent is < -4 or >= 16 (JavaScript switches at -7 and 21), a two-digit
 * exponent ("1e-05") and ".0" on integral values.
 */
export function pythonFloatRepr(value: number): string {
  if (Number.isNaN(value)) return "nan";
  if (!Number.isFinite(value)) return value > 0 ? "inf" : "-inf";
  if (value === 0) return Object.is(value, -0) ? "-0.0" : "0.0";
  const expForm = value.toExponential(); // shortest digits: "1.2345e+16", "-2.5e-7"
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(expForm);
  if (!m) return String(value);
  const sign = m[1] ?? "";
  const digits = (m[2] ?? "") + (m[3] ?? "");
  const exp = Number(m[4]);
  if (exp < -4 || exp >= 16) {
    const mantissa = digits.length > 1 ? `${digits[0] ?? ""}.${digits.slice(1)}` : digits;
    const expAbs = String(Math.abs(exp)).padStart(2, "0");
    return `${sign}${mantissa}e${exp < 0 ? "-" : "+"}${expAbs}`;
  }
  if (exp >= digits.length - 1) {
    return `${sign}${digits}${"0".repeat(exp - digits.length + 1)}.0`;
  }
  if (exp >= 0) {
    return `${sign}${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
  }
  return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
}

const FORMULA_START = new Set(["=", "+", "-", "@", "\t", "\r"]);
const NUMBER_CHARS = /^[0-9.eE+-]+$/;

/** A decimal literal with an optional sign and exponent ("-1.5", "+2e-3"), as the backend's _plain_number. */
function plainNumber(text: string): boolean {
  const body = text.startsWith("+") || text.startsWith("-") ? text.slice(1) : text;
  if (body === "" || !"0123456789.".includes(body.charAt(0)) || !NUMBER_CHARS.test(body)) return false;
  return !Number.isNaN(Number(body));
}

/**
 * Text as a cell that a spreadsheet shows, never evaluates: OWASP's advice against CSV
 * injection (a leading `'` on text starting with = + - @ tab CR), as the backend's csv_text_cell.
 */
export function csvTextCell(text: string): string {
  return FORMULA_START.has(text.charAt(0)) && !plainNumber(text) ? `'${text}` : text;
}

/** One value as the backend writes it: str() of the Python value the JSON came from. */
export function csvValue(value: CsvCell, kind: CsvKind): string {
  if (value === null) return "";
  if (typeof value === "boolean") return value ? "True" : "False";
  if (typeof value === "number") {
    if (kind === "float") return pythonFloatRepr(value);
    return Number.isInteger(value) ? value.toFixed(0) : pythonFloatRepr(value);
  }
  return csvTextCell(value);
}

function quote(field: string): string {
  return /[",\r\n]/.test(field) ? `"${field.replace(/"/g, '""')}"` : field;
}

export interface CsvColumn {
  name: string;
  kind: CsvKind;
}

export function toCsv(columns: readonly CsvColumn[], rows: readonly (readonly CsvCell[])[]): string {
  const lines = [columns.map((c) => quote(csvTextCell(c.name))).join(",")];
  for (const row of rows) {
    lines.push(columns.map((c, i) => quote(csvValue(row[i] ?? null, c.kind))).join(","));
  }
  return lines.join("\n") + "\n";
}

/** Parses CSV of this dialect back into string fields (for tests and round trips). */
export function parseCsv(text: string): string[][] {
  const out: string[][] = [];
  let row: string[] = [];
  let field = "";
  let inQuotes = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charAt(i);
    if (inQuotes) {
      if (ch === '"') {
        if (text.charAt(i + 1) === '"') {
          field += '"';
          i++;
        } else {
          inQuotes = false;
        }
      } else {
        field += ch;
      }
    } else if (ch === '"') {
      inQuotes = true;
    } else if (ch === ",") {
      row.push(field);
      field = "";
    } else if (ch === "\n") {
      row.push(field);
      out.push(row);
      row = [];
      field = "";
    } else if (ch !== "\r") {
      field += ch;
    }
  }
  if (field !== "" || row.length > 0) {
    row.push(field);
    out.push(row);
  }
  return out;
}
