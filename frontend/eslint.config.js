import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/**", "dist/**"] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/restrict-template-expressions": ["error", { allowNumber: true }],
      "@typescript-eslint/no-confusing-void-expression": "off",
      // fetch() lives only in src/data/ (docs/architecture.md): everything else goes through the API client.
      "no-restricted-globals": ["error", { name: "fetch", message: "use src/data/api.ts" }],
      // Profile text is data, never markup (issue #25): ECharts renders a tooltip formatter's
      // result as HTML, so every one goes through tooltipHtml(), whose callback can only return
      // SafeHtml built by the escaping `html` template (src/base/html.ts); nothing writes markup.
      "no-restricted-syntax": ["error",
        {
          selector: "Property[key.name='tooltip'] > ObjectExpression > Property[key.name='formatter']:not([value.callee.name='tooltipHtml'])",
          message: "wrap a tooltip formatter in tooltipHtml() from src/base/html.ts (it escapes profile text)",
        },
        {
          selector: "AssignmentExpression > MemberExpression[property.name=/^(innerHTML|outerHTML)$/]",
          message: "build DOM with h() (textContent); profile text is never markup",
        },
        {
          selector: "CallExpression[callee.property.name='insertAdjacentHTML'], CallExpression[callee.object.name='document'][callee.property.name=/^(write|writeln)$/]",
          message: "build DOM with h() (textContent); profile text is never markup",
        },
      ],
    },
  },
  {
    files: ["src/data/**/*.ts"],
    rules: { "no-restricted-globals": "off" },
  },
  {
    files: ["scripts/**/*.mjs", "eslint.config.js"],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      parserOptions: { projectService: false },
      globals: { process: "readonly", console: "readonly" },
    },
  },
);
