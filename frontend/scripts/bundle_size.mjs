// Prints the size of every built file and the gzip size of the bundle (what a browser
// downloads when the server gzips): run by `npm run build`.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { gzipSync } from "node:zlib";

const outDir = process.env.TBPROF_OUT_DIR ?? resolve(import.meta.dirname, "../../plugin/tbprof/static");

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
let raw = 0;
let gz = 0;
let initialGz = 0;
const rows = [];
for (const f of files(outDir).sort()) {
  const body = readFileSync(f);
  const zipped = gzipSync(body, { level: 9 }).length;
  raw += body.length;
  gz += zipped;
  const rel = relative(outDir, f);
  if (rel === "index.js") initialGz = zipped;
  rows.push(`  ${rel.padEnd(40)} ${kib(body.length).padStart(11)} ${kib(zipped).padStart(11)} gzip`);
}
console.log(`bundle in ${outDir}:`);
console.log(rows.join("\n"));
console.log(`bundle total: ${kib(raw)}, gzip ${kib(gz)} (index.js alone: gzip ${kib(initialGz)})`);
