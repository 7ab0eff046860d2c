// Builds src/index.ts into plugin/tbprof/static/ as an ES module exporting render().
//
// A JS entry, not an HTML one: TensorBoard's plugin frame imports "./index.js" itself and
// calls render(), so the entry keeps its exports (preserveEntrySignatures) under a fixed
// name. Lazy chunks go to assets/ with content hashes and are imported relative to index.js
// (base "./"), so the same files work inside TensorBoard (/data/plugin/tbprof/) and under
// `tbprof serve`. CSS is inlined into the JS (TensorBoard's CSP allows inline styles), so
// there is no stylesheet URL to resolve. (Library mode would skip whitespace minification.)
import { resolve } from "node:path";
import { defineConfig } from "vitest/config";

const outDir = process.env.TBPROF_OUT_DIR ?? resolve(import.meta.dirname, "../plugin/tbprof/static");

export default defineConfig({
  base: "./",
  publicDir: resolve(import.meta.dirname, "public"),
  // ECharts' ESM sources test process.env.NODE_ENV for dev-only warnings.
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  build: {
    outDir,
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    reportCompressedSize: false,
    minify: true,
    modulePreload: false,
    rolldownOptions: {
      input: resolve(import.meta.dirname, "src/index.ts"),
      preserveEntrySignatures: "exports-only",
      output: {
        format: "es",
        entryFileNames: "index.js",
        chunkFileNames: "assets/[name]-[hash].js",
        assetFileNames: "assets/[name]-[hash][extname]",
      },
    },
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
